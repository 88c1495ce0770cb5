// pyodide-webnn comparison bench, page side: probe the WebNN implementations this browser offers and run
// one case (a graph file made by bench/cases/graphs.py, docs/graph-file.md) on one of them, with timings; the
// graph is built by the one replayer, /lib/graphfile.js.
// Loaded after /polyfill/webnn-polyfill.js; the bench drives it through Playwright's page.evaluate().
//
//   webnnBench.probe(variants, {timeoutMs})      -> {environment, implementations: [{impl, variant, state, ...}]}
//   webnnBench.release()                         -> destroys the contexts probe/run created
//   webnnBench.run(graph, {impl, variant, repeat}) -> {status, stage, error, timings, outputs}
//   webnnBench.runClient(spec, {impl, options, repeat}) -> the same, for a model run through a real WebNN client
//     (onnxruntime-web or LiteRT.js, with bench/pages/clients/clients.js) on impl 'wasm' | 'polyfill' | 'native'
//
// Tensor bytes cross as base64 so every data type (float16, int64, ...) survives exactly.
(() => {
  'use strict';

  const polyfill = globalThis.webnnPolyfill;
  // When the browser has its own navigator.ml the polyfill leaves the global names alone, so the global
  // MLGraphBuilder is the native one; when it has none, there is no native builder to find.
  const native = polyfill ? polyfill.native : (navigator.ml || null);
  const NativeBuilder = native && typeof globalThis.MLGraphBuilder === 'function' &&
    (!polyfill || globalThis.MLGraphBuilder !== polyfill.MLGraphBuilder) ? globalThis.MLGraphBuilder : null;

  let graphfile = null;  // the module /lib/graphfile.js, imported on first use
  const graphFile = () => (graphfile = graphfile || import('/lib/graphfile.js'));

  const contexts = new Map();  // `${impl}|${variant.name}` -> Promise<MLContext>
  // how long a failed run waits for its context's loss to settle before it reports the context as kept
  const LOSS_SETTLE_MS = 1000;
  const lost = new Map();  // the same keys -> the MLContextLostInfo message of a context that was lost

  function api(impl) {
    if (impl === 'polyfill') {
      if (!polyfill) throw new DOMException('the polyfill script did not load', 'NotFoundError');
      return {ml: polyfill.ml, Builder: polyfill.MLGraphBuilder};
    }
    if (impl === 'native') {
      if (!native) throw new DOMException('this browser has no navigator.ml', 'NotFoundError');
      if (!NativeBuilder) throw new DOMException('navigator.ml is present but MLGraphBuilder is not', 'NotFoundError');
      return {ml: native, Builder: NativeBuilder};
    }
    throw new TypeError(`unknown implementation '${impl}'`);
  }

  function errorInfo(e) {
    if (e && typeof e === 'object') {
      const info = {name: String(e.name || e.constructor?.name || 'Error'), message: String(e.message ?? e)};
      if (e.thrown) info.thrown = e.thrown;  // what the implementation threw, where the bench renamed it
      if (e.limits) info.limits = e.limits;
      return info;
    }
    return {name: 'Error', message: String(e)};
  }

  /** The message of the context's loss when it was lost by now, and then forgotten so the next run creates a
   *  fresh context; else null.  After a failure the loss may settle later than the rejection: wait for it up
   *  to `settleMs` (a bound on the wait, never on the implementation). */
  async function lostSince(key, settleMs = 0) {
    const pending = contexts.get(key);
    const ctx = pending ? await pending.catch(() => null) : null;
    const settle = new Promise((resolve) => setTimeout(resolve, settleMs));
    await (ctx && ctx.lost && settleMs ? Promise.race([ctx.lost, settle]) : settle);
    await new Promise((resolve) => setTimeout(resolve, 0));  // the lost map is set in a then() of ctx.lost
    if (!lost.has(key)) return null;
    const message = lost.get(key);
    lost.delete(key);
    contexts.delete(key);
    return message;
  }

  function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new DOMException(`${what} did not settle within ${ms} ms`, 'TimeoutError')), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  function context(impl, variant, timeoutMs) {
    const key = `${impl}|${variant.name}`;
    if (!contexts.has(key)) {
      const {ml} = api(impl);
      const p = withTimeout(Promise.resolve().then(() => ml.createContext(variant.options)), timeoutMs,
        `${impl} createContext(${JSON.stringify(variant.options)})`);
      p.catch(() => contexts.delete(key));  // a failure is reported, and tried again next time
      p.then((ctx) => ctx.lost && ctx.lost.then((info) => lost.set(key, String(info?.message ?? 'lost'))),
        () => {});
      contexts.set(key, p);
    }
    return contexts.get(key);
  }

  function bytesOf(buffer) {
    return buffer instanceof ArrayBuffer ? new Uint8Array(buffer)
      : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  // ------------------------------------------------------------------------------------ arguments

  /** The data types of the operands among an operator's arguments (options included). */
  function operandTypes(v, out = []) {
    if (Array.isArray(v)) v.forEach((x) => operandTypes(x, out));
    else if (v && typeof v === 'object') {
      if (typeof v.dataType === 'string' && Array.isArray(v.shape)) out.push(v.dataType);
      else if (Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => operandTypes(x, out));
    }
    return out;
  }

  /** Why the context's opSupportLimits() rules the call out (an operand type it does not list), or ''. */
  function outsideLimits(ctx, opName, types) {
    let limits;
    try { limits = ctx.opSupportLimits(); } catch (e) { return ''; }
    if (!limits || !(opName in limits)) return limits ? `opSupportLimits() has no '${opName}'` : '';
    const listed = new Set();
    const entry = limits[opName] || {};
    // input/constant/output: {dataTypes, rankRange}; operators: one such entry per parameter and output
    for (const v of Array.isArray(entry.dataTypes) ? [entry] : Object.values(entry)) {
      if (v && Array.isArray(v.dataTypes)) v.dataTypes.forEach((t) => listed.add(t));
    }
    if (!listed.size) return '';
    const bad = types.find((t) => !listed.has(t));
    return bad ? `opSupportLimits().${opName} lists no ${bad} operand` : '';
  }

  /** A TypeError for an operand type outside the context's opSupportLimits() is the implementation lacking
   *  the feature (a NotSupportedError, as WPT skips such cases), not a wrong result; other errors pass as thrown. */
  function limitsError(ctx) {
    return (e, step) => {
      if (!e || e.name !== 'TypeError') return e;
      const why = step.kind === 'operation' ? outsideLimits(ctx, step.op, operandTypes(step.args || []))
        : outsideLimits(ctx, step.kind, [step.dataType]);
      if (!why) {
        if (step.kind === 'operation') {  // the operator's limits, for a judge that knows its parameter names
          try { e.limits = {op: step.op, entry: ctx.opSupportLimits()[step.op] ?? null}; } catch (x) { /* none */ }
        }
        return e;
      }
      const renamed = new DOMException(`${why}: ${e.message}`, 'NotSupportedError');
      renamed.thrown = e.name;
      return renamed;
    };
  }

  // ------------------------------------------------------------------------------------- execution

  function feedsOf(gf, file) {
    return Object.entries(file.inputs).map(([name, e]) => ({name, dataType: e.dataType, shape: e.shape,
      values: () => gf.tensorData(e, null, name)}));
  }

  async function tensorRunner(gf, ctx, graph, file, outDescs) {
    const feeds = feedsOf(gf, file);
    const inTensors = {};
    const inData = {};
    for (const i of feeds) {
      inTensors[i.name] = await ctx.createTensor({dataType: i.dataType, shape: i.shape, writable: true});
      inData[i.name] = i.values();
    }
    const outTensors = {};
    for (const [name, d] of Object.entries(outDescs)) {
      outTensors[name] = await ctx.createTensor({dataType: d.dataType, shape: d.shape, readable: true});
    }
    const once = async () => {
      for (const i of feeds) ctx.writeTensor(inTensors[i.name], inData[i.name]);
      ctx.dispatch(graph, inTensors, outTensors);
      const names = Object.keys(outTensors);
      const buffers = await Promise.all(names.map((n) => ctx.readTensor(outTensors[n])));
      return Object.fromEntries(names.map((n, k) => [n, buffers[k]]));
    };
    const release = () => {
      for (const t of [...Object.values(inTensors), ...Object.values(outTensors)]) {
        try { t.destroy(); } catch (e) { /* already gone */ }
      }
    };
    return {once, release, api: 'dispatch'};
  }

  function computeRunner(gf, ctx, graph, file, outDescs) {
    // the legacy MLContext.compute(): transfers the buffers it is given, so each run gets fresh ones
    const feeds = feedsOf(gf, file);
    const once = async () => {
      const ins = Object.fromEntries(feeds.map((i) => [i.name, i.values()]));
      const outs = Object.fromEntries(Object.entries(outDescs).map(([n, d]) => {
        const Ctor = gf.TYPED_ARRAYS[d.dataType];
        return [n, new Ctor(d.shape.reduce((a, b) => a * b, 1))];
      }));
      const r = await ctx.compute(graph, ins, outs);
      return r.outputs;
    };
    return {once, release: () => {}, api: 'compute'};
  }

  function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
  }

  const round = (x) => Math.round(x * 1000) / 1000;

  /** Build and run one graph file (inline data, no side weights) on one implementation; never throws:
   *  failures come back as data.
   *  An output larger than maxOutputBytes comes back as its first prefixElements values ({truncated: true}),
   *  as much as WPT compares of a large tensor. */
  async function run(file, {impl, variant = {name: 'default', options: {}}, repeat = 3, timeoutMs = 60000,
                            maxOutputBytes = 16 << 20, prefixElements = 1000} = {}) {
    const timings = {};
    let stage = 'context';
    let graph = null;
    let runner = null;
    try {
      const gf = await graphFile();
      let t = performance.now();
      const ctx = await context(impl, variant, timeoutMs);
      timings.context_ms = round(performance.now() - t);
      stage = 'builder';  // the MLGraphBuilder calls; 'build' is build() of a graph the builder accepted
      const {Builder} = api(impl);
      t = performance.now();
      const builder = new Builder(ctx);
      const {outputs: outs} = gf.replay(file, null, builder,
        {onError: limitsError(ctx), otherBuilder: () => new Builder(ctx)});
      const outDescs = {};
      for (const [name, o] of Object.entries(outs)) outDescs[name] = {dataType: o.dataType, shape: [...o.shape]};
      timings.builder_ms = round(performance.now() - t);
      stage = 'build';
      t = performance.now();
      graph = await withTimeout(builder.build(outs), timeoutMs, 'build()');
      timings.build_ms = round(performance.now() - t);
      stage = 'compute';
      runner = typeof ctx.dispatch === 'function' && typeof ctx.createTensor === 'function'
        ? await tensorRunner(gf, ctx, graph, file, outDescs) : computeRunner(gf, ctx, graph, file, outDescs);
      t = performance.now();
      const first = await withTimeout(runner.once(), timeoutMs, 'the first run');
      timings.first_ms = round(performance.now() - t);
      const samples = [];
      for (let i = 0; i < repeat; i++) {
        t = performance.now();
        await withTimeout(runner.once(), timeoutMs, 'a timed run');
        samples.push(round(performance.now() - t));
      }
      timings.samples_ms = samples;
      timings.median_ms = samples.length ? round(median(samples)) : timings.first_ms;
      const outputs = {};
      for (const [name, d] of Object.entries(outDescs)) {
        const bytes = bytesOf(first[name]);
        if (bytes.byteLength > maxOutputBytes) {
          const keep = prefixElements * gf.TYPED_ARRAYS[d.dataType].BYTES_PER_ELEMENT;
          outputs[name] = {dataType: d.dataType, shape: d.shape, data: gf.toBase64(bytes.subarray(0, keep)), truncated: true};
        } else {
          outputs[name] = {dataType: d.dataType, shape: d.shape, data: gf.toBase64(bytes)};
        }
      }
      const contextLost = await lostSince(`${impl}|${variant.name}`);
      return {status: 'ok', api: runner.api, timings, outputs, ...(contextLost ? {contextLost} : {})};
    } catch (e) {
      const key = `${impl}|${variant.name}`;
      if (e && e.name === 'TimeoutError') contexts.delete(key);  // a hung context is not reused
      // an error a live context gives for bad input needs no wait; any other may come with a loss
      const settle = e && ['TypeError', 'NotSupportedError', 'DataError'].includes(e.name) ? 0 : LOSS_SETTLE_MS;
      const contextLost = await lostSince(key, settle);
      return {status: 'error', stage, error: errorInfo(e), timings, ...(contextLost ? {contextLost} : {})};
    } finally {
      if (runner) runner.release();
      if (graph && typeof graph.destroy === 'function') { try { graph.destroy(); } catch (e) { /* ignore */ } }
    }
  }

  // ----------------------------------------------------------------------------- framework clients

  let clientsModule = null;
  const BACKENDS = {wasm: 'wasm', polyfill: 'webnn-polyfill', native: 'webnn-native'};

  /** A framework case (bench/cases/frameworks.py: {kind: 'onnx' | 'litert', url, inputs, outputs}) through its
   *  client on one implementation; `options` are the context variant's (the client creates the context). */
  async function runClient(spec, {impl, options = {}, repeat = 3, timeoutMs = 60000} = {}) {
    const timings = {};
    let stage = 'context';
    try {
      clientsModule = clientsModule || import('/clients/clients.js');
      const clients = await withTimeout(clientsModule, timeoutMs, 'loading bench/pages/clients/clients.js');
      const backend = BACKENDS[impl];
      if (!backend) throw new TypeError(`unknown implementation '${impl}'`);
      if (backend !== 'wasm') api(impl);  // the same NotFoundError as graph cases where there is no such WebNN
      const gf = await withTimeout(graphFile(), timeoutMs, 'loading /lib/graphfile.js');
      const inputs = spec.inputs.map((i) => ({name: i.name, shape: i.shape,
        data: gf.tensorData({dataType: 'float32', shape: i.shape, data: {base64: i.data}}, null, i.name)}));
      const contextOptions = backend === 'wasm' ? null : options;
      stage = 'compute';
      const pending = spec.kind === 'onnx'
        ? clients.runOrt({model: spec.url, backend, iterations: repeat, contextOptions: contextOptions || {},
          inputs: Object.fromEntries(inputs.map((i) => [i.name, {data: i.data, shape: i.shape}]))})
        : clients.runLiteRt({model: spec.url, backend, iterations: repeat, contextOptions,
          inputs: inputs.map((i) => ({data: i.data, shape: i.shape}))});
      const r = await withTimeout(pending, timeoutMs * 2, `${spec.kind} on ${backend}`);
      timings.build_ms = round(r.compileMs);
      timings.first_ms = round(r.firstMs);
      timings.samples_ms = r.ms.map(round);
      timings.median_ms = r.ms.length ? round(median(r.ms)) : timings.first_ms;
      const outputs = {};
      for (const o of r.outputs) {
        outputs[o.name] = {dataType: 'float32', shape: o.dims, data: gf.toBase64(bytesOf(o.data))};
      }
      const extra = {partitions: r.partitions ?? null, fullyAccelerated: r.fullyAccelerated ?? null};
      return {status: 'ok', api: spec.kind, timings, outputs, ...extra};
    } catch (e) {
      return {status: 'error', stage, error: errorInfo(e), timings};
    }
  }

  // A tiny graph every implementation should run: proves a context is usable, not just creatable.
  const SMOKE = {
    format: 'webnn-graph', version: 1, name: 'smoke',
    inputs: {x: {dataType: 'float32', shape: [4], data: {base64: 'AACAvwAAAEAAAEDAAACAQA=='}}},
    constants: {},
    operations: [{op: 'relu', args: [{$op: 'x'}], options: {}, outputs: ['y']}],
    outputs: {y: 'y'},
  };

  /** For each implementation and context variant: absent, present but unusable (with the browser's own
   *  error), or usable (a context was created and ran a one-op graph). */
  async function probe(variants, {timeoutMs = 120000} = {}) {
    const environment = {
      userAgent: navigator.userAgent, isSecureContext, crossOriginIsolated: globalThis.crossOriginIsolated === true,
      hardwareConcurrency: navigator.hardwareConcurrency, polyfill: polyfill ? polyfill.version : null,
      nativePresent: !!native, nativeBuilder: !!NativeBuilder, float16Array: typeof Float16Array === 'function',
    };
    const implementations = [];
    for (const impl of ['polyfill', 'native']) {
      for (const variant of variants) {
        const row = {impl, variant: variant.name, options: variant.options};
        if (impl === 'native' && !native) {
          row.state = 'absent';
          row.error = {name: 'NotFoundError', message: 'navigator.ml is not defined in this browser'};
          implementations.push(row);
          continue;
        }
        const t = performance.now();
        const r = await run(SMOKE, {impl, variant, repeat: 0, timeoutMs});
        row.ms = round(performance.now() - t);
        if (r.status === 'ok') {
          const ctx = await context(impl, variant, timeoutMs);
          row.state = 'usable';
          row.accelerated = typeof ctx.accelerated === 'boolean' ? ctx.accelerated : null;
          try { row.opSupportLimits = Object.keys(ctx.opSupportLimits()).length; } catch (e) { row.opSupportLimits = null; }
        } else {
          row.state = 'unusable';
          row.stage = r.stage;
          row.error = r.error;
        }
        implementations.push(row);
      }
    }
    if (polyfill) environment.polyfillBoot = polyfill.bootTimings;
    return {environment, implementations};
  }

  /** Destroy every context the probe or a run created (a later run creates its own again): a page that then
   *  makes contexts of its own (the /perf/ page) keeps the polyfill's one worker instead of a second one. */
  async function release() {
    const held = [...contexts.values()];
    contexts.clear();
    for (const p of held) {
      try { (await p).destroy(); } catch (e) { /* never created, or already gone */ }
    }
  }

  globalThis.webnnBench = Object.freeze({probe, run, runClient, release, version: 2});
})();
