// The execution engine: its own Pyodide with NumPy and py_core; handles one message at a time, in order,
// which is what orders writes, dispatches and reads on each tensor (the MLTensor timeline).
// It runs in the execution worker (worker.js), or, where a scope cannot start a nested worker (a service
// worker; a shared worker in Chromium), in that scope's own thread behind a MessageChannel (spawn.js): the
// same messages, transfers and order either way.

import {installNumpy, installWheel} from './wheels.js';
import {importPyodide} from './load-pyodide.js';
import {startPyodide} from './snapshot.js';

/**
 * An engine answering the rpc.js protocol. `post(message, transfer)` sends to the client, `close()` ends the
 * engine's thread or channel after a fatal error; `switches` are URLSearchParams (see below).
 * Returns `receive(message)`, which queues one request.
 */
export function createEngine({post, close, switches}) {
  let glue = null;
  let pyodide = null;
  const queue = [];
  let pumping = false;

  function progress(stage, message) {
    post({type: 'progress', stage, message});
  }

  // Worker URL switches for comparisons: ?compiler=0 runs graphs as built (no py_core.compiler passes),
  // ?native=0 keeps the C kernels (py_core/kernels/native) off, ?blas=0 never loads SciPy's BLAS, ?unpack=0
  // installs NumPy and the core wheel with loadPackage (polyfill/src/wheels.js). Read from the worker script's
  // own URL (worker.js), which may run from a blob URL that imports it (polyfill/src/spawn.js).
  let blas = switches.get('blas') === '0' ? 'off' : 'idle';

  // A graph with enough product work asks for SciPy's OpenBLAS sgemm when the C kernels are off or missing:
  // load it once (19 MB), then switch.
  async function maybeLoadBlas(info) {
    if (blas !== 'idle' || !info || !info.get('wantsBlas')) return;
    blas = 'loading';
    progress('blas-loading', 'loading SciPy BLAS for a graph with large matrix products (once per page)');
    try {
      await pyodide.loadPackage('scipy', {messageCallback: () => {}});
      unwrap(glue.enable_blas());
      blas = 'on';
      progress('blas-ready', 'SciPy BLAS ready');
    } catch (e) {
      blas = 'off';  // einsum stays: slower, same results
      progress('blas-ready', 'SciPy BLAS unavailable; matrix products stay on NumPy');
      const why = e && e.message ? e.message : e;
      console.warn(`WebNN polyfill: SciPy BLAS unavailable, matrix products stay on NumPy: ${why}`);
    }
  }

  async function init(msg) {
    // the worker's own clock, since its first line ran: the page's stage times lag while its thread is busy
    const t0 = performance.now();
    const stages = {};
    const mark = (stage) => { stages[stage] = Math.round(performance.now() - t0); };
    const {loadPyodide, version} = await importPyodide(msg.pyodideURL);
    mark('script');
    const env = {};
    if (switches.get('compiler') === '0') env.PYODIDE_WEBNN_COMPILER = '0';
    if (switches.get('native') === '0') env.PYODIDE_WEBNN_NATIVE = '0';
    // The page stores the snapshot (of a bare interpreter); a snapshot carries its environment, so the
    // switches boot without one.
    const started = await startPyodide(loadPyodide, version,
      {indexURL: msg.pyodideURL, ...(msg.lockFileURL ? {lockFileURL: msg.lockFileURL} : {}),
        stdout: () => {}, stderr: () => {}, env}, {use: !Object.keys(env).length});
    pyodide = started.py;
    mark('runtime');
    progress('worker-runtime', 'Pyodide started in the worker');
    // NumPy and the core wheel fetched and unpacked concurrently
    const unpack = {unpack: switches.get('unpack') !== '0'};
    const [numpy] = await Promise.all([installNumpy(pyodide, msg.pyodideURL, unpack),
      installWheel(pyodide, msg.coreWheelURL, msg.coreWheelSha256, unpack)]);
    mark('packages');
    progress('worker-numpy', `NumPy installed (${numpy})`);
    glue = pyodide.pyimport('py_core.bridge.pyodide_glue');
    mark('core');
    progress('worker-core', 'core loaded');
    return {ok: true, snapshot: started.snapshot, numpy, stages};
  }

  // The worker's memory for stats: the WebAssembly memory's size (it only grows), the bytes malloc has handed out
  // and not freed (dlmalloc's mallinfo: uordblks), and how many objects CPython's collector tracks (this Pyodide
  // has no pymalloc, so sys.getallocatedblocks() is 0).
  function memory() {
    const m = pyodide._module;
    const out = {wasmBytes: m.HEAPU8.buffer.byteLength,
      pyObjects: pyodide.runPython('import gc; len(gc.get_objects())')};
    if (typeof m._mallinfo === 'function' && typeof m._calloc === 'function') {
      const p = m._calloc(1, 64);  // struct mallinfo: 10 size_t (4 bytes in wasm32)
      try {
        m._mallinfo(p);
        const v = new Uint32Array(m.HEAPU8.buffer, p, 10);
        Object.assign(out, {mallocArena: v[0], mallocInUse: v[7], mallocFree: v[8]});
      } finally {
        m._free(p);
      }
    }
    return out;
  }

  // The bytes at `address` in the WebAssembly heap: copied into `into` (a staging buffer the page lent) or into a
  // new ArrayBuffer, once.  The heap's view is looked up each time: it changes when the memory grows.
  function heapBytes(address, n, into) {
    const heap = pyodide._module.HEAPU8;
    if (!into) return heap.slice(address, address + n).buffer;
    into.set(heap.subarray(address, address + n));
    return into.buffer;
  }

  // Staging buffers of writes (rpc.js), handed back with the next replies
  let recycled = [];

  // The hot path's glue calls (write, dispatch, read) return their value, or their error as a JSON string.
  function valueOrThrow(reply) {
    if (typeof reply === 'string') throw JSON.parse(reply);
    return reply;
  }

  // Unpack [error-json, result] from a glue call; throws a plain {name, message} object on error.
  function unwrap(reply) {
    try {
      const err = reply.get(0);
      if (err) throw JSON.parse(err);
      return reply.get(1);
    } finally {
      reply.destroy();
    }
  }

  function compute(msg) {
    const bytesOf = (m) => new Uint8Array(m.buffer, m.byteOffset, m.length * globalThis[m.ctor].BYTES_PER_ELEMENT);
    const bufs = msg.inputs.map(bytesOf);
    const result = unwrap(glue.compute(msg.ctx, msg.gid, JSON.stringify(msg.inputs.map((m) => m.name)), bufs));
    try {
      const names = JSON.parse(result.get(0));
      const views = result.get(1);
      try {
        names.forEach((name, i) => {
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

  const handlers = {
    init,
    build: async (m) => {
      const info = unwrap(glue.build(m.ctx, m.gid, m.graph, m.constIds, m.buffers, m.constantTensors));
      await maybeLoadBlas(info);
      return info;
    },
    createTensor: (m) => unwrap(glue.create_tensor(m.ctx, m.tid, m.desc, m.readable, m.writable, m.constant,
      m.data || null)),
    write: (m) => {
      try {
        const address = valueOrThrow(glue.write_tensor(m.ctx, m.tid, m.data.byteLength));
        pyodide._module.HEAPU8.set(m.data, address);
        return undefined;
      } finally {
        if (m.recycle) recycled.push(m.data.buffer);
      }
    },
    dispatch: (m) => valueOrThrow(glue.dispatch(m.ctx, m.gid, m.inputs, m.outputs)),
    read: (m) => {
      const buffer = heapBytes(valueOrThrow(glue.read_tensor(m.ctx, m.tid, m.n)), m.n, m.into);
      return {value: buffer, transfer: [buffer]};
    },
    compute,
    destroyTensor: (m) => unwrap(glue.destroy_tensor(m.tid)),
    destroyGraph: (m) => unwrap(glue.destroy_graph(m.gid)),
    destroyContext: (m) => unwrap(glue.destroy_context(m.ctx)),
    stats: () => ({...JSON.parse(unwrap(glue.stats())), blas, ...memory()}),
  };

  async function handle(msg) {
    const handler = handlers[msg.type];
    try {
      if (!handler) throw {name: 'UnknownError', message: `unknown worker message ${msg.type}`};
      if (msg.type !== 'init' && !glue) throw {name: 'InvalidStateError', message: 'the worker is not initialized'};
      let result = await handler(msg);
      let transfer = [];
      if (result && typeof result === 'object' && 'transfer' in result) {
        transfer = result.transfer;
        result = result.value;
      }
      if (result && typeof result === 'object' && typeof result.destroy === 'function') {
        const proxy = result;
        result = proxy.toJs({dict_converter: Object.fromEntries});
        proxy.destroy();
      }
      if (!msg.quiet) reply({id: msg.id, result: result === undefined ? null : result}, transfer);
    } catch (e) {
      if (e && typeof e === 'object' && 'name' in e && 'message' in e && !(e instanceof Error)) {
        reply({id: msg.id, error: {name: e.name, message: e.message}, ...(msg.quiet ? {quiet: msg.type} : {})});
        return;
      }
      // Anything else is a failure of the runtime itself (e.g. a WebAssembly trap): report it and stop, so
      // the page marks this worker's contexts lost and starts a fresh worker for new ones.
      // A Python exception that escaped the glue is an engine bug: its traceback goes to this worker's console,
      // the page gets a message without Python text (py_core.errors.internal_error does the same in Python).
      const python = e && typeof e === 'object' && e.constructor && e.constructor.name === 'PythonError';
      if (python) console.error(`pyodide-webnn: ${msg.type}: ${e.message}`);
      const detail = python ? "internal error in the WebNN engine (details in the worker's console)"
        : (e && e.message ? e.message : String(e));
      const message = `${msg.type} failed: ${detail}`;
      reply({id: msg.id, error: {name: msg.type === 'init' ? 'NotSupportedError' : 'OperationError', message},
        ...(msg.quiet ? {quiet: msg.type} : {})});
      if (msg.type !== 'init') {
        reply({type: 'fatal', message});
        flush();
        close();
      }
    }
  }

  // Replies wait in `outbox` until the messages that arrived together (one batch from rpc.js) are all handled,
  // then leave as one message (an array when there are several).
  let outbox = [];
  let outTransfer = [];
  function reply(message, transfer = []) {
    outbox.push(message);
    if (transfer.length) outTransfer.push(...transfer);
  }
  function flush() {
    if (recycled.length) {
      outbox.push({type: 'recycle', buffers: recycled});
      outTransfer.push(...recycled);
      recycled = [];
    }
    if (!outbox.length) return;
    const batch = outbox.length === 1 ? outbox[0] : outbox;
    const transfer = outTransfer;
    outbox = [];
    outTransfer = [];
    post(batch, transfer);
  }

  async function pump() {
    pumping = true;
    while (queue.length) {
      const [msg, last] = queue.shift();
      await handle(msg);
      if (last || !queue.length) flush();
    }
    pumping = false;
  }

  return (message) => {
    // an array is a batch: its replies go back together, after its last message
    const batch = Array.isArray(message) ? message : [message];
    batch.forEach((m, i) => queue.push([m, i === batch.length - 1]));
    if (!pumping) pump();
  };
}
