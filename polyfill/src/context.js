// MLContext: owns graphs and tensors in the execution worker and orders work on its timeline.
// https://www.w3.org/TR/webnn/#api-mlcontext

import {byteLengthOf, bytesFor, copyFor} from './buffers.js';
import {toDictionary, toOperandDescriptor} from './idl.js';
import {INTERNAL, contextState, graphState, illegal, tensorState} from './internal.js';
import {makeGraph} from './graph.js';
import {makeTensor} from './tensor.js';

let nextContextId = 1;
let nextObjectId = 1;

function mixedHint(v) {
  const tag = v !== null && typeof v === 'object' ? Object.prototype.toString.call(v) : '';
  return (tag === '[object MLTensor]' || tag === '[object MLGraph]')
    ? ' (it belongs to another WebNN implementation; native and polyfill objects cannot be mixed)' : '';
}

/** The context's private half: worker handle, timeline bookkeeping, lost state. */
class ContextCore {
  constructor(runtime, worker, options) {
    this.runtime = runtime;
    this.worker = worker;
    this.id = nextContextId++;
    this.options = options;
    this.lost = false;
    this.lostPromise = new Promise((resolve) => { this.resolveLost = resolve; });
    this.onWorkerLost = (w, reason) => { if (w === this.worker) this.markLost(`the WebNN worker was lost: ${reason}`); };
    runtime.lostListeners.add(this.onWorkerLost);
  }

  markLost(message) {
    if (this.lost) return;
    this.lost = true;
    this.runtime.lostListeners.delete(this.onWorkerLost);
    this.resolveLost({message});
  }

  checkAlive(what) {
    if (this.lost) throw new DOMException(`${what}: the context is lost`, 'InvalidStateError');
  }

  async buildGraph(graph, constants, constantTensors) {
    this.checkAlive('MLGraphBuilder.build');
    const gid = nextObjectId++;
    const ids = [...constants.keys()];
    const buffers = ids.map((i) => constants.get(i));
    await this.worker.request('build', {
      ctx: this.id, gid, graph: JSON.stringify(graph), constIds: JSON.stringify(ids), buffers,
      constantTensors: JSON.stringify(constantTensors),
    }, [...new Set(buffers.map((b) => b.buffer))]);
    const descs = (names) => Object.fromEntries(Object.entries(names).map(([name, id]) => {
      const o = graph.operands.find((x) => x.id === id);
      return [name, {dataType: o.dataType, shape: o.shape}];
    }));
    return makeGraph(this.context, gid, descs(graph.inputs), descs(graph.outputs));
  }

  graph(graph, what) {
    const g = graphState.get(graph);
    if (!g) throw new TypeError(`${what}: the graph is not an MLGraph${mixedHint(graph)}`);
    if (g.context !== this.context) throw new TypeError(`${what}: the graph belongs to another context`);
    if (g.destroyed) throw new DOMException(`${what}: the graph has been destroyed`, 'InvalidStateError');
    return g;
  }

  tensor(tensor, what) {
    const t = tensorState.get(tensor);
    if (!t) throw new TypeError(`${what}: not an MLTensor${mixedHint(tensor)}`);
    if (t.context !== this.context) throw new TypeError(`${what}: the tensor belongs to another context`);
    if (t.destroyed) throw new TypeError(`${what}: the tensor has been destroyed`);
    return t;
  }

  namedTensors(record, expected, what) {
    const entries = Object.entries(toDictionary(record, what));
    const names = Object.keys(expected);
    if (entries.length !== names.length || !entries.every(([n]) => n in expected)) {
      throw new TypeError(`${what}: expected tensors named [${names.join(', ')}], got [${entries.map(([n]) => n).join(', ')}]`);
    }
    const ids = {};
    for (const [name, tensor] of entries) {
      const t = this.tensor(tensor, `${what}['${name}']`);
      const d = expected[name];
      if (t.dataType !== d.dataType || t.shape.length !== d.shape.length || t.shape.some((v, i) => v !== d.shape[i])) {
        throw new TypeError(`${what}['${name}']: tensor is ${t.dataType}[${t.shape}], the graph expects ${d.dataType}[${d.shape}]`);
      }
      ids[name] = t.id;
    }
    return ids;
  }
}

export class MLContext {
  constructor(token, runtime, worker, options) {
    illegal(token);
    const core = new ContextCore(runtime, worker, options);
    core.context = this;
    contextState.set(this, core);
  }

  /** dispatch(graph, inputs, outputs): queue an execution.  https://www.w3.org/TR/webnn/#api-mlcontext-dispatch */
  dispatch(graph, inputs, outputs) {
    const c = core(this, 'dispatch');
    if (arguments.length < 3) throw new TypeError('MLContext.dispatch: 3 arguments required');
    const g = c.graph(graph, 'MLContext.dispatch');
    c.checkAlive('MLContext.dispatch');
    const ins = c.namedTensors(inputs, g.inputs, 'MLContext.dispatch: inputs');
    const outs = c.namedTensors(outputs, g.outputs, 'MLContext.dispatch: outputs');
    const outIds = Object.values(outs);
    if (new Set(outIds).size !== outIds.length) throw new TypeError('MLContext.dispatch: the same tensor is used for two outputs');
    if (Object.values(ins).some((id) => outIds.includes(id))) throw new TypeError('MLContext.dispatch: a tensor is both an input and an output');
    c.worker.post('dispatch', {ctx: c.id, gid: g.id, inputs: JSON.stringify(ins), outputs: JSON.stringify(outs)});
  }

  /** createTensor(descriptor).  https://www.w3.org/TR/webnn/#api-mlcontext-createtensor */
  async createTensor(descriptor) {
    const c = core(this, 'createTensor');
    c.checkAlive('MLContext.createTensor');
    const desc = toOperandDescriptor(descriptor, 'MLContext.createTensor: descriptor');
    const flags = {readable: !!descriptor.readable, writable: !!descriptor.writable, constant: false};
    return c.createTensor(desc, flags, null);
  }

  /** createConstantTensor(descriptor, data).  https://www.w3.org/TR/webnn/#api-mlcontext-createconstanttensor */
  async createConstantTensor(descriptor, data) {
    const c = core(this, 'createConstantTensor');
    c.checkAlive('MLContext.createConstantTensor');
    const desc = toOperandDescriptor(descriptor, 'MLContext.createConstantTensor: descriptor');
    const bytes = copyFor(data, desc, 'MLContext.createConstantTensor');
    return c.createTensor(desc, {readable: false, writable: false, constant: true}, bytes);
  }

  /** writeTensor(tensor, data): copy now, write on the timeline.  https://www.w3.org/TR/webnn/#api-mlcontext-writetensor */
  writeTensor(tensor, data) {
    const c = core(this, 'writeTensor');
    if (arguments.length < 2) throw new TypeError('MLContext.writeTensor: 2 arguments required');
    const t = c.tensor(tensor, 'MLContext.writeTensor');
    c.checkAlive('MLContext.writeTensor');
    if (!t.writable) throw new TypeError('MLContext.writeTensor: the tensor was not created writable');
    const bytes = copyFor(data, t, 'MLContext.writeTensor');
    c.worker.post('write', {ctx: c.id, tid: t.id, data: bytes}, [bytes.buffer]);
  }

  /** readTensor(tensor[, outputData]).  https://www.w3.org/TR/webnn/#api-mlcontext-readtensor */
  async readTensor(tensor, outputData) {
    const c = core(this, 'readTensor');
    const t = c.tensor(tensor, 'MLContext.readTensor');
    c.checkAlive('MLContext.readTensor');
    if (!t.readable) throw new TypeError('MLContext.readTensor: the tensor was not created readable');
    if (outputData !== undefined) bytesFor(outputData, t, 'MLContext.readTensor');
    let buffer;
    try {
      buffer = await c.worker.request('read', {ctx: c.id, tid: t.id});
    } catch (e) {
      if (t.destroyed) throw new DOMException('MLContext.readTensor: the tensor was destroyed', 'InvalidStateError');
      if (c.lost) throw new DOMException('MLContext.readTensor: the context is lost', 'InvalidStateError');
      throw e;
    }
    if (outputData === undefined) return buffer;
    bytesFor(outputData, t, 'MLContext.readTensor').set(new Uint8Array(buffer));
    return undefined;
  }

  /** compute(graph, inputs, outputs): legacy one-shot execution that transfers the buffers.
   *  https://www.w3.org/TR/2023/CR-webnn-20230330/#api-mlcontext-async-execution */
  async compute(graph, inputs, outputs) {
    const c = core(this, 'compute');
    const g = c.graph(graph, 'MLContext.compute');
    c.checkAlive('MLContext.compute');
    const views = (record, expected, what) => {
      const entries = Object.entries(toDictionary(record, what));
      const names = Object.keys(expected);
      if (entries.length !== names.length || !entries.every(([n]) => n in expected)) {
        throw new TypeError(`${what}: expected buffers named [${names.join(', ')}]`);
      }
      for (const [name, view] of entries) {
        if (!ArrayBuffer.isView(view)) throw new TypeError(`${what}['${name}']: expected an ArrayBufferView`);
        bytesFor(view, expected[name], `${what}['${name}']`);
      }
      return entries;
    };
    const ins = views(inputs, g.inputs, 'MLContext.compute: inputs');
    const outs = views(outputs, g.outputs, 'MLContext.compute: outputs');
    const all = [...ins, ...outs].map(([, v]) => v.buffer);
    if (new Set(all).size !== all.length) throw new TypeError('MLContext.compute: the same buffer is used twice');
    const meta = (entries) => entries.map(([name, v]) => ({name, ctor: v.constructor.name, byteOffset: v.byteOffset, length: v.length, buffer: v.buffer}));
    const inMeta = meta(ins);
    const outMeta = meta(outs);
    const reply = await c.worker.request('compute', {ctx: c.id, gid: g.id, inputs: inMeta, outputs: outMeta}, all);
    const rebuild = (list) => Object.fromEntries(list.map((m) => [m.name, new globalThis[m.ctor](m.buffer, m.byteOffset, m.length)]));
    return {graph, inputs: rebuild(reply.inputs), outputs: rebuild(reply.outputs)};
  }

  /** opSupportLimits().  https://www.w3.org/TR/webnn/#api-mlcontext-opsupportlimits */
  opSupportLimits() {
    return structuredClone(core(this, 'opSupportLimits').runtime.limits);
  }

  /** destroy(): release everything; `lost` resolves.  https://www.w3.org/TR/webnn/#api-mlcontext-destroy */
  destroy() {
    const c = core(this, 'destroy');
    if (c.lost) return;
    c.worker.post('destroyContext', {ctx: c.id});
    c.markLost('the context was destroyed');
  }

  get lost() { return core(this, 'lost').lostPromise; }
  get accelerated() { core(this, 'accelerated'); return false; }

  _releaseGraph(gid) { const c = contextState.get(this); if (!c.lost) c.worker.post('destroyGraph', {gid}); }
  _releaseTensor(tid) { const c = contextState.get(this); if (!c.lost) c.worker.post('destroyTensor', {tid}); }
}
Object.defineProperty(MLContext.prototype, Symbol.toStringTag, {value: 'MLContext'});
for (const name of ['_releaseGraph', '_releaseTensor']) {
  Object.defineProperty(MLContext.prototype, name, {enumerable: false});
}

ContextCore.prototype.createTensor = async function (desc, flags, bytes) {
  const tid = nextObjectId++;
  const transfer = bytes ? [bytes.buffer] : [];
  await this.worker.request('createTensor', {
    ctx: this.id, tid, desc: JSON.stringify(desc), readable: flags.readable, writable: flags.writable,
    constant: flags.constant, data: bytes,
  }, transfer);
  return makeTensor(this.context, tid, desc, flags);
};

function core(ctx, what) {
  const c = contextState.get(ctx);
  if (!c) throw new TypeError(`Illegal invocation of MLContext.${what}`);
  return c;
}

export function makeContext(runtime, worker, options) {
  return new MLContext(INTERNAL, runtime, worker, options);
}

export {byteLengthOf};
