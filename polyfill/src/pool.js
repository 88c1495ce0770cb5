// Which execution worker runs a new context: contexts on different workers run concurrently, each worker on a
// core of its own (#16 line 4).  The runtime boots the first worker (runtime.js); a second context created while
// every worker already runs a live context gets a worker of its own, up to `workers` of them
// (WEBNN_POLYFILL_CONFIG.workers; default: 2, or 1 where the machine has one core or the engine runs in this
// thread).  Each further worker is a Pyodide with NumPy and the core: measured on this project's 2-core machine
// in Chromium, about 40 MB more and 1-3 s of one core to start, paid once, when the second context is created.
// A 'low-power' context never starts one: it shares the least busy worker.  A context stays on its worker for
// its whole life (its tensors and graphs live there).

import {WorkerClient} from './rpc.js';
import {engineThread} from './spawn.js';

const pools = new WeakMap();

/** How many workers contexts may spread over: the config's `workers`, else 2 where there are 2+ cores. */
export function workerLimit(config) {
  if (engineThread() !== 'worker') return 1;
  const given = config && config.workers;
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
      await worker.request('init', rt.engineInit());
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

// counters that add up over workers; the rest (native, blas) are the first worker's
const SUMMED = ['graphs', 'tensors', 'tensorBytes', 'wasmBytes', 'pyObjects', 'mallocArena', 'mallocInUse',
  'mallocFree'];

/** webnnPolyfill.workerStats(): the first worker's stats, counters summed over every worker, `workers` running. */
export async function poolStats(runtime) {
  await runtime.boot();
  const clients = poolOf(runtime).workers();
  const all = await Promise.all(clients.map((w) => w.request('stats', {})));
  // page-side: staging buffers reused (rpc.js)
  const out = {...all[0], workers: all.length, stagingReused: clients.reduce((sum, w) => sum + w.stagingReused, 0)};
  for (const key of SUMMED) {
    if (all.every((s) => typeof s[key] === 'number')) out[key] = all.reduce((sum, s) => sum + s[key], 0);
  }
  return out;
}
