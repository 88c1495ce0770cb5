// pyodide-webnn comparison bench, page side: probe the WebNN implementations this browser offers and run
// one case (a "wire case" made by web/bench/cases.py) on one of them, with timings.
// Loaded after /polyfill/webnn-polyfill.js; the bench drives it through Playwright's page.evaluate().
//
//   webnnBench.probe(variants, {timeoutMs})      -> {environment, implementations: [{impl, variant, state, ...}]}
//   webnnBench.run(wire, {impl, variant, repeat}) -> {status, stage, error, timings, outputs}
//   webnnBench.runClient(spec, {impl, options, repeat}) -> the same, for a model run through a real WebNN client
//     (onnxruntime-web or LiteRT.js, with web/pages/clients/clients.js) on impl 'wasm' | 'polyfill' | 'native'
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

  const ARRAYS = {
    float32: Float32Array,
    float16: typeof Float16Array === 'function' ? Float16Array : Uint16Array,
    int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
    int8: Int8Array, uint8: Uint8Array, int4: Uint8Array, uint4: Uint8Array,
  };

  const contexts = new Map();  // `${impl}|${variant.name}` -> Promise<MLContext>

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
    if (e && typeof e === 'object') return {name: String(e.name || e.constructor?.name || 'Error'), message: String(e.message ?? e)};
    return {name: 'Error', message: String(e)};
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
      contexts.set(key, p);
    }
    return contexts.get(key);
  }

  // ------------------------------------------------------------------------------------------ bytes

  function fromBase64(s) {
    if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(s);
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function toBase64(bytes) {
    if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }

  /** A fresh typed array of the operand's element type holding the base64 bytes. */
  function typedArray(dataType, b64) {
    const bytes = fromBase64(b64);
    const Ctor = ARRAYS[dataType];
    if (!Ctor) throw new TypeError(`bench: no typed array for data type '${dataType}'`);
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    return new Ctor(copy.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
  }

  /** An input's values: its bytes, or one value filling the tensor ({fill: {base64}}, WPT's large inputs). */
  function inputArray(inp) {
    if (!inp.fill) return typedArray(inp.dataType, inp.data);
    const one = typedArray(inp.dataType, inp.fill.base64);
    if (one.length !== 1) throw new TypeError(`bench: cannot fill a ${inp.dataType} tensor with one value`);
    return new ARRAYS[inp.dataType](inp.shape.reduce((a, b) => a * b, 1)).fill(one[0]);
  }

  function bytesOf(buffer) {
    return buffer instanceof ArrayBuffer ? new Uint8Array(buffer)
      : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  // ------------------------------------------------------------------------------------ arguments

  /** Decode a tagged argument: {$op}, {$ops}, {$big}, {$num}, arrays and dictionaries. */
  function resolve(v, operands) {
    if (Array.isArray(v)) return v.map((x) => resolve(x, operands));
    if (v === null || typeof v !== 'object') return v;
    if ('$op' in v) {
      if (!(v.$op in operands)) throw new TypeError(`bench: no operand named '${v.$op}'`);
      return operands[v.$op];
    }
    if ('$ops' in v) return v.$ops.map((name) => resolve({$op: name}, operands));
    if ('$big' in v) return BigInt(v.$big);
    if ('$num' in v) return Number(v.$num);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x, operands)]));
  }

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

  /** builder[name](...args); a TypeError for an operand type outside the context's opSupportLimits() is the
   *  implementation lacking the feature (a NotSupportedError, as WPT skips such cases), not a wrong result. */
  function call(ctx, builder, name, args) {
    try {
      return builder[name](...args);
    } catch (e) {
      const why = e && e.name === 'TypeError' ? outsideLimits(ctx, name, operandTypes(args)) : '';
      if (why) throw new DOMException(`${why}: ${e.message}`, 'NotSupportedError');
      throw e;
    }
  }

  function buildOperands(ctx, builder, wire) {
    const operands = {};
    for (const inp of wire.inputs) {
      const desc = {dataType: inp.dataType, shape: inp.shape};
      const kind = inp.constant ? 'constant' : 'input';
      try {
        operands[inp.name] = inp.constant ? builder.constant(desc, inputArray(inp)) : builder.input(inp.name, desc);
      } catch (e) {
        const why = e && e.name === 'TypeError' ? outsideLimits(ctx, kind, [inp.dataType]) : '';
        if (why) throw new DOMException(`${why}: ${e.message}`, 'NotSupportedError');
        throw e;
      }
    }
    for (const op of wire.operators) {
      if (typeof builder[op.name] !== 'function') {
        throw new DOMException(`MLGraphBuilder.${op.name} does not exist in this implementation`, 'NotSupportedError');
      }
      const args = resolve(op.args, operands);
      if (op.options) args.push(resolve(op.options, operands));
      const result = call(ctx, builder, op.name, args);
      if (Array.isArray(op.outputs)) op.outputs.forEach((name, i) => { operands[name] = result[i]; });
      else operands[op.outputs] = Array.isArray(result) ? result[0] : result;
    }
    return operands;
  }

  // ------------------------------------------------------------------------------------- execution

  async function tensorRunner(ctx, graph, wire, outDescs) {
    const feeds = wire.inputs.filter((i) => !i.constant);
    const inTensors = {};
    const inData = {};
    for (const i of feeds) {
      inTensors[i.name] = await ctx.createTensor({dataType: i.dataType, shape: i.shape, writable: true});
      inData[i.name] = inputArray(i);
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

  function computeRunner(ctx, graph, wire, outDescs) {
    // the legacy MLContext.compute(): transfers the buffers it is given, so each run gets fresh ones
    const feeds = wire.inputs.filter((i) => !i.constant);
    const once = async () => {
      const ins = Object.fromEntries(feeds.map((i) => [i.name, inputArray(i)]));
      const outs = Object.fromEntries(Object.entries(outDescs).map(([n, d]) => {
        const Ctor = ARRAYS[d.dataType];
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

  /** Build and run one wire case on one implementation; never throws: failures come back as data.
   *  An output larger than maxOutputBytes comes back as its first prefixElements values ({truncated: true}),
   *  as much as WPT compares of a large tensor. */
  async function run(wire, {impl, variant = {name: 'default', options: {}}, repeat = 3, timeoutMs = 60000,
                            maxOutputBytes = 16 << 20, prefixElements = 1000} = {}) {
    const timings = {};
    let stage = 'context';
    let graph = null;
    let runner = null;
    try {
      let t = performance.now();
      const ctx = await context(impl, variant, timeoutMs);
      timings.context_ms = round(performance.now() - t);
      stage = 'build';
      const {Builder} = api(impl);
      t = performance.now();
      const builder = new Builder(ctx);
      const operands = buildOperands(ctx, builder, wire);
      const outs = {};
      const outDescs = {};
      for (const name of wire.outputs) {
        if (!(name in operands)) throw new TypeError(`bench: output '${name}' is not produced by any operator`);
        outs[name] = operands[name];
        outDescs[name] = {dataType: operands[name].dataType, shape: [...operands[name].shape]};
      }
      timings.builder_ms = round(performance.now() - t);
      t = performance.now();
      graph = await withTimeout(builder.build(outs), timeoutMs, 'build()');
      timings.build_ms = round(performance.now() - t);
      stage = 'compute';
      runner = typeof ctx.dispatch === 'function' && typeof ctx.createTensor === 'function'
        ? await tensorRunner(ctx, graph, wire, outDescs) : computeRunner(ctx, graph, wire, outDescs);
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
          const keep = prefixElements * ARRAYS[d.dataType].BYTES_PER_ELEMENT;
          outputs[name] = {dataType: d.dataType, shape: d.shape, data: toBase64(bytes.subarray(0, keep)), truncated: true};
        } else {
          outputs[name] = {dataType: d.dataType, shape: d.shape, data: toBase64(bytes)};
        }
      }
      return {status: 'ok', api: runner.api, timings, outputs};
    } catch (e) {
      return {status: 'error', stage, error: errorInfo(e), timings};
    } finally {
      if (runner) runner.release();
      if (graph && typeof graph.destroy === 'function') { try { graph.destroy(); } catch (e) { /* ignore */ } }
    }
  }

  // ----------------------------------------------------------------------------- framework clients

  let clientsModule = null;
  const BACKENDS = {wasm: 'wasm', polyfill: 'webnn-polyfill', native: 'webnn-native'};

  /** A framework case (web/bench/frameworks.py: {kind: 'onnx' | 'litert', url, inputs, outputs}) through its
   *  client on one implementation; `options` are the context variant's (the client creates the context). */
  async function runClient(spec, {impl, options = {}, repeat = 3, timeoutMs = 60000} = {}) {
    const timings = {};
    let stage = 'context';
    try {
      clientsModule = clientsModule || import('/clients/clients.js');
      const clients = await withTimeout(clientsModule, timeoutMs, 'loading web/pages/clients/clients.js');
      const backend = BACKENDS[impl];
      if (!backend) throw new TypeError(`unknown implementation '${impl}'`);
      if (backend !== 'wasm') api(impl);  // the same NotFoundError as graph cases where there is no such WebNN
      const inputs = spec.inputs.map((i) => ({name: i.name, data: typedArray('float32', i.data), shape: i.shape}));
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
        outputs[o.name] = {dataType: 'float32', shape: o.dims, data: toBase64(bytesOf(o.data))};
      }
      const extra = {partitions: r.partitions ?? null, fullyAccelerated: r.fullyAccelerated ?? null};
      return {status: 'ok', api: spec.kind, timings, outputs, ...extra};
    } catch (e) {
      return {status: 'error', stage, error: errorInfo(e), timings};
    }
  }

  // A tiny graph every implementation should run: proves a context is usable, not just creatable.
  const SMOKE = {
    inputs: [{name: 'x', dataType: 'float32', shape: [4], constant: false, data: 'AACAvwAAAEAAAEDAAACAQA=='}],
    operators: [{name: 'relu', args: [{$op: 'x'}], outputs: 'y'}],
    outputs: ['y'],
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

  globalThis.webnnBench = Object.freeze({probe, run, runClient, version: 2});
})();
