// The execution engine: its own Pyodide with NumPy and py_core; handles one message at a time, in order,
// which is what orders writes, dispatches and reads on each tensor (the MLTensor timeline).
// It runs in the execution worker (worker.js), or, where a scope cannot start a nested worker (a service
// worker; a shared worker in Chromium), in that scope's own thread behind a MessageChannel (spawn.js): the
// same messages, transfers and order either way.

import {bootPyodide} from './boot.js';
import {inFirefox} from './load-pyodide.js';
import {lastRelink} from './relink.js';
import {byteLengthOf} from './buffers.js';
import {installWheel} from './wheels.js';
import {stdlibUsed} from './stdlibpyc.js';
import {createSplit} from './split.js';

// Direct mode (#16 line 2: the 1-op write + dispatch + read round trip). writeTensor and readTensor call no
// Python: each tensor owns one array in the WebAssembly heap (py_core/bridge/worker_host.py keeps it alive and
// never moves it; a dispatch copies its outputs in, or hands over a large fresh array and records its address),
// and the heap addresses sit in a uint32 table in the heap itself, read here at each write and read.  A dispatch
// enters Python once, with one int, through bindings checked the first time they are seen.  The page's
// `direct: false` (WEBNN_POLYFILL_CONFIG.direct = false) or the worker URL's ?direct=0 switches it off: each
// write, dispatch and read then calls its glue function (write_tensor, dispatch, read_tensor).
const BOUND_MAX = 1024;  // as worker_host.WorkerHost.bind: both forget every binding at this many

/**
 * An engine answering the rpc.js protocol. `post(message, transfer)` sends to the client, `close()` ends the
 * engine's thread or channel after a fatal error; `switches` are URLSearchParams (see below).
 * Returns `receive(message)`, which queues one request.
 */
export function createEngine({post, close, switches}) {
  let glue = null;
  let pyodide = null;
  let direct = null;  // direct mode's state (see above), or null
  let filesPending = null;  // NumPy's files being written after the init reply (deferNumpy), or null
  const queue = [];
  let pumping = false;
  const BATCH_END = {};  // in `queue` after each batch's last message

  function progress(stage, message) {
    post({type: 'progress', stage, message});
  }

  // Worker URL switches for comparisons: ?compiler=0 runs graphs as built (no py_core.compiler passes),
  // ?native=0 keeps the C kernels (py_core/kernels/native) off, ?plan=0 runs every step from Python (no compiled
  // plan: py_core/compiler/plan.py), ?blas=0 never loads SciPy's BLAS, ?unzip=0
  // unpacks the wheels with CPython's zipfile instead of in JavaScript, ?sitecache=0 neither restores nor stores
  // site-packages with its .pyc in Cache Storage (polyfill/src/sitecache.js), ?stdlibcode=0 keeps the standard
  // library's compiled code out of it (polyfill/src/stdlibpyc.js), ?early=0 starts Pyodide's steps one
  // after another (boot.js startEarly: no early import, compile or cache reads), ?direct=0 writes, reads and
  // dispatches through Python (direct mode off, see above), ?unpack=0
  // installs NumPy and the core wheel with loadPackage (polyfill/src/wheels.js), ?prebuilt=0 starts CPython
  // where there is no cached snapshot instead of restoring the build's (polyfill/src/snapshot.js), nor the build's
  // NumPy snapshot, which ?numpysnapshot=0 alone leaves out (NumPy imported after the bare restore), ?coresnapshot=0
  // imports the core from its files where the snapshot came with it imported (boot.js dropStaleImports), ?defernumpy=0
  // writes NumPy's files before the init reply where NumPy came imported (boot.js deferNumpy; =1 after it, also in
  // Firefox, whose default is before). Read from the
  // worker script's own URL (worker.js), which may run from a blob URL that imports it (polyfill/src/spawn.js).
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
    if (switches.get('plan') === '0') env.PYODIDE_WEBNN_PLAN = '0';  // py_core/compiler/plan.py off
    // The page stores the snapshot (of a bare interpreter); a snapshot carries its environment, so the
    // switches boot without one.
    const plain = !Object.keys(env).length;
    // NumPy imported in the snapshot (relink.js); ?numpysnapshot=0: imported after the bare one's restore
    const numpyAsset = plain && switches.get('prebuilt') !== '0' && switches.get('numpysnapshot') !== '0'
      ? msg.numpySnapshotAsset || null : null;
    const booted = await bootPyodide({indexURL: msg.pyodideURL, lockFileURL: msg.lockFileURL, env,
      // a snapshot made here goes to the page, which stores it (snapshot.js)
      snapshot: {use: plain, make: plain, store: !msg.handoff,
        prebuilt: plain && switches.get('prebuilt') !== '0' ? msg.snapshotAsset || null : null, numpyAsset},
      numpy: true,
      wheels: [{url: msg.coreWheelURL, sha256: msg.coreWheelSha256}], unpack: switches.get('unpack') !== '0',
      unzip: switches.get('unzip') !== '0', siteCache: switches.get('sitecache') !== '0',
      // where NumPy comes imported its entry holds no .pyc of it (nothing compiled them): kept apart from the
      // entries a boot that imports NumPy stores and restores
      siteScope: numpyAsset ? 'worker-numpysnap' : 'worker',
      early: switches.get('early') !== '0', stdlibCode: switches.get('stdlibcode') !== '0',
      snapshotImports: switches.get('coresnapshot') !== '0',
      // NumPy's files written after the init reply where NumPy came imported (?defernumpy=0: before it, =1: after
      // it in Firefox too).  Not by default in Firefox: there the 13 MB site entry issued just before the first
      // graph was built was not yet written when a short visit (the bench's cold one) closed, and every later
      // visit unzipped NumPy again (3 runs of 3 rounds); nor did its cold start gain (1,669 against 1,543 ms)
      deferNumpy: switches.get('defernumpy') === '1' || (switches.get('defernumpy') !== '0' && !inFirefox()),
      mark: (stage, info) => {
        stages[stage] = Math.round(performance.now() - t0);
        const what = msg.handOver || {};
        // Restoring the NumPy snapshot, this Pyodide has no snapshot for the page's: the page's starts as soon as
        // the compiled module is known (its own restore then runs beside this one's), not after the restore
        if (stage === 'module' && numpyAsset && msg.handoff) {
          handOver(msg.handoff, {wasmModule: info.wasmModule});
          msg.handoff = null;
        }
        if (stage !== 'runtime') return;
        handOver(msg.handoff, !plain ? {} : {...info,
          snapshotBytes: fresh(info.snapshot) || what.cachedSnapshot ? info.snapshotBytes : null});
        progress('worker-runtime', 'Pyodide started in the worker');
      }});
    pyodide = booted.py;
    if (booted.numpySnapshot) {
      // a duration and a count, not times since the start
      const {ms, precompiled, at = {}} = lastRelink() || {};
      Object.assign(stages, {relinkMs: ms, relinkPrecompiled: precompiled});
      // the restore's steps on this clock: module factory called, module ready, heap restored (relinked)
      for (const [step, t] of Object.entries(at)) stages[`${step}At`] = Math.round(t - t0);
    }
    progress('worker-numpy', booted.numpyLater ? 'NumPy imported (its files still being written)'
      : `NumPy installed (${booted.numpy})`);
    pyodide.runPython('import numpy');  // timed apart from the core's own imports
    stages.numpyImport = Math.round(performance.now() - t0);
    // NumPy's files and .pyc for the next visit (sitecache.js), on their way before the core's import holds this
    // thread: stored after the graph was built, they had often not been written when a short visit ended
    let storeSite = booted.storeSite;
    const store = async (group) => {
      const {stored} = await storeSite([group]);
      stored.then((ok) => ok && progress('worker-site-stored', group));
    };
    if (storeSite) await store('numpy');
    glue = pyodide.pyimport('py_core.bridge.pyodide_glue');
    // a core that came imported with the build's snapshot has its C kernels still to load (make_snapshot.mjs)
    const kernels = pyodide.pyimport('py_core.kernels.native');
    try {
      kernels.ensure_loaded();
    } finally {
      kernels.destroy();
    }
    if (msg.direct !== false && switches.get('direct') !== '0') {
      // tensors: id -> {ctx, index (its entry in the table), n (bytes), error (of the last dispatch writing it)}
      direct = {table: unwrap(glue.enable_direct()), tensors: new Map(), free: [], next: 0,
        bound: new Map(), nextBound: 1, run: glue.run, bind: glue.bind, cRuns: 0};
    }
    if (storeSite) await store('wheels');  // the core wheel's, likewise
    if (booted.numpyLater) {
      // Every request after this one waits for NumPy's files (handle): no graph exists before they are written.
      // And for their entry's store to be under way, as above: a visit that closes once its graph ran (the
      // bench's) would otherwise leave the next one without it.
      filesPending = booted.numpyLater.then(async ({how, storeSite: prepared}) => {
        progress('worker-numpy-files', how);
        storeSite = prepared;
        await store('numpy').catch(() => {});  // (a failed store only costs the next visit)
        filesPending = null;
        store('wheels').catch(() => {});
      }, (e) => {
        throw new Error(`NumPy's files could not be installed: ${e && e.message ? e.message : e}`);
      });
    }
    stages.core = Math.round(performance.now() - t0);
    progress('worker-core', 'core loaded');
    return {ok: true, snapshot: booted.snapshot, numpySnapshot: booted.numpySnapshot, imported: booted.imported,
      numpy: booted.numpy,
      wheels: booted.wheels, stages,
      stdlibCode: stdlibUsed(pyodide)};
  }

  // a snapshot that did not come from Cache Storage (snapshot.js startPyodide)
  function fresh(snapshot) {
    return snapshot === 'made' || snapshot === 'prebuilt';
  }

  // The page's Pyodide starts once this one runs, from what this one has: the compiled pyodide.asm.wasm and the
  // memory snapshot of the bare interpreter (of an environment-free boot only: a snapshot carries its
  // environment), sent on the page's own port (a message it cannot read fails there, not on the engine's).
  function handOver(port, {snapshot, snapshotBytes = null, wasmModule = null}) {
    if (!port) return;
    // Two messages, always (the page waits for both): one a browser fails to read (a messageerror) costs only
    // that part. A snapshot new to the cache (made here, or the build's) is stored by the page (`made`).
    const parts = [{snapshot: snapshotBytes, made: fresh(snapshot)}, {module: wasmModule}];
    // the snapshot's 21 MB moved, not copied (50-70 ms of this thread in Chromium): this Pyodide has restored or
    // made it and keeps no use for them
    const whole = snapshotBytes && snapshotBytes.byteOffset === 0
      && snapshotBytes.byteLength === snapshotBytes.buffer.byteLength;
    const transfers = [whole ? [snapshotBytes.buffer] : [], []];
    for (const [i, part] of parts.entries()) {
      try {
        port.postMessage(part, transfers[i]);
      } catch (e) {
        console.warn(`WebNN polyfill: the page's Pyodide starts without a part of the worker's: ${e && e.message}`);
        port.postMessage({});
      }
    }
    // (not closed here: the page closes its end once both parts are read.  Closed right after the post, Firefox
    // failed, about one visit in two, to read the module on the page: a messageerror)
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

  // Direct mode: a live tensor's record, its bytes' address in the heap (the heap's views are looked up each
  // time: they change when the memory grows), and what happens to the records on create and destroy.
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
  function createTensor(m) {
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
  function dispatch(m) {
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
  }
  // what reads of a failed dispatch's outputs reject with (null: the dispatch succeeded)
  function outputError(error) {
    return error && {name: 'OperationError', message: `dispatch failed: ${error.message}`};
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
  function write(m) {
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
  }
  function read(m) {
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
  }

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
  // (in direct mode the output tensors' records carry a split dispatch's error, as dispatch() sets them)
  const split = createSplit({pyodide: () => pyodide, glue: () => glue, unwrap, switches, takeBytes,
    outputsDone: (outputs, error) => {
      if (!direct) return;
      const onOutputs = outputError(error);
      for (const tid of Object.values(JSON.parse(outputs))) {
        const t = direct.tensors.get(tid);
        if (t) t.error = onOutputs;
      }
    }});

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
    createTensor,
    write,
    dispatch: (m) => (split.has(m.gid) ? split.dispatch(m) : dispatch(m)),
    read,
    compute,
    loadModel,
    destroyTensor: (m) => {
      if (direct) {
        forget(m.tid);
        forgetBindings();
      }
      return unwrap(glue.destroy_tensor(m.tid));
    },
    destroyGraph: (m) => {
      forgetBindings();
      split.forget(m.gid);
      return unwrap(glue.destroy_graph(m.gid));
    },
    destroyContext: (m) => {
      if (direct) {
        for (const [tid, t] of direct.tensors) if (t.ctx === m.ctx) forget(tid);
        forgetBindings();
      }
      split.forgetContext(m.ctx);
      return unwrap(glue.destroy_context(m.ctx));
    },
    // cRuns: dispatches made as one C call from JavaScript (direct mode with the compiled plan)
    stats: () => ({...JSON.parse(unwrap(glue.stats())), blas, ...memory(), cRuns: direct ? direct.cRuns : 0,
      ...split.stats()}),
  };

  // One request: its reply (or error) queued for the next flush.  Returns a promise only when the handler is
  // asynchronous (init, build, loadModel); the timeline's calls are handled synchronously, with no await.
  function handle(msg) {
    if (filesPending && msg.type !== 'init') {
      return filesPending.then(() => handle(msg), (e) => failed(msg, e));
    }
    const handler = handlers[msg.type];
    let result;
    try {
      if (!handler) throw {name: 'UnknownError', message: `unknown worker message ${msg.type}`};
      if (msg.type !== 'init' && !glue) throw {name: 'InvalidStateError', message: 'the worker is not initialized'};
      result = handler(msg);
    } catch (e) {
      failed(msg, e);
      return null;
    }
    if (result && typeof result.then === 'function') {
      return result.then((value) => done(msg, value), (e) => failed(msg, e));
    }
    done(msg, result);
    return null;
  }

  function done(msg, value) {
    let result = value;
    let transfer = [];
    try {
      if (result && typeof result === 'object' && 'transfer' in result) {
        transfer = result.transfer;
        result = result.value;
      }
      if (result && typeof result === 'object' && typeof result.destroy === 'function') {
        const proxy = result;
        result = proxy.toJs({dict_converter: Object.fromEntries});
        proxy.destroy();
      }
    } catch (e) {
      failed(msg, e);
      return;
    }
    if (!msg.quiet) reply({id: msg.id, result: result === undefined ? null : result}, transfer);
  }

  function failed(msg, e) {
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

  // Handles what is queued, in order, synchronously until a handler has to wait; replies leave after the last
  // message of each batch (or when the queue runs dry).
  function pump() {
    pumping = true;
    while (queue.length) {
      const msg = queue.shift();
      if (msg === BATCH_END) continue;  // an empty batch
      const last = queue.length === 0 || queue[0] === BATCH_END;
      if (queue[0] === BATCH_END) queue.shift();
      const waiting = handle(msg);
      if (waiting) {
        waiting.then(() => {
          if (last) flush();
          pump();
        });
        return;
      }
      if (last) flush();
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
    queue.push(...batch);
    queue.push(BATCH_END);
    if (!pumping) pump();
  };
}
