// Noticing that an execution worker is gone.  A worker the browser terminates, that runs out of memory or that
// closes itself fires no `error` event and sends nothing: without this, its pending calls would wait forever.
// The worker takes a Web Lock of its own name as it starts and holds it for its whole life (worker.js holdLifeline);
// the page then asks for the same lock, and is granted it only once that worker is gone.  A timer could not tell a
// long compute from a death; the lock is released by the browser itself, whatever ended the worker.
// Where Web Locks are absent (an insecure context, an old browser) the page notices only what the worker reports
// (a 'fatal' message, an `error` event): a worker killed from outside then leaves its calls pending.

const PREFIX = 'webnn-polyfill-engine-';
let next = 0;

/** A fresh name for a worker (its Worker `name`, and the lock it holds). */
export function lifelineName() {
  const random = Math.random().toString(36).slice(2);
  return `${PREFIX}${random}-${++next}`;
}

function locks() {
  return typeof navigator !== 'undefined' && navigator.locks && typeof navigator.locks.request === 'function'
    ? navigator.locks : null;
}

/** In the worker: hold the lock named after this worker for its life; `held()` once it is held. */
export function holdLifeline(name, held) {
  if (!locks() || !name || !name.startsWith(PREFIX)) return false;
  locks().request(name, () => {
    held();
    return new Promise(() => {});  // held until the worker ends
  }).catch(() => {});
  return true;
}

/** In the page, once the worker said it holds its lock: `gone()` runs when the worker has ended.  Returns a
 *  function that stops watching (a worker the page terminates itself). */
export function watchLifeline(name, gone) {
  if (!locks() || typeof AbortController !== 'function') return () => {};
  const controller = new AbortController();
  locks().request(name, {signal: controller.signal}, () => {
    // (granted while we hold it: released at once, nothing waits on a dead worker's name)
    if (!controller.signal.aborted) gone();
  }).catch(() => {});  // aborted: the page ended the worker itself
  return () => controller.abort();
}
