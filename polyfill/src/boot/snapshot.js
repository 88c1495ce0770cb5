// Pyodide memory snapshots: a copy of the WebAssembly heap taken right after the interpreter has started
// (before NumPy or py_core are loaded), kept in the Origin Private File System (else Cache Storage: snapstore.js).
// Restoring it skips CPython's start-up (about 2 of the 2.5-3 s a warm loadPyodide takes), for the page's Pyodide
// and the worker's alike. The worker,
// which starts first, restores it (or on a first visit makes it) and hands its bytes to the page's Pyodide
// (runtime/runtime.js), which stores a new one: on a first visit CPython starts once, not twice.
//
// Pyodide 0.27 has the (underscore, experimental) loadPyodide options `_makeSnapshot` / `_loadSnapshot`. These
// snapshots hold only the bare interpreter, and site-packages lives in the JS file system, outside the heap, so
// both instances still install their packages after a restore.  The worker first tries the build's second
// snapshot, taken with NumPy imported, whose extension modules relink.js links again (startWithNumpy below).
// Pyodide checks the snapshot's magic number and build id itself; a stored snapshot that is missing, fails its
// sha256 or key (snapstore.js), is of another build, or fails to start is dropped (said on the console and in
// bootTimings.cache: cachelog.js) and the instance boots normally.
//
// A first visit finds no stored snapshot: it restores the build's own (`prebuilt`, made under Node by
// scripts/make_snapshot.mjs and served gzipped next to the bundle, its sha256 in the asset manifest) instead of
// starting CPython, and stores it like one made here.  Every visitor of one build restores the same heap: what
// CPython seeded at start-up is shared, so `random`'s generator is seeded again after every restore (the str and
// bytes hash secret cannot be: every dict holds hashes made with it; see docs/performance.md).

import {noteDropped} from './cachelog.js';
import {integrityOf} from './digest.js';
import {inflate} from './inflate.js';
import {inServiceWorker} from './load-pyodide.js';
import {hook, relinkFor} from './relink.js';
import {dropStored, readStored, storeKind, writeStored} from './snapstore.js';

const FORMAT = 2;  // bump to orphan snapshots made by older polyfill code (2: keyed by the build's snapshot)
const SNAPSHOT_MAGIC = 1886286592;  // pyodide.asm.js's snapshot magic number (0.27)

// The bare snapshot's entry: per Pyodide version and, where the build has one, per build snapshot (it holds the
// core imported: a new core is a new snapshot, which replaces the entry of the last one when it is stored)
const BARE_PREFIX = 'webnn-snapshot-v';

function snapshotKey(indexURL, version, prebuilt = null) {
  const build = prebuilt && prebuilt.sha256 ? `-${prebuilt.sha256.slice(0, 16)}` : '';
  return new URL(`${BARE_PREFIX}${FORMAT}-${encodeURIComponent(version)}${build}.bin`, indexURL).href;
}

// a new bare snapshot's entry replaces any other (older formats, other builds': 20 MB each)
const otherBare = (url) => url.includes(BARE_PREFIX);

// The worker's NumPy snapshot (scripts/make_snapshot.mjs) is only ever the build's: cached under its asset's
// sha256, so another build's is another entry (and the older ones are deleted when a new one is stored).
const NUMPY_PREFIX = 'webnn-snapshot-numpy-';

function numpyKey(indexURL, asset) {
  return new URL(`${NUMPY_PREFIX}${asset.sha256}.bin`, indexURL).href;
}

// The snapshots' store (snapstore.js: the Origin Private File System, else Cache Storage); an entry that fails
// its sha256, or of the wrong length, magic number or heap size, is dropped as it is read
function readSnapshot(key) {
  return readStored(key, (bytes) => (wellFormed(bytes) ? null : NOT_OURS));
}

const NOT_OURS = 'not a snapshot of this Pyodide (magic number or heap size)';

// a stored snapshot that did not restore: dropped, and said
async function dropUnusable(key, e) {
  noteDropped(key, `it did not restore: ${e && e.message ? e.message : e}`);
  await dropStored(key);
}

// Pyodide's layout: u32 magic, u32 header size, ..., then the heap, a whole number of 64 KiB wasm pages.
// A heap of the wrong size makes loadPyodide hang rather than throw, so check before restoring.
function wellFormed(bytes) {
  if (bytes.length < 64 || bytes.byteOffset % 4) return false;
  const header = new Uint32Array(bytes.buffer, bytes.byteOffset, 2);
  const heap = bytes.length - header[1];
  return header[0] === SNAPSHOT_MAGIC && header[1] >= 48 && heap > 0 && heap % 65536 === 0;
}

/** The cached snapshot's bytes (or null), read ahead of startPyodide (its `cached` option; `prebuilt`: its
 * option of that name); with `numpyAsset`, the cached copy of that NumPy snapshot (its `numpy.cached`). */
export function prefetchSnapshot(indexURL, version, numpyAsset = null, prebuilt = null) {
  return readSnapshot(numpyAsset ? numpyKey(indexURL, numpyAsset)
    : snapshotKey(indexURL, version || 'unknown', prebuilt));
}

// A first visit gives up on the build's snapshot (and starts CPython) when its download has not finished by then:
// a stalled fetch must not hang the boot.  5.3 MB at 2.5 Mbit/s takes 17 s.
const PREBUILT_TIMEOUT_MS = 20000;

/**
 * The build's snapshot ({url, sha256, size}: size inflated), fetched with its sha256 (of the gzip bytes) as the
 * fetch's integrity and inflated (DecompressionStream: gzip's CRC is checked too).  Throws on anything else,
 * including a server that sent it with Content-Encoding: gzip (the browser inflated it: the integrity fails).
 */
export async function fetchPrebuilt({url, sha256, size}) {
  const integrity = integrityOf(sha256);
  if (!integrity || !(size > 0)) throw new Error('no sha256 or size for it');
  const signal = typeof AbortSignal.timeout === 'function' ? AbortSignal.timeout(PREBUILT_TIMEOUT_MS) : undefined;
  const response = await fetch(url, {integrity, signal});
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  const packed = new Uint8Array(await response.arrayBuffer());
  if (typeof DecompressionStream !== 'function') throw new Error('no DecompressionStream');
  // a fresh buffer of its own: Pyodide reads the header through a Uint32Array
  const out = await inflate('gzip', packed, size, 'the manifest');
  if (out.length !== size) throw new Error(`${out.length} bytes, the manifest says ${size}`);
  return out;
}

/**
 * loadPyodide(options), from a usable snapshot: `given` bytes (the worker's, handed to the page; `givenNew`: it
 * has just made them, store them), else the cached one when `use` (`cached`: prefetchSnapshot's promise of it).
 * With `make`, an instance that booted without one takes one (before anything else runs in it) and, with `store`,
 * stores it for the next visit.  `prebuilt` ({url, sha256, size}: fetchPrebuilt) is restored, and stored like a
 * snapshot made here, when no cached one was (`use`); `mark('snapshotFetched')` once its bytes are inflated.
 * `numpy` ({asset, lockSha256, cached, compileAfter}: the build's NumPy snapshot, a promise of the NumPy sha256 in the lock file
 * this Pyodide reads, and prefetchSnapshot's promise of its cached copy) is tried first, when `use`: the cached
 * copy, else the asset (stored once restored), where the lock names the NumPy it holds.
 * Resolves to {py, snapshot, bytes, numpy, numpyWhy}: snapshot is 'handed' (from `given`), 'loaded' (from the
 * cache), 'prebuilt' (the build's), 'made' or 'none'; bytes is the snapshot restored or made, for another instance
 * (null for a NumPy snapshot: only this worker's kind can restore it); numpy is true when NumPy came imported with
 * it; numpyWhy, where `numpy` was asked for and not used, says why.
 */
export async function startPyodide(loadPyodide, version, options,
  {make = false, use = true, store = true, given = null, givenNew = false, cached: prefetched = null,
    prebuilt = null, numpy = null, mark = () => {}} = {}) {
  let numpyWhy = null;  // why the NumPy snapshot, when asked for, was not the start
  if (numpy && use) {
    const started = await startWithNumpy(loadPyodide, options, numpy, mark);
    if (started.py) return started;
    numpyWhy = started.why;
  }
  const result = await startBare(loadPyodide, version, options,
    {make, use, store, given, givenNew, cached: prefetched, prebuilt, mark});
  return numpyWhy ? {...result, numpyWhy} : result;
}

// startPyodide without the NumPy snapshot
async function startBare(loadPyodide, version, options,
  {make, use, store, given, givenNew, cached: prefetched, prebuilt, mark}) {
  if (given) {
    try {
      const py = await restore(loadPyodide, options, given);
      // a snapshot the worker just made, stored from here: the worker's thread is busy with NumPy and the
      // core for seconds, which held its write back until the page was gone (Firefox)
      if (givenNew) {  // none without a cache
        writeStored(snapshotKey(options.indexURL, version || 'unknown', prebuilt), given, {replacing: otherBare});
      }
      return {py, snapshot: 'handed', bytes: given};
    } catch (e) {
      console.warn(`WebNN polyfill: the worker's Pyodide snapshot did not restore: ${e && e.message ? e.message : e}`);
    }
  }
  const cached = await storeKind();
  const key = cached ? snapshotKey(options.indexURL, version || 'unknown', prebuilt) : null;
  if (cached && use) {
    const bytes = await (prefetched || readSnapshot(key));
    if (bytes) {
      try {
        return {py: await restore(loadPyodide, options, bytes), snapshot: 'loaded', bytes};
      } catch (e) {
        await dropUnusable(key, e);
      }
    }
  }
  if (prebuilt) {
    // fetched and inflated while loadPyodide fetches and runs pyodide.asm.js (it awaits the bytes after that)
    const fetching = fetchPrebuilt(prebuilt).then((bytes) => { mark('snapshotFetched'); return bytes; });
    try {
      const py = await restore(loadPyodide, options, fetching);
      const bytes = await fetching;
      if (cached && store) writeStored(key, bytes, {replacing: otherBare});  // not awaited, as below
      return {py, snapshot: 'prebuilt', bytes};
    } catch (e) {
      console.warn(`WebNN polyfill: the build's Pyodide snapshot is not usable: ${e && e.message ? e.message : e}`);
    }
  }
  if (!make) return {py: await loadPyodide(options), snapshot: 'none', bytes: null};
  const py = await loadPyodide({...options, _makeSnapshot: true});
  try {
    const bytes = py.makeMemorySnapshot();
    // not awaited: storing 20 MB must not delay the boot
    if (cached && store) writeStored(key, bytes, {replacing: otherBare});
    return {py, snapshot: 'made', bytes};
  } catch (e) {
    return {py, snapshot: 'none', bytes: null};  // an instance that cannot be snapshotted still works
  }
}

// From the build's NumPy snapshot (relink.js): its cached copy, else the asset, fetched and stored; {why} when it
// does not apply (another NumPy in the lock, no module factory to hook) or does not restore (dropped from the
// cache; the caller then boots from the bare snapshot).
async function startWithNumpy(loadPyodide, options, {asset, lockSha256, cached: prefetched, compileAfter}, mark) {
  const [lock, cachedBytes] = await Promise.all([lockSha256, prefetched]);
  if (cachedBytes) mark('snapshotRead');
  if (!asset || !asset.relink) return {why: 'the build has no NumPy snapshot to relink'};
  if (lock !== asset.numpySha256) return {why: 'the lock file names another NumPy than the snapshot holds'};
  if (!await hooked(options.indexURL)) return {why: "Pyodide's module factory could not be hooked"};
  const key = await storeKind() ? numpyKey(options.indexURL, asset) : null;  // none without a store
  const from = cachedBytes ? 'loaded' : 'prebuilt';
  const bytes = cachedBytes ? Promise.resolve(cachedBytes)
    : fetchPrebuilt(asset).then((b) => { mark('snapshotFetched'); return b; });
  try {
    const py = await restore(loadPyodide, options, bytes.then((b) => relinkFor(b, asset.relink, {after: compileAfter})),
      {numpy: true});
    // stored here whatever `store` says: no other Pyodide restores it (the worker hands the page nothing of it)
    if (from === 'prebuilt' && key) {
      writeStored(key, await bytes, {replacing: (url) => url.includes(NUMPY_PREFIX)});  // not awaited
    }
    return {py, snapshot: from, bytes: null, numpy: true};
  } catch (e) {
    const reason = e && e.message ? e.message : e;
    if (from === 'loaded' && key) await dropUnusable(key, e);
    else console.warn(`WebNN polyfill: the NumPy snapshot did not restore: ${reason}`);
    return {why: `it did not restore: ${reason}`};
  }
}

// relink.js's hook on pyodide.asm.js's module factory, its script imported first where boot.js's early start did
// not (not in a service worker: import() is refused there after its script ran; load-pyodide.js)
async function hooked(indexURL) {
  if (!hook() && !inServiceWorker()) await import(/* webpackIgnore: true */ indexURL + 'pyodide.asm.js').catch(() => {});
  return hook();
}

// `bytes`: a snapshot, or a promise of one (Pyodide awaits it once its script has run); `numpy`: NumPy comes
// imported with it, checked too.  Every restore goes through relink.js's hook (restoreCountArgs).
async function restore(loadPyodide, options, bytes, {numpy = false} = {}) {
  await hooked(options.indexURL);
  // a heap of the wrong size makes loadPyodide hang rather than throw
  const checked = Promise.resolve(bytes).then((b) => {
    if (!wellFormed(b)) throw new Error(NOT_OURS);
    return b;
  });
  checked.catch(() => {});  // loadPyodide awaits it only after its script ran: not an unhandled rejection before
  const py = await loadPyodide({...options, _loadSnapshot: checked});
  // Pyodide keeps its load options for its life (API.config), the `_loadSnapshot` promise among them, and so the
  // bytes it restored (21 MB, 30 MB with NumPy): no use once restored
  const loadOptions = py._api && py._api.config;
  if (loadOptions) loadOptions._loadSnapshot = undefined;
  // each restore of one snapshot would draw the same `random` numbers: seed it again from the browser's entropy
  // (os.urandom), as CPython's start did (Pyodide 0.27 imports it at start-up)
  if (py.runPython('import sys\nif "random" in sys.modules: sys.modules["random"].seed()\n1 + 1') !== 2) {
    throw new Error('the restored interpreter does not compute');
  }
  if (numpy && py.runPython('import numpy\nint(numpy.arange(4.0).dot(numpy.arange(4.0)))') !== 14) {
    throw new Error("the restored NumPy does not compute");
  }
  return py;
}
