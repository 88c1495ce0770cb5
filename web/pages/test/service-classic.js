// A classic service worker: the polyfill bundle through importScripts while this script first runs (the only
// time a service worker may import scripts; the polyfill imports Pyodide's then too), then the shared task for
// each message, kept alive by waitUntil until its report is posted back to the page that asked.
importScripts('/polyfill/webnn-polyfill.js', 'worker-task.js');
self.oninstall = () => self.skipWaiting();
self.onmessage = (event) => {
  event.waitUntil(self.runWebnnTask(event.data.kind).then((report) => event.source.postMessage(report)));
};
