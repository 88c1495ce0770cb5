// Real WebNN clients, run unchanged on a chosen backend: onnxruntime-web (its WebNN execution provider) and
// LiteRT.js (its 'webnn' accelerator, the TFLite WebNN delegate).  Used by the browser tests
// (tests/browser/test_clients.py) and meant for the bench: import it from a page that loads the polyfill and
// maps the bare specifier LiteRT.js imports (see index.html):
//   <script type="importmap">{"imports": {"@litertjs/wasm-utils": "/vendor/litert-wasm-utils/index.js"}}</script>
//
// Backends: 'wasm' (the client's own WebAssembly path: the reference), 'webnn-polyfill' (this polyfill, even
// where the browser has its own navigator.ml), 'webnn-native' (the browser's navigator.ml).
// Every run returns {outputs: [{name, dims, data: Float32Array}], compileMs, firstMs, ms: [per iteration]}, and
// for ORT on WebNN `partitions` (subgraphs its WebNN EP took), for LiteRT.js `fullyAccelerated`.

export const BACKENDS = ['wasm', 'webnn-polyfill', 'webnn-native'];

const now = () => performance.now();

/** The ML object behind a WebNN backend, or null when this page has none. */
export function mlFor(backend) {
  const poly = globalThis.webnnPolyfill;
  if (backend === 'webnn-polyfill') return poly ? poly.ml : null;
  if (backend === 'webnn-native') {
    if (poly) return poly.native;
    return (typeof navigator !== 'undefined' && navigator.ml) || null;
  }
  throw new TypeError(`not a WebNN backend: ${backend}`);
}

/** Whether `backend` can run here: {ok, reason}.  Native is usable only if createContext() succeeds. */
export async function probe(backend) {
  if (backend === 'wasm') return {ok: true, reason: ''};
  const ml = mlFor(backend);
  if (!ml) return {ok: false, reason: `${backend}: this browser has no navigator.ml`};
  try {
    const ctx = await ml.createContext();
    if (typeof ctx.destroy === 'function') ctx.destroy();
    return {ok: true, reason: ''};
  } catch (e) {
    return {ok: false, reason: `${backend}: createContext() failed: ${e && e.name}: ${e && e.message}`};
  }
}

async function bytesOf(model) {
  if (model instanceof Uint8Array) return model;
  const r = await fetch(model);
  if (!r.ok) throw new Error(`${model}: HTTP ${r.status} ${await r.text()}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** A deterministic input in [lo, hi): a smooth pattern with some fine detail, the same in every browser. */
export function patternInput(shape, lo = 0, hi = 1) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = 0.5 + 0.35 * Math.sin(i * 0.0137) + 0.15 * Math.sin(i * 0.731);
    data[i] = lo + (hi - lo) * Math.min(Math.max(u, 0), 0.999);
  }
  return data;
}

async function timed(iterations, runOnce) {
  let t = now();
  const first = await runOnce();
  const firstMs = now() - t;
  const ms = [];
  for (let i = 0; i < iterations; i++) {
    t = now();
    await runOnce();
    ms.push(now() - t);
  }
  return {first, firstMs, ms};
}

// ------------------------------------------------------------------------------------------ onnxruntime-web

let ortLoading = null;

/** onnxruntime-web's ES module, its .wasm/.mjs files served from /vendor/ort/, one WASM thread. */
export function loadOrt() {
  if (!ortLoading) {
    hookConsole();
    ortLoading = import('/vendor/ort/ort.mjs').then((mod) => {
      const ort = mod.default || mod;
      ort.env.wasm.wasmPaths = new URL('/vendor/ort/', location.href).href;
      ort.env.wasm.numThreads = 1;
      // info level carries the WebNN EP's partition count (see ortPartitions); capturingConsole drops the rest
      ort.env.logLevel = 'info';
      return ort;
    });
  }
  return ortLoading;
}

// ORT's wasm prints through the console functions it finds when it initialises, so the hook that collects its
// lines is installed once, before that, and reads the current sink.
let consoleSink = null;
let consoleHooked = false;

/** Install the console hook capturingConsole reads (once; before an onnxruntime-web initialises). */
export function hookConsole() {
  if (consoleHooked) return;
  consoleHooked = true;
  for (const k of ['log', 'warn', 'error']) {
    const original = console[k];
    console[k] = (...args) => {
      const line = args.map(String).join(' ');
      if (consoleSink) consoleSink.push(line);
      if (!line.includes('[I:onnxruntime')) original.apply(console, args);  // ORT's info lines stay out
    };
  }
}

/** `fn()`'s value and the console lines printed meanwhile. */
export async function capturingConsole(fn) {
  const lines = [];
  consoleSink = lines;
  try {
    return {value: await fn(), lines};
  } finally {
    consoleSink = null;
  }
}

/** The WebNN EP's own summary: {partitions, nodes, supported} ("number of partitions supported by WebNN"), or
 *  null when it printed none (the wasm backend). */
export function ortPartitions(lines) {
  for (const line of lines) {
    const m = /partitions supported by WebNN: (\d+) number of nodes in the graph: (\d+) number of nodes supported by WebNN: (\d+)/.exec(line);
    if (m) return {partitions: Number(m[1]), nodes: Number(m[2]), supported: Number(m[3])};
  }
  return null;
}

/**
 * An onnxruntime-web session of an ONNX model on `backend`.  For WebNN it gets an MLContext of that backend in
 * its session options, as an application would: `{name: 'webnn', context}`.  Returns {ort, session, compileMs,
 * partitions, feeds(inputs), close()}; inputs: {name: {data: Float32Array, shape}}.
 */
export async function openOrt({model, backend, contextOptions = {}}) {
  const ort = await loadOrt();
  const bytes = await bytesOf(model);
  let context = null;
  let providers = ['wasm'];
  if (backend !== 'wasm') {
    const ml = mlFor(backend);
    if (!ml) throw new Error(`${backend}: no navigator.ml here`);
    context = await ml.createContext(contextOptions);
    providers = [{name: 'webnn', context}];
  }
  const t0 = now();
  let created;
  try {
    created = await capturingConsole(
      () => ort.InferenceSession.create(bytes, {executionProviders: providers, logSeverityLevel: 1}));
  } catch (e) {
    if (context) context.destroy();
    throw e;
  }
  const session = created.value;
  return {
    ort, session, compileMs: now() - t0, partitions: ortPartitions(created.lines),
    feeds: (inputs) => Object.fromEntries(Object.entries(inputs).map(
      ([name, v]) => [name, new ort.Tensor('float32', v.data, v.shape)])),
    async close() {
      await session.release();
      if (context) context.destroy();
    },
  };
}

/** Run an ONNX model through onnxruntime-web on `backend` (openOrt): its outputs, the first run's and
 *  `iterations` more runs' ms. */
export async function runOrt({model, backend, inputs, iterations = 0, contextOptions = {}}) {
  const opened = await openOrt({model, backend, contextOptions});
  try {
    const feeds = opened.feeds(inputs);
    const {first, firstMs, ms} = await timed(iterations, () => opened.session.run(feeds));
    const outputs = opened.session.outputNames.map((name) => ({
      name, dims: [...first[name].dims], data: Float32Array.from(first[name].data),
    }));
    return {outputs, compileMs: opened.compileMs, firstMs, ms, partitions: opened.partitions};
  } finally {
    await opened.close();
  }
}

// ------------------------------------------------------------------------------------------------ LiteRT.js

let litertLoading = null;

/** Whether this browser has JSPI (WebAssembly.Suspending): LiteRT.js's WebNN delegate lives in its JSPI build. */
export const hasJspi = () => typeof WebAssembly !== 'undefined' && 'Suspending' in WebAssembly;

/** LiteRT.js loaded once per page: its JSPI build where the browser has JSPI, else the plain WASM build. */
export function loadLiteRt() {
  if (!litertLoading) {
    litertLoading = import('/vendor/litert/dist/index.js').then(async (lrt) => {
      await lrt.loadLiteRt(new URL('/vendor/litert/wasm/', location.href).href, hasJspi() ? {jspi: true} : {});
      return lrt;
    });
  }
  return litertLoading;
}

/**
 * `fn()` with navigator.ml pointing at `ml`, restored afterwards.  LiteRT.js takes no MLContext: its WebNN
 * delegate calls navigator.ml.createContext() while compiling, so this is how a page picks the implementation.
 */
async function withNavigatorML(ml, fn) {
  const own = Object.getOwnPropertyDescriptor(navigator, 'ml');
  if (navigator.ml === ml) return fn();
  Object.defineProperty(navigator, 'ml', {value: ml, configurable: true, writable: true});
  try {
    return await fn();
  } finally {
    if (own) Object.defineProperty(navigator, 'ml', own);
    else delete navigator.ml;
  }
}

/**
 * Run a .tflite model through LiteRT.js on `backend` ('wasm', or a WebNN backend through the 'webnn'
 * accelerator).  inputs: [{data: Float32Array, shape}] in the model's input order.  Throws an Error whose
 * name is 'NotSupportedError' where the browser has no JSPI (the WebNN delegate needs it).
 */
export async function runLiteRt({model, backend, inputs, iterations = 0, contextOptions = null}) {
  const lrt = await loadLiteRt();
  if (backend !== 'wasm' && !hasJspi()) {
    throw new DOMException('LiteRT.js runs its WebNN delegate only in its JSPI build, and this browser has no '
      + 'JSPI (WebAssembly.Suspending)', 'NotSupportedError');
  }
  const bytes = await bytesOf(model);
  const t0 = now();
  const compile = () => lrt.loadAndCompile(bytes, {accelerator: backend === 'wasm' ? 'wasm' : 'webnn'});
  // contextOptions (the bench's context variants): the delegate's own createContext() call gets them merged in
  const ml = backend === 'wasm' ? null : mlFor(backend);
  const seen = ml && contextOptions ? {createContext: (o) => ml.createContext({...(o || {}), ...contextOptions})} : ml;
  const compiled = backend === 'wasm' ? await compile() : await withNavigatorML(seen, compile);
  const compileMs = now() - t0;
  const details = compiled.getOutputDetails();
  try {
    const runOnce = async () => {
      const tensors = inputs.map((x) => new lrt.Tensor(x.data, x.shape));
      try {
        const outs = await compiled.run(tensors);
        const data = [];
        for (const t of outs) {
          data.push(Float32Array.from(await t.data()));
          t.delete();
        }
        return data;
      } finally {
        for (const t of tensors) t.delete();
      }
    };
    const {first, firstMs, ms} = await timed(iterations, runOnce);
    const outputs = first.map((data, i) => ({name: details[i].name, dims: [...details[i].shape], data}));
    return {outputs, compileMs, firstMs, ms, fullyAccelerated: compiled.isFullyAccelerated};
  } finally {
    compiled.delete();
  }
}

// ----------------------------------------------------------------------------------------- for test drivers

/** base64 of a typed array's bytes (Playwright passes strings faster than long arrays). */
export function toBase64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** A run's result with the output data as base64 float32, for a test driver outside the page. */
export function serialize(result) {
  return {...result, outputs: result.outputs.map((o) => ({...o, data: toBase64(o.data)}))};
}
