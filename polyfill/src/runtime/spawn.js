// Starting the execution engine from wherever the polyfill was loaded: a nested module worker where the
// scope has `Worker` (a page, a dedicated worker in Chromium and WebKit), else the engine in this thread (a service
// worker; a shared worker in Chromium and WebKit, which have no nested workers there; any worker in Firefox:
// engineThread says why).
//
// `new Worker(url)` refuses a script on another origin (a CDN), whatever its CORS headers. A module worker
// started from a blob URL has the page's origin, and its one line imports the real worker script by its
// absolute URL, as a CORS module load: so the worker runs from any static host that sends
// `Access-Control-Allow-Origin`. Same-origin scripts are started directly (no blob: a page whose CSP has no
// `worker-src blob:` still works when it serves the polyfill itself).
//
// The in-thread engine is not in this bundle: it comes from the engine script (webnn-engine.js, config
// engineURL), loaded only in a scope that needs it. A classic scope imports it while the polyfill's script runs
// (preloadEngine, called by index.js: a classic service worker may import scripts only then); a module scope
// imports it when the first engine starts (a module service worker refuses import(): it imports the engine
// script statically itself, as it does Pyodide's scripts).

import * as boot from '../boot/for-engine.js';
import {inFirefox, inServiceWorker} from '../boot/load-pyodide.js';
import {switchesOf} from '../switches.js';

function sameOrigin(url) {
  try {
    return typeof location !== 'undefined' && new URL(url).origin === new URL(location.href).origin;
  } catch (e) {
    return false;
  }
}

/** A module Worker running the worker script at `url` (absolute), named `name` (lifeline.js). */
export function spawnWorker(url, name) {
  const options = {type: 'module', name};
  if (sameOrigin(url)) return new Worker(url, options);
  const source = `import ${JSON.stringify(url)};\n`;
  // not revoked: a few bytes per worker started, and no race with the browser's fetch of the blob
  return new Worker(URL.createObjectURL(new Blob([source], {type: 'text/javascript'})), options);
}

/** The engine script's exports, once it ran in this scope: {createEngine}. */
function loadedEngine() {
  return globalThis.webnnPolyfillEngine || null;
}

/**
 * In a classic scope that runs the engine in its own thread, while the polyfill's script first runs: import the
 * engine script now. Returns null, or why it could not (a module scope imports it later, or statically).
 */
export function preloadEngine(engineURL) {
  if (engineThread() !== 'in-thread' || loadedEngine() || typeof importScripts !== 'function') return null;
  try {
    importScripts(engineURL);
    return null;
  } catch (e) {
    // a module scope has importScripts but refuses it: a shared worker imports the script later (importEngine)
    if (!inServiceWorker()) return null;
    return `the WebNN engine script could not be imported here: ${e && e.message ? e.message : e}`;
  }
}

async function importEngine(engineURL) {
  if (!loadedEngine()) {
    if (inServiceWorker()) {
      throw new Error(`a module service worker imports the engine script itself (import '${engineURL}')`);
    }
    await import(/* webpackIgnore: true */ engineURL);
  }
  if (!loadedEngine()) throw new Error(`${engineURL} did not define the engine`);
  return loadedEngine();
}

/**
 * The engine in this thread behind a MessageChannel: the client's end is a MessagePort with the Worker
 * members rpc.js uses (postMessage, onmessage, onmessageerror, terminate), so messages are cloned and
 * transferred, and handled in order, exactly as with a worker. `url` only carries the worker URL's switches.
 * Messages wait in the port until the engine script is loaded; if it cannot be, the client gets a fatal error.
 */
function inThreadEngine(url, engineURL) {
  const {port1, port2} = new MessageChannel();
  importEngine(engineURL).then(({createEngine}) => {
    const receive = createEngine({
      post: (message, transfer) => port2.postMessage(message, transfer),
      // after a fatal error: take no more requests; its 'fatal' message, already posted, makes rpc.js terminate
      close: () => { port2.onmessage = null; },
      switches: switchesOf(url),
      boot,
    });
    port2.onmessage = (e) => receive(e.data);
  }, (e) => {
    port2.postMessage({type: 'fatal', message: `the WebNN engine could not start: ${e && e.message ? e.message : e}`});
  });
  port1.terminate = () => { port1.close(); port2.close(); };
  return port1;
}

/** Where the engine runs here: 'worker' (a nested execution worker) or 'in-thread'. */
export function engineThread() {
  if (typeof Worker !== 'function') return 'in-thread';
  // Firefox can block a worker's thread for good inside its `new Worker()` when several workers start the polyfill
  // at once (4 of 120 boots of 4 dedicated workers at a time on a 2-core machine; no timer, no error, nothing
  // runs on that thread again): a worker's engine runs in its own thread there, and never calls it
  if (inFirefox() && typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope) {
    return 'in-thread';
  }
  return 'worker';
}

/** The execution engine for the worker script at `url`: a Worker, or the in-thread engine's port (its code
 *  from the engine script at `engineURL`); a worker is named `name` (lifeline.js). */
export function spawnEngine(url, engineURL, name) {
  return engineThread() === 'worker' ? spawnWorker(url, name) : inThreadEngine(url, engineURL);
}
