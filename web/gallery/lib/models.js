// Where the gallery's models come from, as graph files ({program: the JSON, weights}, docs/graph-file.md):
//  - MediaPipe .tflite files (served by the dev server at /models/<name>.tflite) are converted in the page by
//    the TFLite loader running in Pyodide in a Web Worker (loader-worker.js);
//  - the digits network is a graph file written by scripts/train_digits.py.
// Programs are cached in memory and in Cache Storage, keyed by the model's sha256 and the core wheel's sha256
// (the loader lives in py_core), so a reload does not boot the loader again.

const CACHE_NAME = 'pyodide-webnn-programs-v1';
const POLYFILL = () => globalThis.webnnPolyfill;

export const MODELS = {
  selfie_segmentation: {tflite: '/models/selfie_segmentation.tflite'},
  face_detection_short_range: {tflite: '/models/face_detection_short_range.tflite'},
  face_landmark: {tflite: '/models/face_landmark.tflite'},
  pose_detection: {tflite: '/models/pose_detection.tflite'},
  pose_landmark_full: {tflite: '/models/pose_landmark_full.tflite'},
  hand_landmark_lite: {tflite: '/models/hand_landmark_lite.tflite'},
  digits: {program: '/gallery/models/digits.json', weights: '/gallery/models/digits.bin'},
};

const memory = new Map();
let loader = null;

function pyodideURL() {
  return POLYFILL()?.config?.pyodideURL ?? new URL('/pyodide/', location.href).href;
}

function coreManifestURL() {
  return POLYFILL()?.config?.coreManifestURL ?? new URL('/core/manifest.json', location.href).href;
}

/** GET url as an ArrayBuffer, reporting download progress. */
async function download(url, onProgress, what) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}: ${(await r.text()).slice(0, 200)}`);
  const total = Number(r.headers.get('content-length')) || 0;
  if (!r.body || !total) return r.arrayBuffer();
  const out = new Uint8Array(total);
  const reader = r.body.getReader();
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    out.set(value, loaded);
    loaded += value.length;
    onProgress({stage: 'download', message: `downloading ${what}`, loaded, total});
  }
  return out.buffer;
}

async function sha256(buffer) {
  if (!globalThis.crypto?.subtle) return null;  // not a secure context: no persistent cache
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', buffer));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

async function openCache() {
  try {
    return globalThis.caches ? await caches.open(CACHE_NAME) : null;
  } catch {
    return null;  // e.g. storage disabled: work without the persistent cache
  }
}

/** The loader worker (started on first use); call(type, data, transfer) -> promise of its reply. */
function getLoader(onProgress) {
  if (loader) {
    loader.onProgress = onProgress;
    return loader;
  }
  const worker = new Worker(new URL('./loader-worker.js', import.meta.url), {type: 'module'});
  const pending = new Map();
  let nextId = 1;
  const l = {worker, onProgress, pending};
  worker.onmessage = ({data}) => {
    if (data.type === 'progress') {
      l.onProgress({stage: data.stage, message: data.message});
      return;
    }
    const p = pending.get(data.id);
    if (!p) return;
    pending.delete(data.id);
    if (data.ok) p.resolve(data.result);
    else p.reject(Object.assign(new Error(data.error.message), {name: data.error.name}));
  };
  worker.onerror = (e) => {
    for (const p of pending.values()) p.reject(new Error(`loader worker failed: ${e.message || e}`));
    pending.clear();
    if (loader === l) loader = null;
  };
  l.call = (type, data = {}, transfer = []) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, {resolve, reject});
    worker.postMessage({id, type, ...data}, transfer);
  });
  l.ready = l.call('init', {pyodideURL: pyodideURL(), coreManifestURL: coreManifestURL()});
  l.ready.catch(() => { if (loader === l) loader = null; });
  loader = l;
  return l;
}

/** Stop the loader worker (frees its Pyodide); it starts again if another model needs converting. */
export function releaseLoader() {
  if (loader) loader.worker.terminate();
  loader = null;
}

async function fromTFLite(name, spec, onProgress) {
  const t0 = performance.now();
  const bytes = await download(spec.tflite, onProgress, `${name}.tflite`);
  const core = await (await fetch(coreManifestURL(), {cache: 'no-cache'})).json();
  const digest = await sha256(bytes);
  const key = new URL(`/__webnn-programs__/${name}/${digest?.slice(0, 16)}-${core.sha256.slice(0, 16)}`,
    location.href).href;
  const cache = digest ? await openCache() : null;
  if (cache) {
    const [j, w] = await Promise.all([cache.match(key + '.json'), cache.match(key + '.bin')]);
    if (j && w) {
      onProgress({stage: 'cached', message: `${name}: program from the browser cache`});
      return {program: await j.json(), weights: await w.arrayBuffer(), source: 'cache', modelBytes: bytes.byteLength,
        ms: Math.round(performance.now() - t0)};
    }
  }
  const l = getLoader(onProgress);
  onProgress({stage: 'loader', message: 'starting the TFLite loader (Pyodide in a worker)'});
  await l.ready;
  onProgress({stage: 'convert', message: `converting ${name}.tflite to WebNN calls`});
  const size = bytes.byteLength;
  const result = await l.call('record', {name: `${name}.tflite`, bytes}, [bytes]);
  const program = JSON.parse(result.json);
  if (cache) {
    try {
      await cache.put(key + '.json', new Response(result.json, {headers: {'content-type': 'application/json'}}));
      await cache.put(key + '.bin', new Response(result.weights.slice(0)));
    } catch { /* quota: the in-memory copy still serves this page */ }
  }
  return {program, weights: result.weights, source: 'converted', modelBytes: size, convertMs: result.ms,
    ms: Math.round(performance.now() - t0)};
}

async function fromProgramFile(name, spec, onProgress) {
  const t0 = performance.now();
  const [program, weights] = await Promise.all([
    fetch(spec.program, {cache: 'no-cache'}).then((r) => {
      if (!r.ok) throw new Error(`HTTP ${r.status} for ${spec.program} (run scripts/train_digits.py)`);
      return r.json();
    }),
    download(spec.weights, onProgress, `${name} weights`),
  ]);
  return {program, weights, source: 'file', modelBytes: weights.byteLength, ms: Math.round(performance.now() - t0)};
}

/**
 * The recorded program of model `name`: {name, program, weights, source, ms, ...}; source is 'converted' (by the
 * loader in this page), 'cache' (Cache Storage) or 'file' (a program file).
 * onProgress({stage, message, loaded?, total?}) reports downloads, the loader's boot and the conversion.
 * memory: false skips this page's in-memory copy (the persistent cache still applies).
 */
export function loadProgram(name, {onProgress = () => {}, memory: useMemory = true} = {}) {
  const spec = MODELS[name];
  if (!spec) return Promise.reject(new Error(`unknown model ${name}; known: ${Object.keys(MODELS).join(', ')}`));
  if (!useMemory) {
    return (spec.tflite ? fromTFLite(name, spec, onProgress) : fromProgramFile(name, spec, onProgress))
      .then((r) => ({name, ...r}));
  }
  if (!memory.has(name)) {
    const p = (spec.tflite ? fromTFLite(name, spec, onProgress) : fromProgramFile(name, spec, onProgress))
      .then((r) => ({name, ...r}));
    p.catch(() => memory.delete(name));
    memory.set(name, p);
  }
  return memory.get(name);
}
