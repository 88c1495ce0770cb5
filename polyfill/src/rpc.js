// Messaging with the execution worker: numbered requests, replies matched by id, transfer lists.
// The worker handles messages strictly in order, which is what gives MLTensor its timeline.
//
// Fewer messages per dispatch (#16 line 2): the timeline calls a script makes in one go (writeTensor, dispatch,
// readTensor, ...) leave as ONE postMessage, an array, sent when the current microtasks are done; the worker
// answers a batch with one array of replies (engine.js), and sends none for a fire-and-forget post() that
// succeeded.  Anything else (init, build, compute: large payloads, or buffers the caller handed over) is sent at
// once, after what is already queued, so the order never changes.  The worker URL switch ?batch=0 (or
// WEBNN_POLYFILL_CONFIG.batch = false) sends every message alone, for comparisons.

import {errorFromJson} from './errors.js';
import {spawnEngine} from './spawn.js';

// message types that may wait for the end of the microtask checkpoint: small, their buffers are our own copies
const BATCHED = new Set(['write', 'dispatch', 'read', 'createTensor', 'destroyTensor', 'destroyGraph',
  'destroyContext', 'stats']);

/** Whether messages to the worker at `url` are batched: not with ?batch=0 or config batch: false. */
function batching(url, config) {
  if (config && config.batch === false) return false;
  try {
    return new URL(url).searchParams.get('batch') !== '0';
  } catch (e) {
    return true;
  }
}

export class WorkerClient {
  constructor(url, onProgress, onLost, config = null) {
    this.worker = spawnEngine(url);
    this.batching = batching(url, config);
    this.outbox = [];  // messages waiting for the flush, and what they transfer
    this.transfers = [];
    this.pending = new Map();
    this.nextId = 1;
    this.dead = null;
    this.onProgress = onProgress;
    this.onLost = onLost;
    this.worker.onmessage = (e) => this.#receive(e.data);
    this.worker.onerror = (e) => {
      e.preventDefault && e.preventDefault();
      this.#die(`the WebNN worker failed: ${e.message || 'script error'}`);
    };
    this.worker.onmessageerror = () => this.#die('the WebNN worker sent a message that could not be read');
  }

  #receive(msg) {
    if (Array.isArray(msg)) {
      for (const m of msg) this.#receive(m);
      return;
    }
    if (msg.type === 'progress') { this.onProgress && this.onProgress(msg); return; }
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

  #die(reason) {
    if (this.dead) return;
    this.dead = reason;
    this.outbox = [];
    this.transfers = [];
    try { this.worker.terminate(); } catch (_) { /* already gone */ }
    // Lose the contexts first, so their pending promises reject as the spec says (InvalidStateError).
    this.onLost && this.onLost(reason);
    for (const {reject} of this.pending.values()) reject(new DOMException(reason, 'OperationError'));
    this.pending.clear();
  }

  /** Send a request; resolves with the worker's result or rejects with the error it reports. */
  request(type, payload = {}, transfer = []) {
    if (this.dead) return Promise.reject(new DOMException(this.dead, 'InvalidStateError'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject});
      this.#send({id, type, ...payload}, transfer);
    });
  }

  /** Send without waiting: failures are recorded on the objects involved by the worker itself, which replies
   *  only then (`quiet`), and the console says so. */
  post(type, payload = {}, transfer = []) {
    if (this.dead) return;
    this.#send({id: this.nextId++, type, quiet: true, ...payload}, transfer);
  }

  #send(message, transfer) {
    if (!this.batching) {
      this.worker.postMessage(message, transfer);
      return;
    }
    this.outbox.push(message);
    if (transfer.length) this.transfers.push(...transfer);
    if (!BATCHED.has(message.type)) this.#flush();
    else if (this.outbox.length === 1) queueMicrotask(() => this.#flush());
  }

  #flush() {
    if (!this.outbox.length || this.dead) return;
    const batch = this.outbox;
    const transfer = this.transfers;
    this.outbox = [];
    this.transfers = [];
    this.worker.postMessage(batch.length === 1 ? batch[0] : batch, transfer);
  }

  terminate(reason) { this.#die(reason); }
}
