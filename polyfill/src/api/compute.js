// The legacy MLContext.compute(): one-shot execution on ArrayBufferViews that transfers (detaches) the
// caller's buffers and hands new views on them back.  https://www.w3.org/TR/2023/CR-webnn-20230330/#api-mlcontext-async-execution

import {bytesFor} from './buffers.js';
import {toDictionary} from './idl.js';

/** Check `record` against the graph's `expected` descriptors; entries of [name, view]. */
function namedViews(record, expected, what) {
  const entries = Object.entries(toDictionary(record, what));
  const names = Object.keys(expected);
  if (entries.length !== names.length || !entries.every(([n]) => n in expected)) {
    throw new TypeError(`${what}: expected buffers named [${names.join(', ')}]`);
  }
  for (const [name, view] of entries) {
    if (!ArrayBuffer.isView(view) || view instanceof DataView) throw new TypeError(`${what}['${name}']: expected a typed array`);
    bytesFor(view, expected[name], `${what}['${name}']`);
  }
  return entries;
}

/** compute() on context core `c` (whose MLContext is `context`): validate, transfer, run, rebuild the views. */
export async function legacyCompute(c, context, graph, inputs, outputs, where) {
  const g = c.graphArg(graph, `${where}: graph`);
  if (g.context !== context) throw new TypeError(`${where}: the graph belongs to another MLContext`);
  if (g.destroyed) throw new DOMException(`${where}: the graph has been destroyed`, 'InvalidStateError');
  if (c.lost) throw new DOMException(`${where}: the context is lost`, 'InvalidStateError');
  const ins = namedViews(inputs, g.inputs, `${where}: inputs`);
  const outs = namedViews(outputs, g.outputs, `${where}: outputs`);
  const all = [...ins, ...outs].map(([, v]) => v.buffer);
  if (new Set(all).size !== all.length) throw new TypeError(`${where}: the same ArrayBuffer is used twice`);
  const meta = (entries) => entries.map(([name, v]) => ({
    name, ctor: Object.prototype.toString.call(v).slice(8, -1), byteOffset: v.byteOffset, length: v.length,
    buffer: v.buffer,
  }));
  const reply = await c.untilLost(
    c.worker.request('compute', {ctx: c.id, gid: g.id, inputs: meta(ins), outputs: meta(outs)}, all), where);
  const rebuild = (list) => Object.fromEntries(
    list.map((m) => [m.name, new globalThis[m.ctor](m.buffer, m.byteOffset, m.length)]));
  return {inputs: rebuild(reply.inputs), outputs: rebuild(reply.outputs)};
}
