// The execution engine: its own Pyodide with NumPy and py_core; handles one message at a time, in order,
// which is what orders writes, dispatches and reads on each tensor (the MLTensor timeline).
// It runs in the execution worker (worker.js), or, where a scope cannot start a nested worker (a service
// worker; a shared worker in Chromium), in that scope's own thread behind a MessageChannel (runtime/spawn.js):
// the same messages, transfers and order either way.
//
// The pieces: start.js boots the Pyodide ('init'), direct.js is the tensor timeline's hot path, compute.js the
// whole-graph path, split.js one graph over both cores, model.js the model loader, queue.js the message loop.

import {workerSwitchOn} from '../switches.js';
import {computeGraph} from './compute.js';
import {memoryStats, unwrap} from './glue.js';
import {createTimeline} from './direct.js';
import {createModelLoader} from './model.js';
import {createMessageLoop} from './queue.js';
import {createSplit} from './split.js';
import {startEngine} from './start.js';

/**
 * An engine answering the runtime/rpc.js protocol. `post(message, transfer)` sends to the client, `close()` ends
 * the engine's thread or channel after a fatal error; `switches` are the worker URL's URLSearchParams
 * (switches.js); `boot` is boot/for-engine.js. Returns `receive(message)`, which queues one request.
 */
export function createEngine({post, close, switches, boot}) {
  let pyodide = null;
  let glue = null;  // py_core.bridge.pyodide_glue, once booted
  let timeline = null;  // direct.js
  let filesPending = null;  // NumPy's files being written after the init reply (boot/boot.js deferNumpy), or null
  // SciPy's OpenBLAS: 'idle' (not needed yet), 'loading', 'on' or 'off'
  let blas = workerSwitchOn(switches, 'blas') ? 'idle' : 'off';

  function progress(stage, message) {
    post({type: 'progress', stage, message});
  }

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
    const started = await startEngine(msg, {switches, progress, boot});
    pyodide = started.pyodide;
    timeline = createTimeline({pyodide, glue: started.glue, direct: started.direct});
    glue = started.glue;
    if (started.numpyLater) {
      // every request after this one waits for NumPy's files (gate below)
      filesPending = started.numpyLater.then(() => { filesPending = null; });
      // the engine cannot run a graph without them: it ends, and the page's createContext() rejects with why
      filesPending.catch((e) => {
        post({type: 'fatal', message: `the WebNN engine could not start: ${e && e.message ? e.message : e}`});
        close();
      });
    }
    return started.reply;
  }

  // one graph over both cores (split.js): a batch-separable graph runs half here, half on the peer worker
  // (in direct mode the output tensors' records carry a split dispatch's error, as dispatch() sets them)
  const split = createSplit({pyodide: () => pyodide, glue: () => glue, switches,
    outputsDone: (outputs, error) => timeline && timeline.outputsDone(outputs, error)});

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
    createTensor: (m) => timeline.createTensor(m),
    write: (m) => timeline.write(m),
    dispatch: (m) => (split.has(m.gid) ? split.dispatch(m) : timeline.dispatch(m)),
    read: (m) => timeline.read(m),
    compute: (m) => computeGraph(split.has(m.gid) ? split.glue() : glue, m),
    loadModel: createModelLoader(() => pyodide, boot.installWheel),
    destroyTensor: (m) => {
      timeline.forgetTensor(m.tid);
      return unwrap(glue.destroy_tensor(m.tid));
    },
    destroyGraph: (m) => {
      timeline.forgetBindings();
      split.forget(m.gid);
      return unwrap(glue.destroy_graph(m.gid));
    },
    destroyContext: (m) => {
      timeline.forgetContext(m.ctx);
      split.forgetContext(m.ctx);
      return unwrap(glue.destroy_context(m.ctx));
    },
    // cRuns: dispatches made as one C call from JavaScript (direct mode with the compiled plan)
    stats: () => ({...JSON.parse(unwrap(glue.stats())), blas, ...memoryStats(pyodide), cRuns: timeline.cRuns(),
      ...split.stats()}),
  };

  return createMessageLoop({handlers, post, close,
    ready: () => glue !== null,
    gate: (msg) => (filesPending && msg.type !== 'init' ? filesPending : null),
    // the staging buffers of writes go back to the page with the replies (runtime/rpc.js)
    extra: () => {
      const buffers = timeline ? timeline.takeRecycled() : [];
      return buffers.length ? {messages: [{type: 'recycle', buffers}], transfer: buffers} : null;
    },
    // the split peer's loss is handled at once: a split dispatch in the queue may be waiting for that peer
    urgent: (batch) => {
      if (!batch.some((m) => m && m.type === 'peerLost')) return batch;
      split.peerLost();
      return batch.filter((m) => !m || m.type !== 'peerLost');
    }});
}
