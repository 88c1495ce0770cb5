// The tensor timeline's hot path: createTensor, writeTensor, dispatch, readTensor.
//
// Direct mode (the 1-op write + dispatch + read round trip): writeTensor and readTensor call no Python. Each
// tensor owns one array in the WebAssembly heap (py_core/bridge/worker_host.py keeps it alive and never moves
// it; a dispatch copies its outputs in, or hands over a large fresh array and records its address), and the heap
// addresses sit in a uint32 table in the heap itself, read here at each write and read. A dispatch enters Python
// once, with one int, through bindings checked the first time they are seen; a graph the compiled plan runs as
// one C call runs from here with no Python at all. With direct mode off (the config's `direct: false`, the worker
// URL's ?direct=0: switches.js) each write, dispatch and read calls its glue function (write_tensor, dispatch,
// read_tensor).

import {byteLengthOf} from '../api/buffers.js';
import {valueOrThrow, unwrap} from './glue.js';

const BOUND_MAX = 1024;  // as worker_host.WorkerHost.bind: both forget every binding at this many

/** What reads of a failed dispatch's outputs reject with (null: the dispatch succeeded). */
export function outputError(error) {
  return error && {name: 'OperationError', message: `dispatch failed: ${error.message}`};
}

/**
 * The timeline's handlers over `glue` (py_core.bridge.pyodide_glue) in `pyodide`; `direct`: whether direct mode
 * is on (it then asks the glue for its address table).
 */
export function createTimeline({pyodide, glue, direct: on}) {
  // tensors: id -> {ctx, index (its entry in the table), n (bytes), error (of the last dispatch writing it)}
  const direct = on ? {table: unwrap(glue.enable_direct()), tensors: new Map(), free: [], next: 0,
    bound: new Map(), nextBound: 1, run: glue.run, bind: glue.bind, cRuns: 0} : null;
  let recycled = [];  // staging buffers of writes (runtime/rpc.js), handed back with the next replies

  // The bytes at `address` in the heap: copied into `into` (a staging buffer the page lent) or into a new
  // ArrayBuffer, once.  The heap's views are looked up each time: they change when the memory grows.
  function heapBytes(address, n, into) {
    const heap = pyodide._module.HEAPU8;
    if (!into) return heap.slice(address, address + n).buffer;
    into.set(heap.subarray(address, address + n));
    return into.buffer;
  }
  function liveTensor(ctx, tid) {
    const t = direct.tensors.get(tid);
    if (t === undefined || t.ctx !== ctx) throw {name: 'InvalidStateError', message: 'MLTensor: the tensor has been destroyed'};
    return t;
  }
  function addressOf(t) {
    return pyodide._module.HEAPU32[(direct.table >>> 2) + t.index];
  }
  function sizeMismatch(what, t, n) {
    return {name: 'OperationError', message: `${what}: the tensor holds ${t.n} bytes, not ${n}`};
  }
  function forget(tid) {
    const t = direct.tensors.get(tid);
    if (t === undefined) return;
    direct.tensors.delete(tid);
    direct.free.push(t.index);
  }
  function forgetBindings() {
    if (direct) direct.bound.clear();
  }

  // A graph the compiled plan runs as one C call (py_core/compiler/plan.py DirectRun): made here, with no Python.
  // In place (worker_host.py bound_c): the plan's table entries for each input and output get the tensor's array
  // address, so the kernels read and write the tensors (a 1 MB input and output: two copies of it gone); else
  // its buffers are its own: each input tensor's bytes are copied in, each output's out.
  function cCall(c) {
    const record = ([tid, at, n, entries]) => [direct.tensors.get(tid), at, n, entries];
    return {fn: pyodide._module.wasmTable.get(c.fn), words: c.words, count: BigInt(c.count), table: c.table,
      inputs: c.inputs.map(record), outputs: c.outputs.map(record), inPlace: c.inPlace === true};
  }
  function runC(bound) {
    const c = bound.c;
    let heap = pyodide._module.HEAPU8;
    if (c.inPlace) {
      const words = pyodide._module.HEAPU32, base = c.table >>> 2;  // int64 entries, addresses below 2^32
      for (const side of [c.inputs, c.outputs]) {
        for (const [t, , , entries] of side) {
          const address = addressOf(t);
          for (const i of entries) {
            words[base + 2 * i] = address;
            words[base + 2 * i + 1] = 0;
          }
        }
      }
    } else {
      for (const [t, at, n] of c.inputs) {
        const from = addressOf(t);
        heap.copyWithin(at, from, from + n);
      }
    }
    const refused = c.fn(c.words, c.count, c.table);
    if (refused !== 0n && refused !== 0) {  // never, by construction (plan.py); said as a failed dispatch
      const onOutputs = outputError({message: 'the compiled plan refused an instruction'});
      for (const t of bound.outputs) t.error = onOutputs;
      throw onOutputs;
    }
    heap = pyodide._module.HEAPU8;
    for (const [t, at, n] of c.outputs) {
      if (!c.inPlace) {
        const to = addressOf(t);
        heap.copyWithin(to, at, at + n);
      }
      t.error = null;
    }
    direct.cRuns++;
    return undefined;
  }

  return {
    /** https://www.w3.org/TR/webnn/#api-mlcontext-createtensor */
    createTensor(m) {
      if (!direct) {
        return unwrap(glue.create_tensor(m.ctx, m.tid, m.desc, m.readable, m.writable, m.constant, m.data || null));
      }
      const index = direct.free.length ? direct.free.pop() : direct.next++;
      try {
        direct.table = unwrap(glue.create_tensor(m.ctx, m.tid, m.desc, m.readable, m.writable, m.constant,
          m.data || null, index));
      } catch (e) {
        direct.free.push(index);
        throw e;
      }
      const n = byteLengthOf(JSON.parse(m.desc));
      direct.tensors.set(m.tid, {ctx: m.ctx, index, n, error: null});
      return undefined;
    },

    /** https://www.w3.org/TR/webnn/#api-mlcontext-writetensor */
    write(m) {
      try {
        if (direct) {
          const t = liveTensor(m.ctx, m.tid);
          if (m.data.byteLength !== t.n) throw sizeMismatch('writeTensor', t, m.data.byteLength);
          pyodide._module.HEAPU8.set(m.data, addressOf(t));
          t.error = null;
        } else {
          const address = valueOrThrow(glue.write_tensor(m.ctx, m.tid, m.data.byteLength));
          pyodide._module.HEAPU8.set(m.data, address);
        }
        return undefined;
      } finally {
        if (m.recycle) recycled.push(m.data.buffer);
      }
    },

    /** https://www.w3.org/TR/webnn/#api-mlcontext-dispatch */
    dispatch(m) {
      if (!direct) return valueOrThrow(glue.dispatch(m.ctx, m.gid, m.inputs, m.outputs));
      const key = `${m.ctx} ${m.gid} ${m.inputs} ${m.outputs}`;
      let bound = direct.bound.get(key);
      if (bound === undefined) {
        const id = direct.nextBound++;
        const inC = valueOrThrow(direct.bind(id, m.ctx, m.gid, m.inputs, m.outputs));
        if (direct.bound.size >= BOUND_MAX) direct.bound.clear();
        // the output tensors' records: alive as long as the binding (every destroy forgets all bindings)
        bound = {id, outputs: Object.values(JSON.parse(m.outputs)).map((tid) => direct.tensors.get(tid)),
          c: inC === 1 ? cCall(JSON.parse(glue.bound_c(id))) : null};
        direct.bound.set(key, bound);
      }
      if (bound.c) return runC(bound);
      const failed = direct.run(bound.id);
      // reads of the outputs reject with a dispatch's error until their next write or a dispatch that succeeds
      // (worker_host.WorkerHost.run_bound)
      const error = failed === undefined ? null : JSON.parse(failed);
      const onOutputs = outputError(error);
      for (const t of bound.outputs) t.error = onOutputs;
      if (error) throw error;
      return undefined;
    },

    /** https://www.w3.org/TR/webnn/#api-mlcontext-readtensor */
    read(m) {
      let address;
      if (direct) {
        const t = liveTensor(m.ctx, m.tid);
        if (t.error) throw t.error;
        if (m.n !== t.n) throw sizeMismatch('readTensor', t, m.n);
        address = addressOf(t);
      } else {
        address = valueOrThrow(glue.read_tensor(m.ctx, m.tid, m.n));
      }
      const buffer = heapBytes(address, m.n, m.into);
      return {value: buffer, transfer: [buffer]};
    },

    /** A tensor destroyed: its record and every binding forgotten. */
    forgetTensor(tid) {
      if (!direct) return;
      forget(tid);
      forgetBindings();
    },

    /** A context destroyed: its tensors' records and every binding forgotten. */
    forgetContext(ctx) {
      if (!direct) return;
      for (const [tid, t] of direct.tensors) if (t.ctx === ctx) forget(tid);
      forgetBindings();
    },

    forgetBindings,

    /** A split dispatch's outputs (JSON of name -> tensor id) carry its error, as dispatch() sets them. */
    outputsDone(outputs, error) {
      if (!direct) return;
      const onOutputs = outputError(error);
      for (const tid of Object.values(JSON.parse(outputs))) {
        const t = direct.tensors.get(tid);
        if (t) t.error = onOutputs;
      }
    },

    /** The staging buffers written since the last call, to hand back to the page. */
    takeRecycled() {
      const out = recycled;
      recycled = [];
      return out;
    },

    /** Dispatches made as one C call from JavaScript (direct mode with the compiled plan). */
    cRuns: () => (direct ? direct.cRuns : 0),
  };
}
