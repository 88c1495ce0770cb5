// MLContext: owns graphs and tensors in the execution worker and orders work on its timeline.
// https://www.w3.org/TR/webnn/#api-mlcontext

import {BYTES_PER_ELEMENT, byteLengthOf, bytesFor, checkBufferSource, copyFor} from './buffers.js';
import {checkDimensions, toOperandDescriptor, toRecord, toTensorDescriptor} from './idl.js';
import {
  INTERNAL, contextState, defineInterface, foreignHint, graphState, illegal, stateOf, tensorState,
} from './internal.js';
import {destroyGraphState, makeGraph} from './graph.js';
import {destroyTensorState, makeTensor} from './tensor.js';
import {legacyCompute} from './compute.js';
import {isStrict} from './compat.js';
import {linkSplit, releaseWorker, splitRequest} from '../runtime/pool.js';
import {deviceLost, exportTensor, isGPUDevice, notAGPUDevice, rawWorker} from './webgpu.js';
import {configOn} from '../switches.js';

// opSupportLimits(): the draft (since webmachinelearning/webnn#910) and Chromium name the outputs of these
// operators output0, output1, ...; the core describes them once, as `outputs`.
const RECURRENT_OUTPUTS = {gru: 2, lstm: 3, lstmCell: 2};

function namedRecurrentOutputs(limits) {
  for (const [op, count] of Object.entries(RECURRENT_OUTPUTS)) {
    if (!limits[op] || !limits[op].outputs) continue;
    const {outputs, ...rest} = limits[op];
    limits[op] = rest;
    for (let i = 0; i < count; i++) limits[op][`output${i}`] = structuredClone(outputs);
  }
  return limits;
}

/** Whether two lists of [name, tensor state] (toRecord's) bind the same tensors to the same names, in order. */
function sameEntries(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i][0] !== b[i][0] || a[i][1] !== b[i][1]) return false;
  }
  return true;
}

let nextContextId = 1;
let nextObjectId = 1;

// Tensors and graphs that script drops without destroy() are released in the worker once collected,
// and so is everything of a context dropped without destroy().
const collected = new FinalizationRegistry(({core, kind, state}) => core.collect(kind, state));
const droppedContexts = new FinalizationRegistry(({runtime, worker, id, listener}) => {
  runtime.lostListeners.delete(listener);
  releaseWorker(runtime, worker);
  if (!worker.dead) worker.post('destroyContext', {ctx: id});
});

function lostError(where) {
  return new DOMException(`${where}: the context is lost`, 'InvalidStateError');
}

/** The context's private half: worker handle, its live tensors and graphs, the lost state. */
class ContextCore {
  constructor(runtime, worker, options) {
    this.runtime = runtime;
    this.worker = worker;
    this.id = nextContextId++;
    this.options = options;
    this.lost = false;
    this.tensors = new Set();
    this.graphs = new Set();
    this.aborts = new Set();
    this.lostPromise = new Promise((resolve) => { this.resolveLost = resolve; });
    // held weakly, so that a context script drops can be collected (see droppedContexts)
    const self = new WeakRef(this);
    this.onWorkerLost = (w, reason) => {
      const core = self.deref();
      if (core && w === rawWorker(core.worker)) core.markLost(`the WebNN worker was lost: ${reason}`);
    };
    runtime.lostListeners.add(this.onWorkerLost);
  }

  /** Tie this core to its MLContext object, and release the worker side if script drops that object. */
  attach(context) {
    this.context = context;
    droppedContexts.register(context, {
      runtime: this.runtime, worker: this.worker, id: this.id, listener: this.onWorkerLost,
    }, this);
  }

  /** The spec's "lose" steps: resolve `lost`, destroy every graph and tensor, abort work in flight.
   *  https://www.w3.org/TR/webnn/#mlcontext-lose */
  markLost(message) {
    if (this.lost) return;
    this.lost = true;
    this.runtime.lostListeners.delete(this.onWorkerLost);
    releaseWorker(this.runtime, rawWorker(this.worker));  // a WebGPU export may have wrapped it (webgpu.js)
    droppedContexts.unregister(this);
    this.resolveLost({message});
    for (const g of [...this.graphs]) destroyGraphState(g);
    for (const t of [...this.tensors]) destroyTensorState(t, `the context is lost: ${message}`);
    for (const abort of [...this.aborts]) abort();
    this.aborts.clear();
  }

  /** `promise`, but rejected with InvalidStateError as soon as the context is lost ("abort when"). */
  untilLost(promise, where) {
    if (this.lost) return Promise.reject(lostError(where));
    return new Promise((resolve, reject) => {
      const abort = () => reject(lostError(where));
      this.aborts.add(abort);
      promise.then(
        (v) => { this.aborts.delete(abort); resolve(v); },
        (e) => { this.aborts.delete(abort); reject(this.lost ? lostError(where) : e); });
    });
  }

  adoptTensor(tensor, state) {
    this.tensors.add(state);
    collected.register(tensor, {core: this, kind: 'tensor', state}, state);
  }

  adoptGraph(graph, state) {
    this.graphs.add(state);
    collected.register(graph, {core: this, kind: 'graph', state}, state);
  }

  releaseTensor(s) {
    this.tensors.delete(s);
    collected.unregister(s);
    if (!this.lost) this.worker.post('destroyTensor', {tid: s.id});
  }

  releaseGraph(s) {
    this.graphs.delete(s);
    collected.unregister(s);
    if (!this.lost) this.worker.post('destroyGraph', {gid: s.id});
  }

  /** A tensor or graph was garbage-collected without destroy(): free its worker-side data. */
  collect(kind, state) {
    if (state.destroyed || this.lost || (state.pending && state.pending.size)) return;
    state.destroyed = true;
    if (kind === 'tensor') this.releaseTensor(state);
    else this.releaseGraph(state);
  }

  /** WebIDL conversion of an MLGraph argument. */
  graphArg(v, where) {
    const g = graphState.get(v);
    if (!g) throw new TypeError(`${where}: the graph is not an MLGraph${foreignHint(v, 'MLGraph', graphState)}`);
    return g;
  }

  /** WebIDL conversion of an MLTensor argument. */
  tensorArg(v, where) {
    const t = tensorState.get(v);
    if (!t) throw new TypeError(`${where} is not an MLTensor${foreignHint(v, 'MLTensor', tensorState)}`);
    return t;
  }

  /** Check a descriptor against opSupportLimits()[kind] ("input" or "constant": its data types, its rankRange)
   *  and the draft's "check dimensions". */
  checkDescriptor(desc, where, kind) {
    const limits = this.runtime.limits;
    if (!limits[kind].dataTypes.includes(desc.dataType)) {
      throw new TypeError(`${where}: data type ${desc.dataType} is not supported`);
    }
    checkDimensions(desc, where, limits[kind].rankRange.max, limits.maxTensorByteLength,
      BYTES_PER_ELEMENT[desc.dataType]);
  }

  /** "Validate tensors with descriptors" for dispatch().  https://www.w3.org/TR/webnn/#validate-tensors-with-descriptors */
  validateNamed(entries, expected, where) {
    const names = Object.keys(expected);
    for (const [name, t] of entries) {
      if (!(name in expected)) {
        throw new TypeError(`${where}: the graph has no ${where.endsWith('inputs') ? 'input' : 'output'} `
          + `named '${name}' (expected ${names.join(', ') || 'none'})`);
      }
      if (t.constant) throw new TypeError(`${where}['${name}']: a constant tensor cannot be bound to a graph`);
      const d = expected[name];
      if (t.dataType !== d.dataType || t.shape.length !== d.shape.length || t.shape.some((v, i) => v !== d.shape[i])) {
        throw new TypeError(`${where}['${name}']: the tensor is ${t.dataType}[${t.shape}], `
          + `the graph expects ${d.dataType}[${d.shape}]`);
      }
    }
    if (entries.length !== names.length) {
      throw new TypeError(`${where}: expected tensors named [${names.join(', ')}], got `
        + `[${entries.map(([n]) => n).join(', ')}]`);
    }
    return Object.fromEntries(entries.map(([n, t]) => [n, t.id]));
  }

  async createTensor(desc, flags, bytes, where) {
    const tid = nextObjectId++;
    const transfer = bytes ? [bytes.buffer] : [];
    await this.untilLost(this.worker.request('createTensor', {
      ctx: this.id, tid, desc: JSON.stringify({dataType: desc.dataType, shape: desc.shape}),
      readable: flags.readable, writable: flags.writable, constant: flags.constant, data: bytes,
    }, transfer), where);
    return makeTensor(this, tid, desc, flags);
  }

  /** Compile a graph the page's builder host produced ({graph: JSON text, inputs, outputs: descriptors}), with
   *  its constant bytes and constant tensors. */
  async buildGraph(built, constants, constantTensors, where) {
    const gid = nextObjectId++;
    const ids = [...constants.keys()];
    const buffers = ids.map((i) => constants.get(i));
    const split = splitRequest(this.runtime, this.options);  // one graph over both cores (runtime/pool.js, engine/split.js)
    const info = await this.untilLost(this.worker.request('build', {
      ctx: this.id, gid, graph: built.graph, constIds: JSON.stringify(ids), buffers,
      constantTensors: JSON.stringify(constantTensors), ...(split ? {split} : {}),
    }, [...new Set(buffers.map((b) => b.buffer))]), where);
    if (info && info.split) await this.untilLost(linkSplit(this.runtime, this.worker, rawWorker(this.worker), gid), where);
    return makeGraph(this, gid, built.inputs, built.outputs);
  }

  destroy() {
    if (this.lost) return;
    this.worker.post('destroyContext', {ctx: this.id});
    this.markLost('destroy() was called');
  }
}

/** readTensor's steps (MLContext.readTensor); throws what the call rejects with. */
function readSteps(context, count, tensor, outputData) {
  const where = 'MLContext.readTensor';
  const c = stateOf(contextState, context, where);
  if (count < 1) throw new TypeError(`${where}: 1 argument required, but only 0 present`);
  const t = c.tensorArg(tensor, `${where}: tensor`);
  const byob = count >= 2;
  if (byob) checkBufferSource(outputData, `${where}: outputData`);
  if (t.context !== context) throw new TypeError(`${where}: the tensor belongs to another MLContext`);
  // WPT (read_after_destroy, destroyed context) expects InvalidStateError where the spec text says TypeError
  if (t.destroyed) throw new DOMException(`${where}: the tensor has been destroyed`, 'InvalidStateError');
  if (!t.readable) throw new TypeError(`${where}: the tensor was not created with readable: true`);
  if (t.rental) throw new TypeError(`${where}: the tensor has been exported to WebGPU (destroy() its GPUBuffer first)`);
  // WPT ("read with larger array") accepts an outputData longer than the tensor
  // Chromium takes any view of the right byte length (onnxruntime-web reads float32 into an Int8Array)
  const viewRule = {allowLarger: true, anyView: !isStrict()};
  if (byob) bytesFor(outputData, t, `${where}: outputData`, viewRule);
  let settle;
  const result = new Promise((resolve, reject) => { settle = {resolve, reject}; });
  t.pending.add(settle.reject);
  // the worker copies out of its heap once: into a new buffer script gets, or for outputData into a staging
  // buffer lent with the request (runtime/rpc.js), copied into outputData here and kept for the next read or write
  const n = byteLengthOf(t);
  const lent = byob ? c.worker.staging(n) : null;
  const into = lent && lent.staged ? lent.bytes : null;
  const message = {ctx: c.id, tid: t.id, n, ...(into ? {into} : {})};
  c.worker.call('read', message, into ? [into.buffer] : [], (buffer) => {
    if (!t.pending.delete(settle.reject)) return;  // already rejected by destroy()
    if (!byob) { settle.resolve(buffer); return; }
    try {
      // re-validated: outputData may have been detached while the read was queued
      bytesFor(outputData, t, `${where}: outputData`, viewRule).set(new Uint8Array(buffer));
      settle.resolve(undefined);
    } catch (e) {
      settle.reject(e);
    } finally {
      if (into) c.worker.restage(buffer);
    }
  }, (e) => {
    if (t.pending.delete(settle.reject)) settle.reject(e);
  });
  return result;
}

export class MLContext {
  constructor(token, core) {
    illegal(token);
    core.attach(this);
    contextState.set(this, core);
  }

  /** dispatch(graph, inputs, outputs): queue an execution.  https://www.w3.org/TR/webnn/#api-mlcontext-dispatch */
  dispatch(graph, inputs, outputs) {
    const where = 'MLContext.dispatch';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 3) throw new TypeError(`${where}: 3 arguments required, but only ${arguments.length} present`);
    const g = c.graphArg(graph, `${where}: graph`);
    const ins = toRecord(inputs, `${where}: inputs`, (v, w) => c.tensorArg(v, w));
    const outs = toRecord(outputs, `${where}: outputs`, (v, w) => c.tensorArg(v, w));
    if (g.context !== this) throw new TypeError(`${where}: the graph belongs to another MLContext`);
    if (g.destroyed) throw new DOMException(`${where}: the graph has been destroyed`, 'InvalidStateError');
    // All but the tensors' state depends only on the names and tensors bound (a tensor's type and shape never
    // change): the graph keeps the last bindings that passed, and the same bindings again skip those checks and
    // reuse their message (4-8 us of a 1-op round trip; WEBNN_POLYFILL_CONFIG.bindingCache = false checks each time)
    let bound = g.lastBound;
    const known = bound && sameEntries(bound.ins, ins) && sameEntries(bound.outs, outs);
    if (!known) {
      // The same tensor may feed several inputs (Chromium and WPT allow it); outputs must be distinct.
      const outStates = outs.map(([, t]) => t);
      if (new Set(outStates).size !== outStates.length) {
        throw new TypeError(`${where}: the same tensor is bound to two outputs`);
      }
      const inStates = new Set(ins.map(([, t]) => t));
      const both = outs.find(([, t]) => inStates.has(t));
      if (both) throw new TypeError(`${where}: outputs['${both[0]}'] is also bound as an input`);
    }
    for (const entries of [ins, outs]) {
      for (const [name, t] of entries) {
        if (t.context !== this) throw new TypeError(`${where}: the tensor '${name}' belongs to another MLContext`);
        if (t.destroyed) throw new TypeError(`${where}: the tensor '${name}' has been destroyed`);
        // Chromium: "Input tensor has been exported to WebGPU" (MLTensor explainer: rented until GPUBuffer.destroy())
        if (t.rental) {
          throw new TypeError(`${where}: the tensor '${name}' has been exported to WebGPU (destroy() its GPUBuffer `
            + 'to give it back)');
        }
      }
    }
    if (!known) {
      const inIds = c.validateNamed(ins, g.inputs, `${where}: inputs`);
      const outIds = c.validateNamed(outs, g.outputs, `${where}: outputs`);
      bound = {ins, outs, inputs: JSON.stringify(inIds), outputs: JSON.stringify(outIds)};
      if (configOn(c.runtime.config, 'bindingCache')) g.lastBound = bound;
    }
    c.worker.post('dispatch', {ctx: c.id, gid: g.id, inputs: bound.inputs, outputs: bound.outputs});
  }

  /** createTensor(descriptor).  https://www.w3.org/TR/webnn/#api-mlcontext-createtensor */
  async createTensor(descriptor) {
    const where = 'MLContext.createTensor';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 1) throw new TypeError(`${where}: 1 argument required, but only 0 present`);
    const desc = toTensorDescriptor(descriptor, `${where}: descriptor`);
    if (c.lost) throw lostError(where);
    c.checkDescriptor(desc, where, 'input');
    return c.createTensor(desc, {readable: desc.readable, writable: desc.writable, constant: false}, null, where);
  }

  /** createExportableTensor(descriptor, device): a tensor exportToGPU() can rent to WebGPU on `device`.
   *  Chromium's WebGPU interop (MLTensor explainer); not in the draft's IDL, so absent in strict mode. */
  async createExportableTensor(descriptor, device) {
    const where = 'MLContext.createExportableTensor';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 2) throw new TypeError(`${where}: 2 arguments required, but only ${arguments.length} present`);
    const desc = toTensorDescriptor(descriptor, `${where}: descriptor`);
    if (!isGPUDevice(device)) throw notAGPUDevice(where, 2);
    if (c.lost) throw lostError(where);
    if (deviceLost(device)) throw new DOMException(`${where}: the GPUDevice was lost or destroyed`, 'InvalidStateError');
    c.checkDescriptor(desc, where, 'input');
    const flags = {readable: desc.readable, writable: desc.writable, constant: false, gpuDevice: device};
    return c.createTensor(desc, flags, null, where);
  }

  /** exportToGPU(tensor): a GPUBuffer (STORAGE | COPY_SRC | COPY_DST) holding the tensor's bytes; the tensor is
   *  rented to WebGPU until that buffer's destroy().  Chromium's WebGPU interop; absent in strict mode. */
  async exportToGPU(tensor) {
    const where = 'MLContext.exportToGPU';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 1) throw new TypeError(`${where}: 1 argument required, but only 0 present`);
    const t = c.tensorArg(tensor, `${where}: tensor`);
    if (c.lost) throw lostError(where);
    if (t.context !== this) throw new TypeError(`${where}: the tensor was not created by this context`);
    return exportTensor(c, t, where);
  }

  /** createConstantTensor(descriptor, inputData).  https://www.w3.org/TR/webnn/#api-mlcontext-createconstanttensor */
  async createConstantTensor(descriptor, inputData) {
    const where = 'MLContext.createConstantTensor';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 2) throw new TypeError(`${where}: 2 arguments required, but only ${arguments.length} present`);
    const desc = toOperandDescriptor(descriptor, `${where}: descriptor`);
    checkBufferSource(inputData, `${where}: inputData`);
    if (c.lost) throw lostError(where);
    c.checkDescriptor(desc, where, 'constant');
    const bytes = copyFor(inputData, desc, `${where}: inputData`);
    return c.createTensor(desc, {readable: false, writable: false, constant: true}, bytes, where);
  }

  /** readTensor(tensor) and readTensor(tensor, outputData).  https://www.w3.org/TR/webnn/#api-mlcontext-readtensor */
  // Not `async`: its promise is the one the worker's reply settles (an async function would wrap it in another,
  // two microtask hops more per read); what it throws before that becomes a rejection, as WebIDL says.
  readTensor(tensor, outputData) {
    try {
      return readSteps(this, arguments.length, tensor, outputData);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** writeTensor(tensor, inputData): copy now, write on the timeline.  https://www.w3.org/TR/webnn/#api-mlcontext-writetensor */
  writeTensor(tensor, inputData) {
    const where = 'MLContext.writeTensor';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 2) throw new TypeError(`${where}: 2 arguments required, but only ${arguments.length} present`);
    const t = c.tensorArg(tensor, `${where}: tensor`);
    checkBufferSource(inputData, `${where}: inputData`);
    if (t.context !== this) throw new TypeError(`${where}: the tensor belongs to another MLContext`);
    // WPT (write / destroy, destroyed context) expects InvalidStateError where the spec text says TypeError
    if (t.destroyed) throw new DOMException(`${where}: the tensor has been destroyed`, 'InvalidStateError');
    if (!t.writable) throw new TypeError(`${where}: the tensor was not created with writable: true`);
    if (t.rental) throw new TypeError(`${where}: the tensor has been exported to WebGPU (destroy() its GPUBuffer first)`);
    // the spec's copy at call time, into a staging buffer the worker gives back (runtime/rpc.js); transferred, not cloned
    // (a small one is cloned: runtime/rpc.js staging)
    const source = bytesFor(inputData, t, `${where}: inputData`, {anyView: !isStrict()});
    const {bytes, staged, transfer} = c.worker.staging(source.byteLength);
    bytes.set(source);
    c.worker.post('write', {ctx: c.id, tid: t.id, data: bytes, ...(staged ? {recycle: true} : {})},
      transfer ? [bytes.buffer] : []);
  }

  /** opSupportLimits(): a fresh MLOpSupportLimits dictionary.  https://www.w3.org/TR/webnn/#api-mlcontext-opsupportlimits */
  opSupportLimits() {
    const limits = stateOf(contextState, this, 'MLContext.opSupportLimits').runtime.limits;
    return namedRecurrentOutputs(structuredClone(limits));
  }

  /** destroy(): release everything; `lost` resolves.  https://www.w3.org/TR/webnn/#api-mlcontext-destroy */
  destroy() {
    stateOf(contextState, this, 'MLContext.destroy').destroy();
  }

  /** A promise resolved with MLContextLostInfo when the context is lost; a promise-typed attribute, so another
   *  `this` gives a rejected promise, not a throw.  https://www.w3.org/TR/webnn/#dom-mlcontext-lost */
  get lost() {
    try {
      return stateOf(contextState, this, 'MLContext.lost').lostPromise;
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** The polyfill runs every graph on the CPU, in a worker: never accelerated.  Strict mode only (compat.js). */
  get accelerated() { stateOf(contextState, this, 'MLContext.accelerated'); return false; }

  /** compute(graph, inputs, outputs): legacy one-shot execution that transfers the buffers.
   *  https://www.w3.org/TR/2023/CR-webnn-20230330/#api-mlcontext-async-execution */
  async compute(graph, inputs, outputs) {
    const where = 'MLContext.compute';
    const c = stateOf(contextState, this, where);
    if (arguments.length < 3) throw new TypeError(`${where}: 3 arguments required, but only ${arguments.length} present`);
    return legacyCompute(c, this, graph, inputs, outputs, where);
  }
}
defineInterface(MLContext, 'MLContext', {
  dispatch: 3, createTensor: 1, createConstantTensor: 2, readTensor: 1, writeTensor: 2, opSupportLimits: 0,
  destroy: 0, compute: 3, createExportableTensor: 2, exportToGPU: 1,
});

/** A new MLContext on `worker` with the converted createContext() options. */
export function makeContext(runtime, worker, options) {
  return new MLContext(INTERNAL, new ContextCore(runtime, worker, options));
}
