// MLGraph: a compiled graph living in the execution worker.  https://www.w3.org/TR/webnn/#api-mlgraph

import {INTERNAL, graphState, illegal} from './internal.js';

export class MLGraph {
  constructor(token, context, id, inputs, outputs) {
    illegal(token);
    graphState.set(this, {context, id, inputs, outputs, destroyed: false});
  }

  /** destroy(): release the graph; later dispatches with it throw InvalidStateError. */
  destroy() {
    const s = graphState.get(this);
    if (!s) throw new TypeError('Illegal invocation');
    if (s.destroyed) return;
    s.destroyed = true;
    s.context._releaseGraph(s.id);
  }
}
Object.defineProperty(MLGraph.prototype, Symbol.toStringTag, {value: 'MLGraph'});

export function makeGraph(context, id, inputs, outputs) {
  return new MLGraph(INTERNAL, context, id, inputs, outputs);
}
