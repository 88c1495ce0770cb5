// The one way this project starts a Pyodide: the page's (builder) and the execution worker's (runtime.js,
// engine.js) in the browser, and the Node runners (scripts/pyodide_node.mjs, tests/pyodide/run_wpt.mjs).
//
// Steps: import Pyodide's loader from indexURL (load-pyodide.js: pages, workers, service workers), start the
// interpreter (snapshot.js: from the memory snapshot when there is one), then install NumPy and wheels
// (wheels.js: fetched with their sha256 checked and unpacked, or loadPackage where fetch cannot reach the files,
// e.g. a file system path under Node).  The version is the one its loader reports; the repository pins it in
// one place, the file PYODIDE_VERSION (read by web/settings.py, scripts/fetch_assets.py and, for the Node
// runners, scripts/pyodide_node.mjs).

import {importPyodide} from './load-pyodide.js';
import {startPyodide} from './snapshot.js';
import {installNumpy, installWheel, numpyLockEntry} from './wheels.js';
import {SITE_MTIME_MS, forgetListings, listTree, readSite, readTree, siteKey, sitePackagesOf, writeSite,
  writeTree} from './sitecache.js';

const QUIET = {messageCallback: () => {}};

/** True when wheels can be fetched from indexURL (http, https, blob); false for a file system path. */
function fetchable(indexURL) {
  return /^(https?|blob):/i.test(indexURL);
}

/**
 * A started Pyodide with what it needs installed.
 *  indexURL      Pyodide's folder (a URL, or a path ending in '/' under Node)
 *  lockFileURL   a lock file other than indexURL's own (the dist package's)
 *  env, stdout, stderr, args: loadPyodide's options (stdout/stderr default to silence)
 *  snapshot      {use, make, store, given, givenNew, prebuilt}: restore `given` snapshot bytes, the cached
 *                snapshot or the build's (`prebuilt`: {url, sha256, size}) / take one when booting without,
 *                and store it (snapshot.js startPyodide)
 *  wasmModule    pyodide.asm.wasm already compiled (another Pyodide's, see shareWasm below)
 *  numpy         install NumPy
 *  wheels        [{url, sha256}] installed after (sha256: hex, checked before anything is unpacked)
 *  packages      names for loadPackage (e.g. 'scipy' under Node)
 *  unpack        false installs with loadPackage (the worker's ?unpack=0)
 *  unzip         false unpacks with CPython's zipfile instead of in JavaScript (the worker's ?unzip=0)
 *  siteCache     restore site-packages (with its .pyc) from Cache Storage (sitecache.js), or install the wheels
 *                and let the caller store it with storeSite() once it has imported what it needs
 *  mark(stage, info) called after 'script', 'runtime' (info: {snapshot, snapshotBytes, wasmModule}), 'numpy', 'wheels'
 *                (each when installed) and 'packages'; with siteCache also 'siteOpen', 'siteRead', 'siteChecked';
 *                with a prebuilt snapshot 'snapshotFetched' (fetched and inflated)
 * Resolves to {py, version, snapshot: 'handed'|'loaded'|'prebuilt'|'made'|'none', snapshotBytes, wasmModule,
 * numpy, wheels: 'cached'|'unzipped'|'unpacked'|'loadPackage'|null (how each was installed), storeSite: () =>
 * Promise<bool> (stores site-packages, sources and the .pyc written since, when it did not come from the cache;
 * call it after the imports)}: snapshotBytes and wasmModule (when known) can start another Pyodide.
 */
export async function bootPyodide({indexURL, lockFileURL, env, stdout = () => {}, stderr = () => {}, args,
  snapshot = {use: false, make: false}, wasmModule = null, numpy = false, wheels = [], packages = [],
  unpack = true, unzip = true, siteCache = false, mark = () => {}} = {}) {
  const viaFetch = unpack && fetchable(indexURL);
  // (Fetching the wheels while Pyodide starts was tried: Firefox's snapshot restore in the worker took 0.4-0.6 s
  // longer beside the downloads and digests, more than they cost after it.)
  const {loadPyodide, version} = await importPyodide(indexURL);
  mark('script');
  const options = {indexURL, stdout, stderr};
  if (lockFileURL) options.lockFileURL = lockFileURL;
  if (env && Object.keys(env).length) options.env = env;
  if (args) options.args = args;
  const wasm = shareWasm(indexURL, wasmModule);
  let started;
  try {
    started = await startPyodide(loadPyodide, version, options, {...snapshot, mark});
  } finally {
    wasm.release();
  }
  const py = started.py;
  mark('runtime', {snapshot: started.snapshot, snapshotBytes: started.bytes, wasmModule: wasm.module()});
  const site = siteCache && viaFetch
    ? await restoreSite(py, indexURL, version || py.version, numpy, wheels, mark) : null;
  if (site && site.restored) {
    mark('numpy');
    mark('wheels');
    if (packages.length) await py.loadPackage(packages, QUIET);
    mark('packages');
    return {py, version: version || py.version, snapshot: started.snapshot, snapshotBytes: started.bytes,
      wasmModule: wasm.module(), numpy: numpy ? 'cached' : null, wheels: wheels.length ? 'cached' : null,
      storeSite: async () => false};
  }
  // NumPy and the wheels fetched and unpacked concurrently; then packages by name (SciPy needs NumPy)
  const [numpyHow, wheelsHow] = await Promise.all([
    numpy ? installNumpy(py, indexURL, {unpack: viaFetch, unzip}).then((how) => { mark('numpy'); return how; })
      : null,
    wheels.length ? Promise.all(wheels.map((w) => installWheel(py, w.url, w.sha256, {unpack: viaFetch, unzip})))
      .then((hows) => { mark('wheels'); return [...new Set(hows)].join(','); }) : null,
  ]);
  const storeSite = site && [numpyHow, wheelsHow].every((how) => how === null || !/loadPackage/.test(how))
    ? prepareSite(py, site.key) : async () => false;
  if (packages.length) await py.loadPackage(packages, QUIET);
  mark('packages');
  return {py, version: version || py.version, snapshot: started.snapshot, snapshotBytes: started.bytes,
    wasmModule: wasm.module(), numpy: numpyHow, wheels: wheelsHow, storeSite};
}

// The cached site-packages of these wheels written into py's file system: {restored: true}; else {key} (where
// the caller may store it) or null (a wheel without a known sha256: nothing to key it by).
async function restoreSite(py, indexURL, version, numpy, wheels, mark) {
  const sha256s = [...(numpy ? [(numpyLockEntry(py) || {}).sha256] : []), ...wheels.map((w) => w.sha256)];
  if (!sha256s.length || !sha256s.every((h) => /^[0-9a-f]{64}$/.test(h || ''))) return null;
  const key = siteKey(indexURL, version, sha256s);
  const files = await readSite(key, mark);
  if (!files) return {key};
  try {
    writeTree(py.FS, sitePackagesOf(py), files, SITE_MTIME_MS);
  } catch (e) {
    // the wheels are installed over whatever was written, as without an entry
    console.warn(`WebNN polyfill: the cached site-packages could not be written: ${e && e.message ? e.message : e}`);
    return {key};
  }
  forgetListings(py);
  if (numpy) py.loadedPackages.numpy = 'pyodide-webnn (cached site-packages)';
  return {restored: true};
}

// After an install the cache did not have: every file gets SITE_MTIME_MS and CPython writes .pyc as it imports
// (their timestamps then match the files the next visit writes back); the returned function turns that off and
// stores site-packages, once.
function prepareSite(py, key) {
  const dir = sitePackagesOf(py);
  for (const path of listTree(py.FS, dir)) py.FS.utime(`${dir}/${path}`, SITE_MTIME_MS, SITE_MTIME_MS);
  py.runPython('import sys; sys.dont_write_bytecode = False');
  let stored = null;
  return () => {
    if (!stored) {
      py.runPython('import sys; sys.dont_write_bytecode = True');
      stored = writeSite(key, readTree(py.FS, dir));
    }
    return stored;
  };
}


// Compiling pyodide.asm.wasm (10 MB) once for both Pyodides.  Pyodide 0.27 instantiates it with
// WebAssembly.instantiateStreaming(fetch(<indexURL>pyodide.asm.wasm), imports) and takes no compiled module,
// so while a loadPyodide of ours runs, that one URL's instantiation is served from the module known for it
// (handed over by the other Pyodide's thread) or, without one, compiled as usual and the module kept.  Any
// other call passes through untouched, and the original function is back once no boot of ours is running.
const modules = new Map();  // pyodide.asm.wasm URL -> WebAssembly.Module
const booting = new Map();  // pyodide.asm.wasm URL -> how many boots of ours are running
let original = null;  // WebAssembly.instantiateStreaming while it is wrapped

function shareWasm(indexURL, given) {
  const wa = globalThis.WebAssembly;
  if (!fetchable(indexURL) || !wa || typeof wa.instantiateStreaming !== 'function') {
    return {release: () => {}, module: () => given};
  }
  const url = new URL('pyodide.asm.wasm', indexURL).href;
  if (given && !modules.has(url)) modules.set(url, given);
  booting.set(url, (booting.get(url) || 0) + 1);
  if (!original) {
    const passThrough = original = wa.instantiateStreaming;
    wa.instantiateStreaming = async function instantiateStreaming(source, imports) {
      const response = await source;
      const key = response && response.url;
      const module = booting.has(key) && modules.get(key);
      if (module) return {module, instance: await wa.instantiate(module, imports)};
      const result = await passThrough.call(this, response, imports);
      if (booting.has(key)) modules.set(key, result.module);
      return result;
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
      if (!booting.size && original) {
        wa.instantiateStreaming = original;
        original = null;
      }
    },
    module: () => modules.get(url) || null,
  };
}
