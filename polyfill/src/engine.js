// The execution engine: its own Pyodide with NumPy and py_core; handles one message at a time, in order,
// which is what orders writes, dispatches and reads on each tensor (the MLTensor timeline).
// It runs in the execution worker (worker.js), or, where a scope cannot start a nested worker (a service
// worker; a shared worker in Chromium), in that scope's own thread behind a MessageChannel (spawn.js): the
// same messages, transfers and order either way.

import {bootPyodide} from './boot.js';
import {installWheel} from './wheels.js';
import {createSplit} from './split.js';

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
    const env = {};
    if (switches.get('compiler') === '0') env.PYODIDE_WEBNN_COMPILER = '0';
    if (switches.get('native') === '0') env.PYODIDE_WEBNN_NATIVE = '0';
    // The page stores the snapshot (of a bare interpreter); a snapshot carries its environment, so the
    // switches boot without one.
    const plain = !Object.keys(env).length;
    const booted = await bootPyodide({indexURL: msg.pyodideURL, lockFileURL: msg.lockFileURL, env,
      // a snapshot made here goes to the page, which stores it (snapshot.js)
      snapshot: {use: plain, make: plain, store: !msg.handoff}, numpy: true,
      wheels: [{url: msg.coreWheelURL, sha256: msg.coreWheelSha256}], unpack: switches.get('unpack') !== '0',
      mark: (stage, info) => {
        stages[stage] = Math.round(performance.now() - t0);
        if (stage !== 'runtime') return;
        const what = msg.handOver || {};
        handOver(msg.handoff, !plain ? {} : {...info, wasmModule: what.module ? info.wasmModule : null,
          snapshotBytes: info.snapshot === 'made' || what.cachedSnapshot ? info.snapshotBytes : null});
        progress('worker-runtime', 'Pyodide started in the worker');
      }});
    pyodide = booted.py;
    progress('worker-numpy', `NumPy installed (${booted.numpy})`);
    pyodide.runPython('import numpy');  // timed apart from the core's own imports
    stages.numpyImport = Math.round(performance.now() - t0);
    glue = pyodide.pyimport('py_core.bridge.pyodide_glue');
    stages.core = Math.round(performance.now() - t0);
    progress('worker-core', 'core loaded');
    return {ok: true, snapshot: booted.snapshot, numpy: booted.numpy, stages};
  }

  // The page's Pyodide starts once this one runs, from what this one has: the compiled pyodide.asm.wasm and the
  // memory snapshot of the bare interpreter (of an environment-free boot only: a snapshot carries its
  // environment), sent on the page's own port (a message it cannot read fails there, not on the engine's).
  function handOver(port, {snapshot, snapshotBytes = null, wasmModule = null}) {
    if (!port) return;
    // Two messages, always (the page waits for both): one a browser may fail to read (Firefox, at times, a
    // WebAssembly.Module) costs only that part. A snapshot made here is stored by the page (`made`).
    const parts = [{snapshot: snapshotBytes, made: snapshot === 'made'}, {module: wasmModule}];
    for (const part of parts) {
      try {
        port.postMessage(part);
      } catch (e) {
        console.warn(`WebNN polyfill: the page's Pyodide starts without a part of the worker's: ${e && e.message}`);
        port.postMessage({});
      }
    }
    port.close();
  }

  // Model files (the gallery's .tflite) turned into a recorded WebNN program here, in the engine's Pyodide:
  // the loader's pure-Python wheels (tflite, flatbuffers: [{url, sha256}], checked) are installed on first use.
  let modelLoader = null;
  async function loadModel(msg) {
    if (msg.format !== 'tflite') throw {name: 'NotSupportedError', message: `no loader for ${msg.format} models`};
    if (!modelLoader) {
      const installing = Promise.all((msg.wheels || []).map((w) => installWheel(pyodide, w.url, w.sha256)))
        .then(() => pyodide.pyimport('py_core.bridge.model_loader'));
      modelLoader = installing;
      installing.catch(() => { if (modelLoader === installing) modelLoader = null; });
    }
    let loader;
    try {
      loader = await modelLoader;
    } catch (e) {
      // a wheel that failed its sha256 (SecurityError) or could not be fetched: this request fails, the engine
      // and its graphs carry on (an Error here would be taken for a failure of the runtime itself)
      throw {name: e && e.name === 'SecurityError' ? 'SecurityError' : 'NetworkError',
        message: `the model loader could not be installed: ${e && e.message ? e.message : e}`};
    }
    const t0 = performance.now();
    const reply = unwrap(loader.record_tflite(new Uint8Array(msg.bytes), msg.name));
    let json;
    let weights;
    try {
      json = reply.get(0);
      weights = takeBytes(reply.get(1));  // the one copy out of the WebAssembly heap
    } finally {
      reply.destroy();
    }
    return {value: {json, weights, ms: Math.round(performance.now() - t0)}, transfer: [weights]};
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

  // Copy the bytes of a Python memoryview out of the WebAssembly heap, once, into a new ArrayBuffer.
  function takeBytes(proxy) {
    const buf = proxy.getBuffer('u8');
    try {
      return buf.data.slice().buffer;
    } finally {
      buf.release();
      proxy.destroy();
    }
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
    const names = JSON.stringify(msg.inputs.map((m) => m.name));
    // a split graph (split.js) is built for a part of its batch: its compute() runs every part here
    const result = unwrap((split.has(msg.gid) ? split.glue() : glue).compute(msg.ctx, msg.gid, names, bufs));
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

  // one graph over both cores (split.js): a batch-separable graph runs half here, half on the peer worker
  const split = createSplit({pyodide: () => pyodide, glue: () => glue, unwrap, switches});

  const handlers = {
    init,
    build: async (m) => {
      const splitting = m.split && split.on;
      const info = splitting ? split.build(m)
        : unwrap(glue.build(m.ctx, m.gid, m.graph, m.constIds, m.buffers, m.constantTensors));
      await maybeLoadBlas(info);
      return splitting ? split.built(m, info) : info;
    },
    link: (m) => split.link(m.port),
    splitPeer: (m) => split.attach(m),
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
    dispatch: (m) => (split.has(m.gid) ? split.dispatch(m)
      : valueOrThrow(glue.dispatch(m.ctx, m.gid, m.inputs, m.outputs))),
    read: (m) => {
      const buffer = heapBytes(valueOrThrow(glue.read_tensor(m.ctx, m.tid, m.n)), m.n, m.into);
      return {value: buffer, transfer: [buffer]};
    },
    compute,
    loadModel,
    destroyTensor: (m) => unwrap(glue.destroy_tensor(m.tid)),
    destroyGraph: (m) => { split.forget(m.gid); return unwrap(glue.destroy_graph(m.gid)); },
    destroyContext: (m) => { split.forgetContext(m.ctx); return unwrap(glue.destroy_context(m.ctx)); },
    stats: () => ({...JSON.parse(unwrap(glue.stats())), blas, ...memory(), ...split.stats()}),
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
    let batch = Array.isArray(message) ? message : [message];
    // the split peer's loss is handled at once: a split dispatch in the queue may be waiting for that peer
    if (batch.some((m) => m && m.type === 'peerLost')) {
      split.peerLost();
      batch = batch.filter((m) => !m || m.type !== 'peerLost');
      if (!batch.length) return;
    }
    batch.forEach((m, i) => queue.push([m, i === batch.length - 1]));
    if (!pumping) pump();
  };
}
