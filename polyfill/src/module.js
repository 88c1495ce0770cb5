// The ES module entry of the package (`import webnn from 'pyodide-webnn'`): the same polyfill as the script
// tag's webnn-polyfill.js, installed on import; its assets resolve against this module's URL, or against
// `globalThis.WEBNN_POLYFILL_CONFIG.baseURL` when set before the import (a bundler moves this file away from
// the package's assets: point baseURL at where they are served).
import './module-url.js';
import './index.js';

const api = globalThis.webnnPolyfill;
export default api;
export const {ml, ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLTensor} = api;
