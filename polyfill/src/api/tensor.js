// MLTensor: a buffer owned by a context, written, dispatched and read on the context's timeline.
// https://www.w3.org/TR/webnn/#api-mltensor

import {INTERNAL, defineGetters, defineInterface, illegal, stateOf, tensorState} from './internal.js';

export class MLTensor {
  constructor(token, state) {
    illegal(token);
    tensorState.set(this, state);
  }

  /** destroy(): release the tensor; pending reads reject with InvalidStateError.
   *  https://www.w3.org/TR/webnn/#api-mltensor-destroy */
  destroy() {
    const s = stateOf(tensorState, this, 'MLTensor.destroy');
    destroyTensorState(s, 'MLTensor.destroy: the tensor was destroyed');
  }
}
defineGetters(MLTensor, tensorState, {
  dataType: (s) => s.dataType,
  shape: (s) => s.shape,
  readable: (s) => s.readable,
  writable: (s) => s.writable,
  constant: (s) => s.constant,
  // Chromium's WebGPU interop: the device of createExportableTensor(), else null; absent in strict mode
  gpuDevice: (s) => s.gpuDevice,
});
defineInterface(MLTensor, 'MLTensor', {destroy: 0});

/** The destroy() steps on a tensor's state; also run for every tensor when its context is lost. */
export function destroyTensorState(s, message) {
  if (s.destroyed) return;
  s.destroyed = true;
  for (const reject of s.pending) reject(new DOMException(message, 'InvalidStateError'));
  s.pending.clear();
  s.core.releaseTensor(s);
}

/** A new MLTensor for `core` with descriptor `desc` and flags {readable, writable, constant, gpuDevice}. */
export function makeTensor(core, id, desc, flags) {
  const state = {
    core, context: core.context, id, dataType: desc.dataType, shape: Object.freeze([...desc.shape]),
    readable: !!flags.readable, writable: !!flags.writable, constant: !!flags.constant,
    destroyed: false, pending: new Set(), gpuDevice: flags.gpuDevice || null, rental: null,
  };
  const tensor = new MLTensor(INTERNAL, state);
  core.adoptTensor(tensor, state);
  return tensor;
}
