// A module service worker: it has no importScripts and refuses import(), so Pyodide's two scripts and the
// polyfill's engine script are imported statically before the polyfill (they define the globals
// _createPyodideModule, loadPyodide and webnnPolyfillEngine, which the polyfill then uses instead of importing
// them itself), then the shared task for each message.
import '/pyodide/pyodide.asm.js';
import '/pyodide/pyodide.js';
import '/polyfill/webnn-engine.js';
import '/polyfill/webnn-polyfill.js';
import './worker-task.js';

self.oninstall = () => self.skipWaiting();
self.onmessage = (event) => {
  event.waitUntil(self.runWebnnTask(event.data.kind).then((report) => event.source.postMessage(report)));
};
