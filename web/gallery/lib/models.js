// Where the gallery's models come from, as graph files ({program: the JSON, weights}, docs/graph-file.md):
//  - MediaPipe .tflite files (served by the dev server at /models/<name>.tflite) are converted by
//    the TFLite loader running in the polyfill's execution worker (webnnPolyfill.loadModel: the Pyodide that
//    runs graphs, not one of its own);
//  - the digits network is a graph file written by scripts/train_digits.py.
// Programs are cached in memory and in Cache Storage, keyed by the model's sha256 and the core wheel's sha256
// (the loader lives in py_core), so a reload does not convert again.

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

/** The TFLite loader's pure-Python wheels, [{url, sha256}], from the asset manifest scripts/fetch_assets.py writes. */
async function loaderWheels() {
  const base = pyodideURL();
  const r = await fetch(base + 'manifest.json', {cache: 'no-cache'});
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${base}manifest.json`);
  const files = (await r.json()).files || {};
  const wheels = Object.keys(files).filter((n) => /^(tflite|flatbuffers)-.*\.whl$/.test(n))
    .map((n) => ({url: base + n, sha256: files[n].sha256}));
  if (wheels.length !== 2) throw new Error('the tflite/flatbuffers wheels are missing: run scripts/fetch_assets.py');
  return wheels;
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
  const polyfill = POLYFILL();
  if (!polyfill) throw new Error('the TFLite loader runs in the polyfill\'s worker: /polyfill/webnn-polyfill.js did not load');
  onProgress({stage: 'loader', message: 'starting the TFLite loader (the polyfill\'s execution worker)'});
  const size = bytes.byteLength;
  const wheels = await loaderWheels();
  onProgress({stage: 'convert', message: `converting ${name}.tflite to WebNN calls`});
  const result = await polyfill.loadModel(bytes, {format: 'tflite', name: `${name}.tflite`, wheels});
  onProgress({stage: 'loader-ready', message: 'TFLite loader ready in the polyfill\'s execution worker'});
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
