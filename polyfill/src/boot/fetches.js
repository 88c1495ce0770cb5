// Bounded asset fetches: while a boot of ours runs, every fetch of one of its files (Pyodide's folder, the lock
// file, the wheels, the snapshots) fails with an error that names the file and why, and a download that stalls
// fails too instead of waiting as long as the network does.  Pyodide's loader fetches pyodide.asm.wasm itself and
// only logs a failure (its instantiateWasm warns and never settles): `failed` rejects for a file the interpreter
// cannot start without, and bootPyodide races the start against it.  Any other fetch passes through untouched, and
// the original `fetch` is back once no boot of ours is running.

// No byte for this long on a download in progress (or no answer to a request): the file fails.  Far above any
// pause of a live connection (TCP's retransmission timer backs off to a few seconds at first), far below what a
// user waits for a page.
export const FETCH_STALL_MS = 30000;

// how long this thread must be free before a quiet spell found by a late timer counts as a stall
const GRACE_MS = 500;

// Pyodide's own files: without any of them the interpreter cannot start, and its loader does not say so
const CRITICAL = ['pyodide.asm.wasm', 'pyodide.asm.js', 'python_stdlib.zip', 'pyodide-lock.json'];

const watches = new Set();  // every watch running: {owns(url), stallMs, record(url, why)}
let original = null;  // globalThis.fetch while it is wrapped

function urlOf(input) {
  try {
    return new URL(typeof input === 'string' || input instanceof URL ? input : input.url,
      typeof location !== 'undefined' ? location.href : undefined).href;
  } catch (e) {
    return null;
  }
}

// The words of the failures a second attempt may not meet (the connection broke, as opposed to a 404 or a stall):
// boot errors cross threads as text, so the runtime tells them by these words (transient below).
const MIDWAY = 'the download failed midway';
const UNFETCHED = 'could not be fetched';

/** Whether the boot error `e` is a download cut off or refused by the network, which a new attempt may not meet. */
export function transient(e) {
  const message = e && e.message ? e.message : String(e);
  return message.includes(MIDWAY) || message.includes(UNFETCHED);
}

function why(e) {
  return e && e.message ? e.message : String(e);
}

// Reads a copy of the body to its end, calling `alive()` on every chunk: the stall timer's heartbeat.
async function drain(response, alive) {
  const reader = response.body.getReader();
  for (;;) {
    const {done} = await reader.read();
    if (done) return;
    alive();
  }
}

async function watchedFetch(passThrough, watch, url, input, init) {
  const controller = new AbortController();
  const given = init && init.signal;
  if (given) given.addEventListener('abort', () => controller.abort(given.reason), {once: true});
  let timer = null;
  let last = performance.now();  // when the last byte (or the request) was seen
  const stall = () => {
    const e = new DOMException(`${url}: no data for ${watch.stallMs / 1000} s (the download stalled)`, 'TimeoutError');
    watch.record(url, e.message);
    controller.abort(e);
  };
  // A timer that fires late because this thread was busy would take the bytes waiting behind it for a stall:
  // a quiet spell counts only once this thread has been free for GRACE_MS to take what arrived.
  const check = (confirming) => {
    const quiet = performance.now() - last;
    if (quiet < watch.stallMs) timer = setTimeout(() => check(false), watch.stallMs - quiet);
    else if (!confirming) timer = setTimeout(() => check(true), GRACE_MS);
    else if (performance.now() - last >= watch.stallMs + GRACE_MS) stall();
    else timer = setTimeout(() => check(false), 0);
  };
  const alive = () => { last = performance.now(); };
  timer = setTimeout(() => check(false), watch.stallMs);
  let response;
  try {
    response = await passThrough.call(globalThis, input, {...(init || {}), signal: controller.signal});
  } catch (e) {
    clearTimeout(timer);
    if (controller.signal.aborted && controller.signal.reason instanceof DOMException) throw controller.signal.reason;
    const message = `${url} ${UNFETCHED}: ${why(e)}`;
    watch.record(url, message);
    throw new TypeError(message);
  }
  alive();
  if (!response.ok) {
    clearTimeout(timer);
    watch.record(url, `HTTP ${response.status} for ${url}`);
    return response;
  }
  if (!response.body) {
    clearTimeout(timer);
    return response;
  }
  drain(response.clone(), alive).then(() => clearTimeout(timer), (e) => {
    clearTimeout(timer);
    if (!controller.signal.aborted) watch.record(url, `${url}: ${MIDWAY}: ${why(e)}`);
  });
  return response;
}

function install() {
  if (original || typeof globalThis.fetch !== 'function') return;
  const passThrough = original = globalThis.fetch;
  globalThis.fetch = function fetch(input, init) {
    const url = urlOf(input);
    const watch = url && [...watches].find((w) => w.owns(url));
    return watch ? watchedFetch(passThrough, watch, url, input, init) : passThrough.call(this, input, init);
  };
}

/**
 * Watch the fetches of URLs that start with one of `prefixes` until `release()`: each is bounded by `stallMs`
 * and its failure recorded.  `failed` rejects with the first failure of one of Pyodide's own files; `explain(e)`
 * is the error a failed boot throws: the first recorded failure (which names the file), else `e` itself.
 */
export function watchFetches(prefixes, stallMs = FETCH_STALL_MS) {
  let reject;
  const failed = new Promise((_, no) => { reject = no; });
  failed.catch(() => {});  // raced by the boot; unobserved when the boot fails some other way
  const failures = [];
  const watch = {
    stallMs,
    owns: (url) => prefixes.some((p) => p && url.startsWith(p)),
    record(url, message) {
      failures.push(message);
      const name = url.split(/[?#]/)[0].split('/').pop();
      if (CRITICAL.includes(name)) reject(new Error(message));
    },
  };
  watches.add(watch);
  install();
  return {
    failed,
    explain: (e) => (failures.length && !failures.some((f) => why(e).includes(f))
      ? new Error(`${failures[0]} (${why(e)})`) : e),
    release() {
      watches.delete(watch);
      if (!watches.size && original) {
        globalThis.fetch = original;
        original = null;
      }
    },
  };
}
