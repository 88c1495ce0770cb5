// Starting the execution engine from wherever the polyfill was loaded: a nested module worker where the
// scope has `Worker` (a page, a dedicated worker, a shared worker in Firefox), else the engine in this
// thread (a service worker; a shared worker in Chromium, which has no nested workers).
//
// `new Worker(url)` refuses a script on another origin (a CDN), whatever its CORS headers. A module worker
// started from a blob URL has the page's origin, and its one line imports the real worker script by its
// absolute URL, as a CORS module load: so the worker runs from any static host that sends
// `Access-Control-Allow-Origin`. Same-origin scripts are started directly (no blob: a page whose CSP has no
// `worker-src blob:` still works when it serves the polyfill itself).

import {createEngine} from './engine.js';

function sameOrigin(url) {
  try {
    return typeof location !== 'undefined' && new URL(url).origin === new URL(location.href).origin;
  } catch (e) {
    return false;
  }
}

/** A module Worker running the worker script at `url` (absolute). */
export function spawnWorker(url) {
  const options = {type: 'module', name: 'webnn-polyfill'};
  if (sameOrigin(url)) return new Worker(url, options);
  const source = `import ${JSON.stringify(url)};\n`;
  // not revoked: a few bytes per worker started, and no race with the browser's fetch of the blob
  return new Worker(URL.createObjectURL(new Blob([source], {type: 'text/javascript'})), options);
}

/**
 * The engine in this thread behind a MessageChannel: the client's end is a MessagePort with the Worker
 * members rpc.js uses (postMessage, onmessage, onmessageerror, terminate), so messages are cloned and
 * transferred, and handled in order, exactly as with a worker. `url` only carries the worker URL's switches.
 */
function inThreadEngine(url) {
  const {port1, port2} = new MessageChannel();
  const receive = createEngine({
    post: (message, transfer) => port2.postMessage(message, transfer),
    // after a fatal error: take no more requests; its 'fatal' message, already posted, makes rpc.js terminate
    close: () => { port2.onmessage = null; },
    switches: new URL(url).searchParams,
  });
  port2.onmessage = (e) => receive(e.data);
  port1.terminate = () => { port1.close(); port2.close(); };
  return port1;
}

/** Where the engine runs here: 'worker' (a nested execution worker) or 'in-thread'. */
export function engineThread() {
  return typeof Worker === 'function' ? 'worker' : 'in-thread';
}

/** The execution engine for the worker script at `url`: a Worker, or the in-thread engine's port. */
export function spawnEngine(url) {
  return engineThread() === 'worker' ? spawnWorker(url) : inThreadEngine(url);
}
