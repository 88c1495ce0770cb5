// MLOperand: a node of a graph being built; its data type and shape are known at once.
// https://www.w3.org/TR/webnn/#api-mloperand

import {INTERNAL, defineGetters, defineInterface, illegal, operandState} from './internal.js';

export class MLOperand {
  constructor(token, builder, id, dataType, shape) {
    illegal(token);
    operandState.set(this, {builder, id, dataType, shape: Object.freeze([...shape])});
  }
}
defineGetters(MLOperand, operandState, {dataType: (s) => s.dataType, shape: (s) => s.shape});
defineInterface(MLOperand, 'MLOperand');

/** An MLOperand of `builder` for the core's {id, dataType, shape}. */
export function makeOperand(builder, out) {
  return new MLOperand(INTERNAL, builder, out.id, out.dataType, out.shape);
}
