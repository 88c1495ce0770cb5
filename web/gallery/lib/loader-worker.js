// The gallery's model loader: a module Web Worker running Pyodide with NumPy, py_core and the pure-Python
// `tflite` + `flatbuffers` wheels.  It turns a .tflite file into a graph file (py_core.loaders.recording,
// docs/graph-file.md) that the page replays against any MLContext (/lib/graphfile.js).
//
// Messages in:  {id, type: 'init', pyodideURL, coreManifestURL}
//               {id, type: 'record', name, bytes: ArrayBuffer (transferred)}
// Messages out: {type: 'progress', stage, message}
//               {id, ok: true, result} | {id, ok: false, error: {name, message}}
//  'record' answers {json: string, weights: ArrayBuffer (transferred), ms}.

let py = null;
let booting = null;

const progress = (stage, message) => self.postMessage({type: 'progress', stage, message});

async function fetchJSON(url) {
  const r = await fetch(url, {cache: 'no-cache'});
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
  return r.json();
}

async function boot({pyodideURL, coreManifestURL}) {
  const t0 = performance.now();
  const {loadPyodide} = await import(pyodideURL + 'pyodide.mjs');
  const pyodide = await loadPyodide({indexURL: pyodideURL, stdout: () => {}, stderr: () => {}});
  progress('loader-runtime', 'Pyodide started in the loader worker');
  // fetch_assets.py records the pure wheels it fetched (tflite, flatbuffers) in the asset manifest
  const assets = await fetchJSON(pyodideURL + 'manifest.json');
  const pure = Object.keys(assets.files || {}).filter((n) => /^(tflite|flatbuffers)-.*\.whl$/.test(n));
  if (pure.length !== 2) throw new Error('the tflite/flatbuffers wheels are missing: run scripts/fetch_assets.py');
  await pyodide.loadPackage(['numpy', ...pure.map((n) => pyodideURL + n)], {messageCallback: () => {}});
  progress('loader-packages', 'NumPy and tflite loaded');
  // The server rebuilds the core wheel when py_core changes: a stale URL 404s, so re-read and retry once.
  for (let attempt = 0; ; attempt++) {
    const manifest = await fetchJSON(coreManifestURL);
    try {
      await pyodide.loadPackage(new URL(manifest.wheel, coreManifestURL).href, {messageCallback: () => {}});
      break;
    } catch (e) {
      if (attempt >= 2) throw e;
    }
  }
  pyodide.runPython(`
from py_core.loaders.recording import record_tflite

def _record(js_bytes, name):
    program = record_tflite(js_bytes.to_bytes(), name)
    return program.dumps(), program.weights
`);
  progress('loader-core', `TFLite loader ready (${Math.round(performance.now() - t0)} ms)`);
  return pyodide;
}

let recordFn = null;

function record(name, bytes) {
  const t0 = performance.now();
  recordFn ??= py.globals.get('_record');
  const reply = recordFn(new Uint8Array(bytes), name);
  let json;
  let weights;
  let proxy;
  let buffer;
  try {
    json = reply.get(0);
    proxy = reply.get(1);
    buffer = proxy.getBuffer('u8');
    weights = buffer.data.slice().buffer;  // the one copy out of the WebAssembly heap
  } finally {
    buffer?.release();
    proxy?.destroy();
    reply.destroy();
  }
  return {json, weights, ms: Math.round(performance.now() - t0)};
}

self.onmessage = async ({data}) => {
  const {id, type} = data;
  try {
    if (type === 'init') {
      booting ??= boot(data);
      py = await booting;
      self.postMessage({id, ok: true, result: null});
    } else if (type === 'record') {
      if (!py) throw new Error('the loader is not initialised');
      const result = record(data.name, data.bytes);
      self.postMessage({id, ok: true, result}, [result.weights]);
    } else {
      throw new Error(`unknown message type ${type}`);
    }
  } catch (e) {
    booting = type === 'init' ? null : booting;
    self.postMessage({id, ok: false, error: {name: e?.name || 'Error', message: String(e?.message || e)}});
  }
};
