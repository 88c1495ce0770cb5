// A classic dedicated worker: the polyfill bundle through importScripts, then the shared task.
importScripts('/polyfill/webnn-polyfill.js', 'worker-task.js');
