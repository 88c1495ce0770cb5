// The one way this project starts a Pyodide: the page's (builder) and the execution worker's (runtime/runtime.js,
// engine/start.js) in the browser, and the Node runners (scripts/pyodide_node.mjs, tests/pyodide/run_wpt.mjs).
//
// Steps: import Pyodide's loader from indexURL (load-pyodide.js: pages, workers, service workers), start the
// interpreter (snapshot.js: from the memory snapshot when there is one), then install NumPy and wheels
// (wheels.js: fetched with their sha256 checked and unpacked, or loadPackage where fetch cannot reach the files,
// e.g. a file system path under Node).  The version is the one its loader reports; the repository pins it in
// one place, the file PYODIDE_VERSION (read by web/settings.py, scripts/fetch_assets.py and, for the Node
// runners, scripts/pyodide_node.mjs).

import {isSha256} from './digest.js';
import {FETCH_STALL_MS, watchFetches} from './fetches.js';
import {importPyodide, inFirefox, inServiceWorker} from './load-pyodide.js';
import {prefetchSnapshot, startPyodide} from './snapshot.js';
import {installNumpy, installWheel, numpyLockEntry} from './wheels.js';
import {STDLIB_CODE_FILE, hookStdlib, saveStdlib} from './stdlibpyc.js';
import {SITE_MTIME_MS, forgetListings, readSite, siteKey, sitePackagesOf, wheelPaths, wheelTree, writeSite,
  writeTree} from './sitecache.js';

const QUIET = {messageCallback: () => {}};

/** True when wheels can be fetched from indexURL (http, https, blob); false for a file system path. */
function fetchable(indexURL) {
  return /^(https?|blob):/i.test(indexURL);
}

/**
 * bootPyodide's options: each with its default and what it is for.  Callers: runtime/runtime.js (the page's),
 * engine/start.js (the execution worker's), scripts/pyodide_node.mjs (Node).
 */
export const BOOT_OPTIONS = Object.freeze({
  // Pyodide's folder: a URL, or a path ending in '/' under Node (required)
  indexURL: undefined,
  // a lock file other than indexURL's own (the dist package's)
  lockFileURL: undefined,
  // loadPyodide's environment variables, and its command line
  env: undefined,
  args: undefined,
  // loadPyodide's output callbacks (silence by default)
  stdout: () => {},
  stderr: () => {},
  // {use, make, store, given, givenNew, prebuilt, numpyAsset}: restore the `given` snapshot bytes, the cached
  // snapshot or the build's (`prebuilt`: {url, sha256, size}), or take one when booting without, and store it
  // (snapshot.js startPyodide); with `numpy`, first the build's NumPy snapshot (`numpyAsset`: {url, sha256,
  // size, numpySha256, relink}), NumPy then comes imported
  snapshot: Object.freeze({use: false, make: false}),
  // pyodide.asm.wasm already compiled (another Pyodide's, see shareWasm below)
  wasmModule: null,
  // install NumPy
  numpy: false,
  // [{url, sha256}] installed after NumPy (sha256: hex, checked before anything is unpacked)
  wheels: Object.freeze([]),
  // names for loadPackage (e.g. 'scipy' under Node)
  packages: Object.freeze([]),
  // false: install with loadPackage instead of writing the files (the worker's ?unpack=0)
  unpack: true,
  // false: unpack with CPython's zipfile instead of in JavaScript (?unzip=0)
  unzip: true,
  // restore each wheel's files (with their .pyc) from Cache Storage (sitecache.js), read while Pyodide starts, or
  // install it and let the caller store it with storeSite() once it has imported what it needs
  siteCache: false,
  // whose site-packages these are (the page's and the worker's differ)
  siteScope: 'pyodide',
  // start the steps side by side: Pyodide's script, pyodide.asm.wasm's compile, the snapshot's and the site
  // entries' reads, begun before loadPyodide asks for them (startEarly)
  early: true,
  // with siteCache: keep the standard library's compiled code (stdlibpyc.js) in the entry of the last of
  // `wheels` (or NumPy's without wheels), and use it where that entry was restored
  stdlibCode: true,
  // false: drop the packages a build's snapshot came with imported (dropStaleImports), as if they were another
  // wheel's: this boot imports them from their files
  snapshotImports: true,
  // where NumPy came imported with the snapshot and its files are not in the site cache, resolve before they are
  // written (lazy imports read them): `numpyLater` then resolves to {how, storeSite} once they are, and
  // `storeSite` is null until then
  deferNumpy: false,
  // ms without a byte on a download of one of this boot's files before that file fails (fetches.js)
  stallMs: FETCH_STALL_MS,
  // mark(stage, info), called after 'script', 'module' (info: {wasmModule}: pyodide.asm.wasm compiled or given,
  // not yet instantiated), 'runtime' (info: {snapshot, snapshotBytes, wasmModule}), 'numpy', 'wheels' (each when
  // installed) and 'packages'; with siteCache also 'siteOpen', 'siteRead', 'siteChecked'; with a prebuilt
  // snapshot 'snapshotFetched' (fetched and inflated)
  mark: () => {},
});

/**
 * A started Pyodide with what it needs installed; `options`: BOOT_OPTIONS (an option not given, or undefined,
 * takes its default).
 * Resolves to {py, version, snapshot: 'handed'|'loaded'|'prebuilt'|'made'|'none', snapshotBytes, numpySnapshot
 * (true: restored from the NumPy snapshot, snapshotBytes then null), numpySnapshotWhy (why not, where asked for),
 * imported (the top-level packages of `wheels` that came imported with the snapshot: dropStaleImports), wasmModule,
 * numpy, wheels: 'cached'|'unzipped'|'unpacked'|'loadPackage'|null (how each was installed; numpy null when
 * deferred: numpyLater), storeSite: (which) =>
 * Promise<{stored: Promise<bool>}> (stores the entries of the wheels installed here, 'numpy' or 'wheels' or, by
 * default, both: their files and the .pyc written since; call it after importing from them; it resolves once the
 * writes are under way)}: snapshotBytes and wasmModule (when known) can start another Pyodide.
 */
export async function bootPyodide(options = {}) {
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  const {indexURL, lockFileURL, wheels, snapshot, stallMs} = {...BOOT_OPTIONS, ...given};
  // every file this boot fetches: bounded, and a failure names it (fetches.js)
  const watch = watchFetches([indexURL, lockFileURL, ...wheels.map((w) => w.url),
    ...[snapshot.prebuilt, snapshot.numpyAsset].map((a) => a && a.url)].filter(Boolean), stallMs);
  try {
    return await boot({...BOOT_OPTIONS, ...given}, watch);
  } catch (e) {
    throw watch.explain(e);
  } finally {
    watch.release();
  }
}

async function boot(options, watch) {
  const {indexURL, lockFileURL, env, stdout, stderr, args, wasmModule, numpy, wheels, packages, unpack, unzip,
    siteCache, siteScope, early, stdlibCode, snapshotImports, deferNumpy, mark} = options;
  let {snapshot} = options;
  const viaFetch = unpack && fetchable(indexURL);
  // (The wheels are not fetched while Pyodide starts: Firefox's snapshot restore in the worker takes 0.4-0.6 s
  // longer beside the downloads and digests, more than they cost after it.)
  // (with the NumPy snapshot, compiled early in every browser: the page's Pyodide starts once the module is known)
  const started0 = early && fetchable(indexURL) ? startEarly(indexURL, wasmModule, !!snapshot.numpyAsset)
    : {script: null, module: null};
  const {loadPyodide, version} = await importPyodide(indexURL);
  mark('script');
  // NumPy's sha256 in the lock file loadPyodide then reads (from the HTTP cache)
  const numpyLock = numpy && fetchable(indexURL) && (early || snapshot.numpyAsset)
    ? lockSha256(lockFileURL || new URL('pyodide-lock.json', indexURL).href) : null;
  // the build's NumPy snapshot (the worker's), tried before the bare one: its cached copy read ahead instead
  const numpyAsset = numpy && snapshot.use && fetchable(indexURL) ? snapshot.numpyAsset || null : null;
  if (numpyAsset) {
    // (NumPy's modules compile once pyodide.asm.wasm's early compile is done: relink.js relinkFor `after`)
    snapshot = {...snapshot, numpy: {asset: numpyAsset, lockSha256: numpyLock,
      cached: early && version ? prefetchSnapshot(indexURL, version, numpyAsset) : null, compileAfter: started0.module}};
  } else if (early && snapshot.use && !snapshot.given && version && fetchable(indexURL)) {
    snapshot = {...snapshot, cached: prefetchSnapshot(indexURL, version, null, snapshot.prebuilt)};
  }
  const site = siteCache && viaFetch ? new SiteEntries(indexURL, version, siteScope, stdlibCode, mark) : null;
  // the cache entries are read (and their sha256 checked) while Pyodide starts: I/O and digests off this thread
  if (site && version && early) site.prefetch(numpyLock, wheels);
  const loadOptions = {indexURL, stdout, stderr};  // loadPyodide's
  if (lockFileURL) loadOptions.lockFileURL = lockFileURL;
  if (env && Object.keys(env).length) loadOptions.env = env;
  if (args) loadOptions.args = args;
  let moduleKnown = false;
  const onModule = (module) => {
    if (moduleKnown || !module) return;
    moduleKnown = true;
    mark('module', {wasmModule: module});
  };
  if (started0.module) started0.module.then(onModule);
  const wasm = shareWasm(indexURL, wasmModule || started0.module, onModule);
  let started;
  try {
    await started0.script;  // else loadPyodide imports it a second time
    // (Pyodide's loader never settles when it cannot fetch pyodide.asm.wasm: the watch's failure ends the wait)
    started = await Promise.race([startPyodide(loadPyodide, version, loadOptions, {...snapshot, mark}), watch.failed]);
  } finally {
    wasm.release();
  }
  const py = started.py;
  const imported = dropStaleImports(py, snapshotImports ? wheels : []);
  mark('runtime', {snapshot: started.snapshot, snapshotBytes: started.bytes, wasmModule: wasm.module()});
  const parts = site ? await site.restore(py, version || py.version, numpy, wheels) : {};
  // NumPy and the wheels not restored fetched and unpacked concurrently; then packages by name (SciPy needs NumPy)
  const install = (part, run) => (part && part.restored ? 'cached' : run(part || {}));
  // (NumPy imported already: its files unpacked or an error, not a loadPackage that may fail on the console only)
  const numpyInstall = numpy ? Promise.resolve(install(parts.numpy, (part) => installNumpy(py, indexURL,
    {unpack: viaFetch, unzip, installed: part, strict: !!started.numpy}))).then((how) => { mark('numpy'); return how; })
    : null;
  // NumPy came imported and its files are not in the cache: written after this resolves (deferNumpy)
  const later = deferNumpy && started.numpy && numpyInstall && !(parts.numpy && parts.numpy.restored)
    ? numpyInstall : null;
  if (later) later.catch(() => {});  // the caller's numpyLater reports it
  const [numpyHow, wheelsHow] = await Promise.all([
    later ? null : numpyInstall,
    wheels.length ? Promise.all(wheels.map((w, i) => install(parts.wheels && parts.wheels[i],
      (part) => installWheel(py, w.url, w.sha256, {unpack: viaFetch, unzip, installed: part}))))
      .then((hows) => { mark('wheels'); return [...new Set(hows)].join(','); }) : null,
  ]);
  if (packages.length) await py.loadPackage(packages, QUIET);
  mark('packages');
  // (prepared once every wheel stored is installed: it marks their files and lists what each entry holds)
  const storeFor = (hows) => (site && !hows.some((how) => /loadPackage/.test(how || '')) ? site.prepareStore(py)
    : notStored);
  return {py, version: version || py.version, snapshot: started.snapshot, snapshotBytes: started.bytes,
    numpySnapshot: !!started.numpy, numpySnapshotWhy: started.numpyWhy || null, imported, wasmModule: wasm.module(),
    numpy: numpyHow, wheels: wheelsHow,
    storeSite: later ? null : storeFor([numpyHow, wheelsHow]),
    numpyLater: later ? later.then((how) => ({how, storeSite: storeFor([how, wheelsHow])})) : null};
}

// A build's snapshot may hold a wheel's package imported (scripts/make_snapshot.mjs: the core's, its sha256 in
// `sys._webnn_snapshot_wheels`): kept where that wheel is among those installed here, else its modules are
// dropped before anything imports them, so that this boot's own wheel is imported from its files.  Returns the
// top-level packages kept.
export function dropStaleImports(py, wheels) {
  // (no import here but sys: a boot that imports, say, json before stdlibpyc.js's hook would compile it unrecorded)
  const want = wheels.map((w) => String(w.sha256).replace(/[^0-9a-f]/gi, ''));
  const kept = py.runPython(`import sys
def _webnn_drop(want):
    held = getattr(sys, '_webnn_snapshot_wheels', None) or {}
    for top, sha in list(held.items()):
        if sha not in want:
            for name in [m for m in sys.modules if m == top or m.startswith(top + '.')]:
                del sys.modules[name]
            del held[top]
    return ','.join(sorted(held))
try:
    _webnn_kept = _webnn_drop(${JSON.stringify(want)})
finally:
    del _webnn_drop
_webnn_kept`);
  return kept ? kept.split(',') : [];
}

// The restore's longest steps started at once, side by side with importing pyodide.mjs and reading the snapshot
// (and site-packages) from Cache Storage: loadPyodide would only start them one after another, once both are
// done.  pyodide.asm.js (1.3 MB of JavaScript) is imported (as loadPyodide would, which then does not), and, in
// Firefox, pyodide.asm.wasm compiled unless a compiled module was handed over: Firefox compiles it on every visit
// (226 ms quiet), Chromium's instantiateStreaming takes it from its code cache, and compiling it early there
// measured no gain (4 interleaved rounds) while its cache reads ran beside the snapshot's; except (`compile`) for
// a worker restoring the NumPy snapshot, whose compiled module starts the page's Pyodide (engine/start.js).  {script: resolves when
// imported or not, module: resolves to the module or null (shareWasm then lets Pyodide's own instantiation
// run)}.  Not in a service worker (no import() after its script ran: load-pyodide.js).
function startEarly(indexURL, given, compile = false) {
  const wa = globalThis.WebAssembly;
  const script = inServiceWorker() || typeof globalThis._createPyodideModule === 'function' ? Promise.resolve()
    : import(/* webpackIgnore: true */ indexURL + 'pyodide.asm.js').catch(() => {});
  const url = new URL('pyodide.asm.wasm', indexURL).href;
  const module = !(inFirefox() || compile) || given || modules.has(url) || !wa || typeof wa.compileStreaming !== 'function' ? null
    : wa.compileStreaming(fetch(url)).catch(() => null);
  return {script, module};
}

// NumPy's sha256 in the lock file at url (the one loadPyodide then reads, from the HTTP cache), or null
function lockSha256(url) {
  return fetch(url).then((r) => (r.ok ? r.json() : null))
    .then((lock) => (lock && lock.packages && lock.packages.numpy && lock.packages.numpy.sha256) || null)
    .catch(() => null);
}

const notStored = async () => ({stored: Promise.resolve(false)});

// the standard library's code cache is an optimisation: a failure there costs its gain, never the boot
function stdlib(run) {
  try {
    run();
  } catch (e) {
    console.warn(`WebNN polyfill: standard library code cache: ${e && e.message ? e.message : e}`);
  }
}

// The cached site-packages entries of one Pyodide, one per wheel ('numpy' and each of `wheels`): read early
// (prefetch), written into the file system once Pyodide runs (restore), stored for those installed instead
// (prepareStore).  A part is {sha256, key, files (a promise: [{path, data}] or null), restored, tops (set by the
// install: the wheel's top-level names), stored}.  With stdlibCode, one part, the carrier (the last of `wheels`,
// or NumPy's without wheels: the core's, stored last, once everything the boot imports is imported), also holds
// the standard library's compiled code (stdlibpyc.js STDLIB_CODE_FILE): where the carrier was restored, the hook
// uses that file; where the carrier is stored, the hook records from the installs on and the file is written just
// before the carrier's files are read, so it holds what NumPy's and the core's imports compiled.
class SiteEntries {
  constructor(indexURL, version, scope, stdlibCode, mark) {
    // entries stored without the standard library's code (stdlibCode off: a switch for comparisons) under keys of
    // their own: a later visit with it on would restore such a carrier, find no code file and never store one
    scope = stdlibCode ? scope : `${scope}-nostdlib`;
    Object.assign(this, {indexURL, version, scope, stdlibCode, mark, early: null, parts: null});
  }

  static carrier(parts) {
    return parts.wheels.length ? parts.wheels[parts.wheels.length - 1] : parts.numpy;
  }

  #part(version, sha256, files = null) {
    if (!isSha256(sha256)) return {sha256: null, key: null, files: Promise.resolve(null)};
    const key = siteKey(this.indexURL, version, this.scope, sha256);
    return {sha256, key, files: files || readSite(key, this.mark)};
  }

  prefetch(numpySha256, wheels) {
    const numpy = numpySha256 ? Promise.resolve(numpySha256).then((h) => this.#part(this.version, h)) : null;
    this.early = {numpy, wheels: wheels.map((w) => this.#part(this.version, w.sha256))};
  }

  /** Write the cached entries into py's site-packages; resolves to {numpy, wheels: [...]} parts. */
  async restore(py, version, numpy, wheels) {
    const early = this.early || {wheels: []};
    const lock = numpy ? (numpyLockEntry(py) || {}).sha256 : null;
    const earlyNumpy = early.numpy && await early.numpy;
    const parts = {
      // the lock file Pyodide read names the NumPy it installs: an entry prefetched for another is not used
      numpy: numpy ? (earlyNumpy && earlyNumpy.sha256 === lock && version === this.version ? earlyNumpy
        : this.#part(version, lock)) : null,
      wheels: wheels.map((w, i) => (version === this.version && early.wheels[i]) || this.#part(version, w.sha256)),
    };
    const all = [parts.numpy, ...parts.wheels].filter(Boolean);
    const files = await Promise.all(all.map((p) => p.files));
    const dir = sitePackagesOf(py);
    all.forEach((part, i) => {
      part.files = null;  // not kept: the file system owns the bytes now
      if (!files[i]) return;
      try {
        writeTree(py.FS, dir, files[i], SITE_MTIME_MS);
        part.restored = true;
      } catch (e) {
        // that wheel is installed over whatever was written, as without an entry
        console.warn(`WebNN polyfill: cached site-packages could not be written: ${e && e.message ? e.message : e}`);
      }
    });
    if (all.some((p) => p.restored)) forgetListings(py);
    const carrier = SiteEntries.carrier(parts);
    if (this.stdlibCode && carrier && carrier.restored && py.FS.analyzePath(`${dir}/${STDLIB_CODE_FILE}`).exists) {
      stdlib(() => hookStdlib(py, dir, false));  // before anything is imported
    }
    if (parts.numpy && parts.numpy.restored) py.loadedPackages.numpy = 'pyodide-webnn (cached site-packages)';
    this.parts = parts;
    return parts;
  }

  // After the installs: the installed wheels' files get SITE_MTIME_MS and CPython writes .pyc as it imports
  // (their timestamps then match the files the next visit writes back); the returned function stores the entries
  // of those named ('numpy', 'wheels'; all by default), each once, and stops the .pyc once all are stored.  It
  // resolves once the writes are under way (sitecache.js writeSite) to {stored: Promise<bool>}.
  prepareStore(py) {
    const dir = sitePackagesOf(py);
    const {numpy, wheels} = this.parts;
    const groups = {numpy: numpy ? [numpy] : [], wheels};
    const pending = [numpy, ...wheels].filter((p) => p && !p.restored && p.key && p.tops);
    if (!pending.length) return notStored;
    for (const part of pending) {
      for (const path of wheelPaths(py.FS, dir, part.tops)) py.FS.utime(`${dir}/${path}`, SITE_MTIME_MS, SITE_MTIME_MS);
    }
    py.runPython('import sys; sys.dont_write_bytecode = False');
    const carrier = this.stdlibCode && pending.includes(SiteEntries.carrier(this.parts))
      ? SiteEntries.carrier(this.parts) : null;
    if (carrier) stdlib(() => hookStdlib(py, dir, true));
    return async (which = ['numpy', 'wheels']) => {
      const now = which.flatMap((g) => groups[g] || []).filter((p) => pending.includes(p));
      for (const part of now) {
        if (part.writing) continue;
        let tops = part.tops;
        if (part === carrier) {
          stdlib(() => saveStdlib(py, dir));
          tops = [...tops, STDLIB_CODE_FILE];
        }
        part.writing = writeSite(part.key, wheelTree(py.FS, dir, tops));
      }
      if (pending.every((p) => p.writing)) py.runPython('import sys; sys.dont_write_bytecode = True');
      const writes = await Promise.all(now.map((p) => p.writing));
      return {stored: Promise.all(writes.map((w) => w.stored)).then((done) => done.length > 0 && done.every(Boolean))};
    };
  }
}


// Compiling pyodide.asm.wasm (10 MB) once for both Pyodides.  Pyodide 0.27 instantiates it with
// WebAssembly.instantiateStreaming(fetch(<indexURL>pyodide.asm.wasm), imports) and takes no compiled module,
// so while a loadPyodide of ours runs, that one URL's instantiation is served from the module known for it
// (handed over by the other Pyodide's thread) or, without one, compiled as usual and the module kept.  Any
// other call passes through untouched, and the original function is back once no boot of ours is running.
const modules = new Map();  // pyodide.asm.wasm URL -> WebAssembly.Module, or a promise of one (or of null)
const booting = new Map();  // pyodide.asm.wasm URL -> how many boots of ours are running
let original = null;  // WebAssembly.instantiateStreaming while it is wrapped

// `onModule(module)`: called once the module this boot instantiates is known (compiled, or given), before the
// instantiation itself.
const moduleListeners = new Map();  // pyodide.asm.wasm URL -> [onModule of each boot of ours running]

function shareWasm(indexURL, given, onModule = () => {}) {
  const wa = globalThis.WebAssembly;
  if (!fetchable(indexURL) || !wa || typeof wa.instantiateStreaming !== 'function') {
    return {release: () => {}, module: () => (wa && given instanceof wa.Module ? given : null)};
  }
  const url = new URL('pyodide.asm.wasm', indexURL).href;
  if (given && !modules.has(url)) modules.set(url, given);
  booting.set(url, (booting.get(url) || 0) + 1);
  moduleListeners.set(url, [...(moduleListeners.get(url) || []), onModule]);
  const known = (key, module) => {
    for (const fn of moduleListeners.get(key) || []) fn(module);
    moduleListeners.delete(key);
  };
  if (!original) {
    const passThrough = original = wa.instantiateStreaming;
    wa.instantiateStreaming = async function instantiateStreaming(source, imports) {
      const response = await source;
      const key = response && response.url;
      const module = booting.has(key) && await modules.get(key);
      if (module) {
        modules.set(key, module);
        known(key, module);
        return {module, instance: await wa.instantiate(module, imports)};
      }
      if (!booting.has(key)) return passThrough.call(this, response, imports);
      // compiled apart from the instantiation, so that the module is known (and can go to another Pyodide) first
      const compiled = await wa.compileStreaming(response);
      modules.set(key, compiled);
      known(key, compiled);
      return {module: compiled, instance: await wa.instantiate(compiled, imports)};
    };
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      const n = booting.get(url) - 1;
      if (n) booting.set(url, n);
      else booting.delete(url);
      if (!booting.has(url)) moduleListeners.delete(url);
      if (!booting.size && original) {
        wa.instantiateStreaming = original;
        original = null;
      }
    },
    module: () => (modules.get(url) instanceof wa.Module ? modules.get(url) : null),
  };
}
