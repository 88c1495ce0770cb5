// Which execution worker runs a new context: contexts on different workers run concurrently, each worker on a
// core of its own.  The runtime boots the first worker (runtime.js); a second context created while
// every worker already runs a live context gets a worker of its own, up to `workers` of them
// (WEBNN_POLYFILL_CONFIG.workers; default: 2, or 1 where the machine has one core or the engine runs in this
// thread).  Each further worker is a Pyodide with NumPy and the core: measured on this project's 2-core machine
// in Chromium, about 40 MB more and 1-3 s of one core to start, paid once, when the second context is created.
// A 'low-power' context never starts one: it shares the least busy worker.  A context stays on its worker for
// its whole life (its tensors and graphs live there).

import {WorkerClient} from './rpc.js';
import {engineThread} from './spawn.js';
import {configValue, liveConfig, switchesOf, workerSwitchOn} from '../switches.js';

const pools = new WeakMap();

/** How many workers contexts may spread over: the config's `workers`, else 2 where there are 2+ cores. */
export function workerLimit(config) {
  if (engineThread() !== 'worker') return 1;
  const given = configValue(config, 'workers');
  if (given !== undefined && given !== null) return Math.max(1, Math.floor(Number(given)) || 1);
  const cores = typeof navigator !== 'undefined' && navigator.hardwareConcurrency ? navigator.hardwareConcurrency : 1;
  return Math.min(2, cores);
}

class WorkerPool {
  constructor(runtime) {
    this.runtime = runtime;
    this.extra = [];  // workers started for contexts, after the runtime's own
    this.contexts = new Map();  // worker -> live contexts on it
    this.queue = Promise.resolve();  // one choice at a time: two createContext() calls never pick the same idle one
    this.links = new Map();  // worker -> its split peer, both ways
  }

  #live(w) { return this.contexts.get(w) || 0; }

  async #start() {
    const rt = this.runtime;
    const worker = new WorkerClient(rt.config.workerURL, null, (reason) => {
      this.extra = this.extra.filter((w) => w !== worker);
      this.contexts.delete(worker);
      for (const fn of [...rt.lostListeners]) fn(worker, reason);
    }, rt.config);
    try {
      await worker.start(rt.engineInit());
    } catch (e) {
      worker.terminate(`the second WebNN worker could not start: ${e && e.message ? e.message : e}`);
      throw e;
    }
    this.extra.push(worker);
    return worker;
  }

  async #choose(options) {
    const first = await this.runtime.boot();
    const workers = [first, ...this.extra].filter((w) => !w.dead);
    const idle = workers.find((w) => !this.#live(w));
    if (idle) return idle;
    if (options.powerPreference !== 'low-power' && workers.length < workerLimit(this.runtime.config)) {
      try {
        return await this.#start();
      } catch (e) {
        // the first worker still runs every context: slower, never wrong
        if (typeof console !== 'undefined') console.warn(`[webnn-polyfill] ${e && e.message ? e.message : e}`);
      }
    }
    return workers.reduce((a, b) => (this.#live(b) < this.#live(a) ? b : a));
  }

  /** The worker for a new context with these options, counted as running it until `release`. */
  acquire(options) {
    const chosen = this.queue.then(() => this.#choose(options)).then((w) => {
      this.contexts.set(w, this.#live(w) + 1);
      return w;
    });
    this.queue = chosen.catch(() => {});
    return chosen;
  }

  release(worker) {
    const n = this.#live(worker);
    if (n > 1) this.contexts.set(worker, n - 1);
    else this.contexts.delete(worker);
  }

  /** The worker that runs the other part of `worker`'s split graphs (engine/split.js): another worker of
   *  the pool, started if there are fewer than `workers`, linked to `worker` by a MessageChannel once; null
   *  when there can be none. */
  peer(worker) {
    const chosen = this.queue.then(() => this.#peer(worker));
    this.queue = chosen.catch(() => {});
    return chosen;
  }

  async #peer(worker) {
    const linked = this.links.get(worker);
    if (linked && !linked.dead) return linked;
    const rt = this.runtime;
    await rt.boot();
    let other = this.workers().find((w) => w !== worker && !this.links.has(w));
    if (!other && this.workers().length < workerLimit(rt.config)) {
      try {
        other = await this.#start();
      } catch (e) {
        if (typeof console !== 'undefined') console.warn(`[webnn-polyfill] ${e && e.message ? e.message : e}`);
      }
    }
    if (!other || worker.dead) return null;
    const {port1, port2} = new MessageChannel();
    worker.post('link', {port: port1}, [port1]);
    other.post('link', {port: port2}, [port2]);
    this.links.set(worker, other);
    this.links.set(other, worker);
    const pool = this;
    rt.lostListeners.add(function lost(w) {
      if (w !== worker && w !== other) return;
      rt.lostListeners.delete(lost);
      pool.links.delete(worker);
      pool.links.delete(other);
      (w === worker ? other : worker).post('peerLost', {});
    });
    return other;
  }

  /** Every worker running, the runtime's own first. */
  workers() {
    const first = this.runtime.worker;
    return [first, ...this.extra].filter((w) => w && !w.dead);
  }
}

function poolOf(runtime) {
  let pool = pools.get(runtime);
  if (!pool) pools.set(runtime, pool = new WorkerPool(runtime));
  return pool;
}

/** The worker a new context with `options` runs on (see above). */
export function acquireWorker(runtime, options) {
  return poolOf(runtime).acquire(options);
}

/** A context on `worker` was destroyed, lost or collected. */
export function releaseWorker(runtime, worker) {
  poolOf(runtime).release(worker);
}

// Opt-in (`split: true`): it pays for a graph with enough work per part, while nothing else runs; a matmul over
// 512 rows (a batch of 512) split over the two cores of a loaded machine runs slower than on one.
function switchedOff(runtime) {
  const live = liveConfig();
  const given = 'split' in live ? configValue(live, 'split') : configValue(runtime.config, 'split');
  if (given !== true) return true;
  return !workerSwitchOn(switchesOf(configValue(runtime.config, 'workerURL')), 'split');
}

/**
 * What a build asks of the worker for one graph over both cores: {parts: 2} (and `minFlops`, the config's
 * splitMinFlops, for tests), or null: split off (config `split` not true, read at each build, or the worker
 * URL's ?split=0), a 'low-power' context, or a single worker.
 */
export function splitRequest(runtime, options) {
  if ((options && options.powerPreference === 'low-power') || workerLimit(runtime.config) < 2) return null;
  if (switchedOff(runtime)) return null;
  const live = liveConfig();
  const minFlops = configValue('splitMinFlops' in live ? live : runtime.config, 'splitMinFlops');
  return {parts: 2, ...(typeof minFlops === 'number' ? {minFlops} : {})};
}

/** The worker built graph `gid` for a part of its batch: find its peer (starting one, once: a Pyodide boot)
 *  and have the part graph built there too.  Never fails the build: without a peer every part runs on `worker`. */
export async function linkSplit(runtime, worker, raw, gid) {
  let peer = null;
  try {
    peer = await poolOf(runtime).peer(raw);
  } catch (e) {
    peer = null;
  }
  return worker.request('splitPeer', {gid, peer: !!peer});
}

// counters that add up over workers; the rest (native, blas) are the first worker's
const SUMMED = ['graphs', 'tensors', 'tensorBytes', 'constantBytes', 'weightBytes', 'planBytes', 'engineBytes',
  'wasmBytes', 'pyObjects', 'mallocArena', 'mallocInUse',
  'mallocFree', 'splitGraphs', 'splitPeerGraphs', 'splitServed', 'splitPartsOnPeer', 'splitPartsHere', 'adopted',
  'cRuns'];

/** webnnPolyfill.workerStats(): the first worker's stats, counters summed over every worker (left out when a
 *  worker could not give one), `workers` running. */
export async function poolStats(runtime) {
  await runtime.boot();
  const clients = poolOf(runtime).workers();
  const all = await Promise.all(clients.map((w) => w.request('stats', {})));
  // page-side: staging buffers reused (rpc.js)
  const out = {...all[0], workers: all.length, stagingReused: clients.reduce((sum, w) => sum + w.stagingReused, 0),
    // the page's own Pyodide (the builder's validation): its WebAssembly memory, 0 before it started
    pageHeapBytes: runtime.pageHeapBytes()};
  for (const key of SUMMED) {
    if (all.every((s) => typeof s[key] === 'number')) out[key] = all.reduce((sum, s) => sum + s[key], 0);
    else delete out[key];
  }
  const unread = all.map((s) => s.memoryError).filter(Boolean);
  if (unread.length) out.memoryError = unread.join('; ');
  return out;
}
