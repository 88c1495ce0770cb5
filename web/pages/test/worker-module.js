// A module dedicated worker: the polyfill bundle as a side-effect import, then the shared task.
import '/polyfill/webnn-polyfill.js';
import './worker-task.js';
