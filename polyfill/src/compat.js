// Chromium compatibility: where Chromium (the browser real WebNN clients are written against) accepts more than
// the draft or exposes members the draft only proposes, the polyfill does what Chromium does; `data-strict` on
// the script tag (or WEBNN_POLYFILL_CONFIG.strict) gives the draft's behaviour instead.  Every switch here is a
// row of docs/compatibility.md, and tests/browser/test_compat.py checks each row in both modes.

import {graphState, stateOf} from './internal.js';

// opSupportLimits(): Chromium names the outputs of these operators output0, output1, ... (the draft: `outputs`).
export const RECURRENT_OUTPUTS = {gru: 2, lstm: 3, lstmCell: 2};

let strict = false;

/** Whether this global's polyfill follows the draft (true) or Chromium (false, the default). */
export const isStrict = () => strict;

/** opSupportLimits() as Chromium shapes it: recurrent outputs named output0..outputN-1. */
export function chromiumLimits(limits) {
  const out = {...limits};
  for (const [op, count] of Object.entries(RECURRENT_OUTPUTS)) {
    if (!out[op] || !out[op].outputs) continue;
    const {outputs, ...rest} = out[op];
    out[op] = rest;
    for (let i = 0; i < count; i++) out[op][`output${i}`] = structuredClone(outputs);
  }
  return out;
}

/** The members that differ by mode, defined on (or removed from) the interface prototypes. */
export function applyMode(classes, strictMode) {
  strict = !!strictMode;
  const {MLContext, MLGraph} = classes;
  if (strict) {
    // the legacy compute() is a polyfill extension for old pages: neither the draft nor Chromium has it
    delete MLContext.prototype.compute;
    return;
  }
  // Chromium has no MLContext.accelerated (the draft's [later ED] attribute)
  delete MLContext.prototype.accelerated;
  // MLGraph.devices: the devices the graph runs on, as Chromium exposes it (a proposal of the device selection
  // explainer, not in the draft's IDL); LiteRT.js's WebNN delegate reads it.  The polyfill runs on the CPU.
  Object.defineProperty(MLGraph.prototype, 'devices', {
    get: {devices() { stateOf(graphState, this, 'MLGraph.devices'); return Object.freeze(['cpu']); }}.devices,
    enumerable: true, configurable: true,
  });
}
