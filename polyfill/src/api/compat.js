// Chromium compatibility: where Chromium (the browser real WebNN clients are written against) accepts more than
// the draft or exposes members the draft only proposes, the polyfill does what Chromium does; `data-strict` on
// the script tag (or WEBNN_POLYFILL_CONFIG.strict) gives the draft's behaviour instead.  Every switch here is a
// row of docs/compatibility.md, and tests/browser/test_compat.py checks each row in both modes.

import {attributeGetter, graphState, stateOf} from './internal.js';

let strict = false;

/** Whether this global's polyfill follows the draft (true) or Chromium (false, the default). */
export const isStrict = () => strict;

/** The members that differ by mode, defined on (or removed from) the interface prototypes. */
export function applyMode(classes, strictMode) {
  strict = !!strictMode;
  const {MLContext, MLGraph, MLTensor} = classes;
  if (strict) {
    // the legacy compute() is a polyfill extension for old pages: neither the draft nor Chromium has it
    delete MLContext.prototype.compute;
    // Chromium's WebGPU interop members (the MLTensor explainer); the draft has only createContext(GPUDevice)
    delete MLContext.prototype.createExportableTensor;
    delete MLContext.prototype.exportToGPU;
    delete MLTensor.prototype.gpuDevice;
    return;
  }
  // Chromium has no MLContext.accelerated (the draft's [later ED] attribute)
  delete MLContext.prototype.accelerated;
  // MLGraph.devices: the devices the graph runs on, as Chromium exposes it (a proposal of the device selection
  // explainer, not in the draft's IDL); LiteRT.js's WebNN delegate reads it.  The polyfill runs on the CPU.
  Object.defineProperty(MLGraph.prototype, 'devices', {
    get: attributeGetter('devices', (self) => { stateOf(graphState, self, 'MLGraph.devices'); return Object.freeze(['cpu']); }),
    enumerable: true, configurable: true,
  });
}
