// Model files (the gallery's .tflite) turned into a recorded WebNN program in the engine's Pyodide
// (py_core/bridge/model_loader.py): the loader's pure-Python wheels (tflite, flatbuffers: [{url, sha256}],
// checked) are installed on first use.

import {takeBytes, unwrap} from './glue.js';

/** The engine's loadModel handler over `pyodide()` (the engine's Pyodide, once booted); `installWheel` from
 * boot/wheels.js. */
export function createModelLoader(pyodide, installWheel) {
  let modelLoader = null;
  return async function loadModel(msg) {
    if (msg.format !== 'tflite') throw {name: 'NotSupportedError', message: `no loader for ${msg.format} models`};
    const py = pyodide();
    if (!modelLoader) {
      const installing = Promise.all((msg.wheels || []).map((w) => installWheel(py, w.url, w.sha256)))
        .then(() => py.pyimport('py_core.bridge.model_loader'));
      modelLoader = installing;
      installing.catch(() => { if (modelLoader === installing) modelLoader = null; });
    }
    let loader;
    try {
      loader = await modelLoader;
    } catch (e) {
      // a wheel that failed its sha256 (SecurityError) or could not be fetched: this request fails, the engine
      // and its graphs carry on (an Error here would be taken for a failure of the runtime itself)
      throw {name: e && e.name === 'SecurityError' ? 'SecurityError' : 'NetworkError',
        message: `the model loader could not be installed: ${e && e.message ? e.message : e}`};
    }
    const t0 = performance.now();
    const reply = unwrap(loader.record_tflite(new Uint8Array(msg.bytes), msg.name));
    let json;
    let weights;
    try {
      json = reply.get(0);
      weights = takeBytes(reply.get(1));  // the one copy out of the WebAssembly heap
    } finally {
      reply.destroy();
    }
    return {value: {json, weights, ms: Math.round(performance.now() - t0)}, transfer: [weights]};
  };
}
