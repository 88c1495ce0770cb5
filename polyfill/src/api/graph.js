// MLGraph: a compiled graph living in the execution worker.  https://www.w3.org/TR/webnn/#api-mlgraph

import {INTERNAL, defineInterface, graphState, illegal, stateOf} from './internal.js';

export class MLGraph {
  constructor(token, state) {
    illegal(token);
    graphState.set(this, state);
  }

  /** destroy(): release the graph; later dispatches with it throw InvalidStateError.
   *  https://www.w3.org/TR/webnn/#api-mlgraph-destroy */
  destroy() {
    destroyGraphState(stateOf(graphState, this, 'MLGraph.destroy'));
  }
}
defineInterface(MLGraph, 'MLGraph', {destroy: 0});

/** The destroy() steps on a graph's state; also run for every graph when its context is lost. */
export function destroyGraphState(s) {
  if (s.destroyed) return;
  s.destroyed = true;
  s.core.releaseGraph(s);
}

/** A new MLGraph of `core` whose inputs/outputs map names to {dataType, shape}. */
export function makeGraph(core, id, inputs, outputs) {
  const state = {core, context: core.context, id, inputs, outputs, destroyed: false};
  const graph = new MLGraph(INTERNAL, state);
  core.adoptGraph(graph, state);
  return graph;
}
