// pyodide-webnn: one script tag gives a WebNN API (navigator.ml) whose graphs run on a Python/NumPy core
// in Pyodide.  A native navigator.ml stays in place; the polyfill is always at globalThis.webnnPolyfill.
// https://www.w3.org/TR/webnn/

import {readConfig} from './config.js';
import {MLContext} from './api/context.js';
import {MLGraph} from './api/graph.js';
import {MLGraphBuilder, OPERATOR_NAMES} from './api/graph-builder.js';
import {ML, makeML} from './api/ml.js';
import {MLOperand} from './api/operand.js';
import {MLTensor} from './api/tensor.js';
import {Runtime} from './runtime/runtime.js';
import {poolStats} from './runtime/pool.js';
import {engineThread, preloadEngine} from './runtime/spawn.js';
import {preloadPyodideScripts} from './boot/load-pyodide.js';
import {applyMode} from './api/compat.js';
import {routeGlobals} from './api/routing.js';
import {webgpuStats} from './api/webgpu.js';

const VERSION = '0.1.0';

/** Why WebNN cannot be offered here, or null: the API is [SecureContext] (https, or http on localhost /
 *  127.0.0.1), so an insecure page gets no navigator.ml and no interface names.
 *  https://www.w3.org/TR/webnn/#api-navigatorml */
function unavailableReason() {
  if (globalThis.isSecureContext !== false) return null;
  const where = globalThis.location ? ` (${globalThis.location.origin})` : '';
  return `WebNN is only available in secure contexts (https, or http on localhost/127.0.0.1); this page${where} `
    + 'is not one, so the polyfill did not install navigator.ml';
}

/** An ML whose every method rejects with `reason` (a SecurityError), for webnnPolyfill.ml where WebNN is refused. */
function refusingRuntime(reason) {
  const refuse = () => Promise.reject(new DOMException(reason, 'SecurityError'));
  return {boot: refuse, engine: refuse, timings: {}};
}

function install() {
  if (globalThis.webnnPolyfill) return globalThis.webnnPolyfill;
  const config = readConfig();
  const classes = {ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLTensor};
  applyMode(classes, config.strict);
  // the browser's own interface objects, before anything here replaces them
  const nativeClasses = Object.fromEntries(Object.keys(classes).map((n) => [n, globalThis[n]]));
  const events = new EventTarget();
  const refused = unavailableReason();
  // a classic service worker may import Pyodide's scripts only now, while this script runs (boot/load-pyodide.js)
  // and a classic scope without workers the engine script (runtime/spawn.js)
  const preload = refused ? [] : [preloadPyodideScripts(config.pyodideURL), preloadEngine(config.engineURL)];
  for (const why of preload.filter(Boolean)) {
    if (typeof console !== 'undefined') console.warn(`[webnn-polyfill] ${why}`);
  }
  const runtime = refused ? refusingRuntime(refused) : new Runtime(config, events);
  const ml = makeML(runtime);
  const nav = globalThis.navigator;
  const hadNative = !!(nav && nav.ml);
  const replace = config.install === 'replace';

  const api = {
    version: VERSION,
    ml,
    ...classes,
    operators: Object.freeze([...OPERATOR_NAMES]),
    native: hadNative ? nav.ml : null,
    installed: false,
    /** Where graphs run: 'worker' (a nested execution worker) or 'in-thread' (this scope's own thread, where
     *  it cannot start workers: a service worker, a shared worker in Chromium). */
    engine: engineThread(),
    strict: !!config.strict,
    unavailableReason: refused,
    config,
    /** Start loading Pyodide, NumPy and the core now, instead of at the first createContext(). */
    boot: () => runtime.boot().then(() => undefined),
    /** WebGPU interop counters: exports, returns (GPUBuffer.destroy()), their bytes, the copies they made. */
    webgpuStats,
    get bootTimings() { return {...runtime.timings}; },
    /** The workers' counters: live graphs and tensors, tensor bytes, memory (summed over the workers running),
     *  native (C kernels loaded: 1/0), blas, and `workers` (how many run: runtime/pool.js). */
    workerStats: () => poolStats(runtime),
    /** A model file turned into a graph file ({json, weights, ms}) by the execution worker's Pyodide (the
     *  gallery's TFLite loader, py_core/bridge/model_loader.py); `bytes` (an ArrayBuffer) is transferred.
     *  format: 'tflite'; wheels: the loader's pure-Python wheels [{url, sha256}], installed (checked) once.
     *  Starts only the worker: the page's builder Pyodide is not needed for this. */
    loadModel: async (bytes, {format = 'tflite', name = '', wheels = []} = {}) =>
      (await runtime.engine()).request('loadModel', {format, name, bytes, wheels}, [bytes]),
    addEventListener: events.addEventListener.bind(events),
    removeEventListener: events.removeEventListener.bind(events),
  };

  if (nav && !refused && (!hadNative || replace)) {
    // NavigatorML's [SameObject] attribute: read on anything but this global's navigator, TypeError
    Object.defineProperty(Object.getPrototypeOf(nav), 'ml', {
      get: Object.getOwnPropertyDescriptor({get ml() {
        if (this !== nav) throw new TypeError('Illegal invocation of Navigator.ml');
        return ml;
      }}, 'ml').get,
      configurable: true, enumerable: true,
    });
    if (Object.prototype.hasOwnProperty.call(nav, 'ml')) {
      Object.defineProperty(nav, 'ml', {value: ml, configurable: true, enumerable: true, writable: true});
    }
    for (const [name, cls] of Object.entries(classes)) {
      Object.defineProperty(globalThis, name, {value: cls, configurable: true, writable: true, enumerable: false});
    }
    api.installed = true;
  }
  routeGlobals(nativeClasses, classes, api.installed);
  Object.defineProperty(globalThis, 'webnnPolyfill', {value: Object.freeze(api), configurable: true});
  return api;
}

install();
