// Messaging with the execution worker: numbered requests, replies matched by id, transfer lists.
// The worker handles messages strictly in order, which is what gives MLTensor its timeline.
//
// Fewer messages per dispatch: the timeline calls a script makes in one go (writeTensor, dispatch,
// readTensor, ...) leave as ONE postMessage, an array, sent when the current microtasks are done; the worker
// answers a batch with one array of replies (engine/queue.js), and sends none for a fire-and-forget post() that
// succeeded.  Anything else (init, build, compute: large payloads, or buffers the caller handed over) is sent at
// once, after what is already queued, so the order never changes.  The config's `batch: false` sends every
// message alone (switches.js).
//
// Staging buffers: a fresh ArrayBuffer of a megabyte costs 0.5-0.7 ms before a byte is copied (the browser maps
// new pages for it; measured in Chromium and Firefox), several times the copy itself.  So the copy writeTensor
// must make goes into a staging buffer this client keeps: the worker copies it into its heap and hands it back
// with its next replies (a 'recycle' message), and the next write of that size reuses it.
// readTensor(tensor, outputData) lends one the same way for the worker to copy into.  Small buffers are not
// staged (a fresh one costs less than the bookkeeping); the config's `staging: false` stages nothing.
//
// Direct mode (engine/direct.js): the worker writes and reads tensors with no Python call; the config's
// `direct: false` or the worker URL's ?direct=0 switches it off: the client tells the engine in its 'init'.

import {errorFromJson} from '../api/errors.js';
import {configOn, configValue, liveConfig, switchesOf, workerSwitchOn} from '../switches.js';
import {lifelineName, watchLifeline} from './lifeline.js';
import {engineThread, spawnEngine} from './spawn.js';

// message types that may wait for the end of the microtask checkpoint: small, their buffers are our own copies
const BATCHED = new Set(['write', 'dispatch', 'read', 'createTensor', 'destroyTensor', 'destroyGraph',
  'destroyContext', 'stats']);

// buffers of at least this many bytes are staged; the pool keeps at most STAGED_PER_SIZE buffers of each size
// and STAGED_BYTES in all (what it would hold beyond that is left to the collector)
const STAGED_MIN = 64 << 10;
const STAGED_PER_SIZE = 4;
const STAGED_BYTES = 64 << 20;

// A Pyodide start that has not finished after this long has failed (config `bootTimeoutMs`).  Every download of
// it is bounded on its own (boot/fetches.js: a stalled one fails at once), so this only ends what nothing else
// notices; a cold start over a 5 Mbit/s link downloads about 40 MB (70 s) and a loaded 2-core machine adds
// tens of seconds of compiling: three minutes leaves room for both.
export const BOOT_LIMIT_MS = 180000;
// A nested worker's script runs within a second of its start even on a loaded 2-core machine or a 5 Mbit/s link
// (the script is 90 kB): one that has not in 10 s never will, and another is started, at most 3 in all
const WORKER_START_MS = 10000;
const WORKER_START_TRIES = 3;


/** The config's bound on a start, in ms (bootTimeoutMs, read at each start), else BOOT_LIMIT_MS. */
export function bootLimit(config) {
  const live = liveConfig();
  const given = Number(configValue('bootTimeoutMs' in live ? live : config, 'bootTimeoutMs'));
  return given > 0 ? given : BOOT_LIMIT_MS;
}

export class WorkerClient {
  constructor(url, onProgress, onLost, config = null) {
    this.url = url;
    this.lifeline = lifelineName();
    this.unwatch = () => {};
    this.engineURL = configValue(config, 'engineURL');
    this.spawns = 0;  // workers started for this client: more than 1 where one never ran its script
    this.startTimer = null;
    this.batching = configOn(config, 'batch');
    this.stagingOn = configOn(config, 'staging');
    this.direct = configOn(config, 'direct') && workerSwitchOn(switchesOf(url), 'direct');
    this.staged = new Map();  // byteLength -> ArrayBuffers the worker gave back
    this.stagedBytes = 0;
    this.stagingReused = 0;  // copies that went into a buffer the worker gave back (workerStats)
    this.outbox = [];  // messages waiting for the flush, and what they transfer
    this.transfers = [];
    this.pending = new Map();
    this.nextId = 1;
    this.dead = null;
    this.onProgress = onProgress;
    this.onLost = onLost;
    this.config = config;
    this.lastStage = 'the worker script';  // the last step the worker reported, for an error that names it
    // resolves once NumPy's files are written where the init reply came before them (boot/boot.js deferNumpy)
    this.filesWritten = new Promise((resolve, reject) => { this.files = {resolve, reject}; });
    this.filesWritten.catch(() => {});
    // whether the worker's script ran (it said so, or answered): until then what is sent waits in the outbox
    this.started = engineThread() !== 'worker';
    this.#spawn();
  }

  // The execution worker is started, and started again where its script has not run within WORKER_START_MS (its
  // download stalled, say): what is sent waits here until the script says it runs, so a worker that never ran
  // took nothing with it (the handoff port included), and the next one gets it all.
  #spawn() {
    this.spawns++;
    const worker = this.worker = spawnEngine(this.#scriptURL(), this.engineURL, this.lifeline);
    worker.onmessage = (e) => this.#receive(e.data);
    worker.onerror = (e) => {
      e.preventDefault && e.preventDefault();
      // a module worker whose script (or an import of it) cannot be loaded gets an error event with no message
      this.#die(this.started || e.message ? `the WebNN worker failed: ${e.message || 'script error'}`
        : `the WebNN worker script ${this.url} could not be loaded (or failed as it started)`);
    };
    worker.onmessageerror = () => this.#die('the WebNN worker sent a message that could not be read');
    if (!this.started) this.startTimer = setTimeout(() => this.#notStarted(worker), WORKER_START_MS);
  }

  // The worker script's URL for this start: a restart asks for it anew (a browser may hold the stalled first
  // download and make a second request for the same URL wait behind it)
  #scriptURL() {
    if (this.spawns < 2) return this.url;
    const [path, hash = ''] = this.url.split('#');
    return `${path}${path.includes('?') ? '&' : '?'}start=${this.spawns}${hash ? `#${hash}` : ''}`;
  }

  #notStarted(worker) {
    if (this.started || this.dead || worker !== this.worker) return;
    worker.onmessage = worker.onerror = worker.onmessageerror = null;
    worker.terminate();
    const waited = `${WORKER_START_MS / 1000} s`;
    if (this.spawns >= WORKER_START_TRIES) {
      this.#die(`the WebNN worker script ${this.url} did not run (${this.spawns} workers started, each given ${waited})`);
      return;
    }
    console.warn(`WebNN polyfill: the execution worker did not run its script within ${waited}; starting another`);
    this.#spawn();
  }

  #started() {
    this.started = true;
    clearTimeout(this.startTimer);
    this.#flush();
  }

  #receive(msg) {
    if (Array.isArray(msg)) {
      for (const m of msg) this.#receive(m);
      return;
    }
    if (!this.started) this.#started();
    if (msg.type === 'hello') return;
    if (msg.type === 'lifeline') {
      this.unwatch = watchLifeline(this.lifeline,
        () => this.#die('the WebNN worker stopped (terminated, out of memory or crashed)'));
      return;
    }
    if (msg.type === 'progress') {
      this.lastStage = msg.stage;
      if (msg.stage === 'worker-numpy-files') this.files.resolve();
      this.onProgress && this.onProgress(msg);
      return;
    }
    if (msg.type === 'recycle') { msg.buffers.forEach((b) => this.restage(b)); return; }
    if (msg.type === 'fatal') { this.#die(msg.message); return; }
    if (msg.quiet) {  // a post() failed: the worker recorded the failure on the objects; say so in the console
      if (typeof console !== 'undefined') console.warn(`[webnn-polyfill] ${msg.quiet} failed:`, msg.error.message);
      return;
    }
    const entry = this.pending.get(msg.id);
    if (!entry) return;
    this.pending.delete(msg.id);
    if (msg.error) entry.reject(errorFromJson(msg.error));
    else entry.resolve(msg.result);
  }

  /**
   * A Uint8Array of `n` bytes to copy into and send to the worker: over a staging buffer the worker gave
   * back when there is one (then `staged` is true and the message must say so: `recycle: true`), else new.
   * `transfer`: whether to transfer its buffer rather than let postMessage copy it (below STAGED_MIN a copy
   * costs less than moving the buffer: 3-4 us less per 1-op round trip in Firefox, the same in Chromium).
   */
  staging(n) {
    if (!this.stagingOn || n < STAGED_MIN) return {bytes: new Uint8Array(n), staged: false, transfer: n >= STAGED_MIN};
    const free = this.staged.get(n);
    const buffer = free && free.pop();
    if (buffer) {
      this.stagedBytes -= n;
      this.stagingReused++;
    }
    return {bytes: new Uint8Array(buffer || new ArrayBuffer(n)), staged: true, transfer: true};
  }

  /** A staging buffer back from the worker, or lent to a read and copied out: keep it for the next copy of its size. */
  restage(buffer) {
    const n = buffer.byteLength;
    if (n < STAGED_MIN || this.stagedBytes + n > STAGED_BYTES) return;
    const free = this.staged.get(n) || [];
    if (free.length >= STAGED_PER_SIZE) return;
    free.push(buffer);
    this.staged.set(n, free);
    this.stagedBytes += n;
  }

  #die(reason) {
    if (this.dead) return;
    this.dead = reason;
    this.unwatch();
    this.files.reject(new Error(reason));
    this.staged.clear();
    this.stagedBytes = 0;
    this.outbox = [];
    this.transfers = [];
    try { this.worker.terminate(); } catch (_) { /* already gone */ }
    // Lose the contexts first, so their pending promises reject as the spec says (InvalidStateError).
    this.onLost && this.onLost(reason);
    for (const {reject} of this.pending.values()) reject(new DOMException(reason, 'OperationError'));
    this.pending.clear();
  }

  /** The engine's 'init', bounded (bootLimit): resolves with its reply once the engine can run graphs (NumPy's
   *  files written), or rejects with why not; a worker that did not start is terminated. */
  async start(payload, transfer = []) {
    const limit = bootLimit(this.config);
    const timer = setTimeout(() => this.#die(`the WebNN worker did not start within ${limit / 1000} s `
      + `(its last step: ${this.lastStage})`), limit);
    try {
      const ready = await this.request('init', payload, transfer);
      if (ready && ready.numpyPending) await this.filesWritten;
      return ready;
    } catch (e) {
      this.#die(e && e.message ? e.message : String(e));
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Send a request; resolves with the worker's result or rejects with the error it reports. */
  request(type, payload = {}, transfer = []) {
    const body = type === 'init' ? {...payload, direct: this.direct} : payload;
    return new Promise((resolve, reject) => this.call(type, body, transfer, resolve, reject));
  }

  /** `request` without its promise: the worker's result goes to `resolve`, its error to `reject` (a readTensor
   *  settles its own promise from these, a microtask hop and two promises fewer per read). */
  call(type, payload, transfer, resolve, reject) {
    if (this.dead) {
      reject(new DOMException(this.dead, 'InvalidStateError'));
      return;
    }
    const id = this.nextId++;
    this.pending.set(id, {resolve, reject});
    this.#send({id, type, ...payload}, transfer);
  }

  /** Send without waiting: failures are recorded on the objects involved by the worker itself, which replies
   *  only then (`quiet`), and the console says so. */
  post(type, payload = {}, transfer = []) {
    if (this.dead) return;
    this.#send({id: this.nextId++, type, quiet: true, ...payload}, transfer);
  }

  #send(message, transfer) {
    if (!this.batching && this.started) {
      this.worker.postMessage(message, transfer);
      return;
    }
    this.outbox.push(message);
    if (transfer.length) this.transfers.push(...transfer);
    if (!BATCHED.has(message.type)) this.#flush();
    else if (this.outbox.length === 1) queueMicrotask(() => this.#flush());
  }

  #flush() {
    if (!this.outbox.length || this.dead || !this.started) return;
    const batch = this.outbox;
    const transfer = this.transfers;
    this.outbox = [];
    this.transfers = [];
    this.worker.postMessage(batch.length === 1 ? batch[0] : batch, transfer);
  }

  terminate(reason) { this.#die(reason); }
}
