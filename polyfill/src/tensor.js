// MLTensor: a buffer owned by a context, written, dispatched and read on the context's timeline.
// https://www.w3.org/TR/webnn/#api-mltensor

import {INTERNAL, defineGetters, illegal, tensorState} from './internal.js';

export class MLTensor {
  constructor(token, context, id, desc, flags) {
    illegal(token);
    tensorState.set(this, {
      context, id, dataType: desc.dataType, shape: Object.freeze([...desc.shape]),
      readable: !!flags.readable, writable: !!flags.writable, constant: !!flags.constant, destroyed: false,
    });
  }

  /** destroy(): release the tensor; pending reads reject with InvalidStateError. */
  destroy() {
    const s = tensorState.get(this);
    if (!s) throw new TypeError('Illegal invocation');
    if (s.destroyed) return;
    s.destroyed = true;
    s.context._releaseTensor(s.id);
  }
}
defineGetters(MLTensor, tensorState, {
  dataType: (s) => s.dataType,
  shape: (s) => s.shape,
  readable: (s) => s.readable,
  writable: (s) => s.writable,
  constant: (s) => s.constant,
});
Object.defineProperty(MLTensor.prototype, Symbol.toStringTag, {value: 'MLTensor'});

export function makeTensor(context, id, desc, flags) {
  return new MLTensor(INTERNAL, context, id, desc, flags);
}
