// MLContext.compute(): the whole-graph path, with its input and output views transferred to the worker and
// back. `glue` is the core's glue for this graph (py_core.bridge.pyodide_glue, or the split glue for a graph
// built for a part of its batch: split.js).

import {unwrap} from './glue.js';

/** Run graph `msg.gid` on `msg.inputs`, writing `msg.outputs` in place.  https://www.w3.org/TR/webnn/#api-mlcontext-compute */
export function computeGraph(glue, msg) {
  const bytesOf = (m) => new Uint8Array(m.buffer, m.byteOffset, m.length * globalThis[m.ctor].BYTES_PER_ELEMENT);
  const bufs = msg.inputs.map(bytesOf);
  const names = JSON.stringify(msg.inputs.map((m) => m.name));
  const result = unwrap(glue.compute(msg.ctx, msg.gid, names, bufs));
  try {
    const outNames = JSON.parse(result.get(0));
    const views = result.get(1);
    try {
      outNames.forEach((name, i) => {
        const m = msg.outputs.find((o) => o.name === name);
        const view = views.get(i);
        const pybuf = view.getBuffer('u8');
        try {
          bytesOf(m).set(pybuf.data);
        } finally {
          pybuf.release();
          view.destroy();
        }
      });
    } finally {
      views.destroy();
    }
  } finally {
    result.destroy();
  }
  return {value: {inputs: msg.inputs, outputs: msg.outputs},
    transfer: [...msg.inputs, ...msg.outputs].map((m) => m.buffer)};
}
