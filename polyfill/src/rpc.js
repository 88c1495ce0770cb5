// Messaging with the execution worker: numbered requests, replies matched by id, transfer lists.
// The worker handles messages strictly in order, which is what gives MLTensor its timeline.

import {errorFromJson} from './errors.js';
import {spawnEngine} from './spawn.js';

export class WorkerClient {
  constructor(url, onProgress, onLost) {
    this.worker = spawnEngine(url);
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
    if (msg.type === 'progress') { this.onProgress && this.onProgress(msg); return; }
    if (msg.type === 'fatal') { this.#die(msg.message); return; }
    const entry = this.pending.get(msg.id);
    if (!entry) return;
    this.pending.delete(msg.id);
    if (msg.error) entry.reject(errorFromJson(msg.error));
    else entry.resolve(msg.result);
  }

  #die(reason) {
    if (this.dead) return;
    this.dead = reason;
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
      this.worker.postMessage({id, type, ...payload}, transfer);
    });
  }

  /** Send without waiting: failures are recorded on the objects involved by the worker itself. */
  post(type, payload = {}, transfer = []) {
    this.request(type, payload, transfer).catch((e) => {
      if (typeof console !== 'undefined') console.warn(`[webnn-polyfill] ${type} failed:`, e.message);
    });
  }

  terminate(reason) { this.#die(reason); }
}
