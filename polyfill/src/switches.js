// Every switch the polyfill reads, in one table: the execution worker's URL parameters and the keys of
// `globalThis.WEBNN_POLYFILL_CONFIG`. Code reads a switch only through the functions below, which refuse a name
// the table lacks; tests/infra/test_switches.py fails when code names a switch missing here, or when a switch
// listed here is read nowhere. docs/startup.md renders this table.
//
// A worker URL switch sits on the worker script's URL (`WEBNN_POLYFILL_CONFIG.workerURL =
// '.../webnn-worker.js?native=0'`); every switch is on unless given as `0`. A config key is set on
// `globalThis.WEBNN_POLYFILL_CONFIG` before the polyfill's script runs; a boolean key is on unless `false`.
//
// Each entry is `name: default`, after the comment that says what it is for (docs/startup.md shows both; a
// default of null is described in its comment).

/** The worker URL's switches: name -> default ('1': on unless given as 0). */
export const WORKER_SWITCHES = Object.freeze({
  // the graph compiler (py_core.compiler passes); 0 runs graphs as built
  compiler: '1',
  // the C kernels (py_core/kernels/native); 0 runs every kernel in NumPy
  native: '1',
  // the compiled plan (py_core/compiler/plan.py); 0 runs every step from Python
  plan: '1',
  // SciPy's OpenBLAS sgemm, loaded once for a graph with large matrix products when the C kernels are off or
  // missing; 0 never loads it
  blas: '1',
  // where no snapshot is cached, restore the build's Pyodide snapshots; 0 starts CPython and imports NumPy instead
  prebuilt: '1',
  // the build's snapshot taken after `import numpy` (boot/relink.js); 0 restores the bare one and imports NumPy
  // after it
  numpysnapshot: '1',
  // keep the core a snapshot came with imported; 0 imports the core from its files
  coresnapshot: '1',
  // install NumPy and the core by writing their files (boot/wheels.js); 0 uses Pyodide's loadPackage
  unpack: '1',
  // unzip wheels in JavaScript (DecompressionStream); 0 uses CPython's zipfile
  unzip: '1',
  // restore and store site-packages with its .pyc in Cache Storage (boot/sitecache.js); 0 does neither
  sitecache: '1',
  // keep the standard library's compiled code in the site-packages entry (boot/stdlibpyc.js); 0 leaves it out
  stdlibcode: '1',
  // start Pyodide's steps side by side (early imports, compile, cache reads: boot/boot.js); 0 runs them one after
  // another
  early: '1',
  // where NumPy comes imported, when its files are written: 0 before the init reply, 1 after it; null (not given):
  // after it, except in Firefox (before)
  defernumpy: null,
  // direct mode: writes, reads and dispatches call no Python (engine/direct.js); 0 goes through the Python glue
  direct: '1',
  // one graph over both cores where the config asks for it (`split: true`); 0 keeps it off
  split: '1',
  // keep the Pyodide snapshots in the Origin Private File System (boot/snapstore.js); 0 uses Cache Storage
  opfs: '1',
});

/** WEBNN_POLYFILL_CONFIG's keys: name -> default. */
export const CONFIG_KEYS = Object.freeze({
  // the folder holding the package's files (also the script tag's data-base); asset URLs resolve against it;
  // null: the script's own folder
  baseURL: null,
  // Pyodide's folder (pyodide.mjs, pyodide.asm.wasm, the standard library); null: resolved from baseURL
  pyodideURL: null,
  // a package's Pyodide lock file, naming NumPy's wheel; null: resolved from baseURL
  lockFileURL: null,
  // the dev server's core manifest (the core wheel, its sha256, the build's snapshots); null: from baseURL
  coreManifestURL: null,
  // {url, sha256} of the core wheel; null: the package's, or the manifest's
  coreWheel: null,
  // the build's bare Pyodide snapshot {url, sha256, size}; null: the package's, or the manifest's
  snapshotAsset: null,
  // the build's snapshot with NumPy imported; null: the package's, or the manifest's
  numpySnapshotAsset: null,
  // the execution worker script, whose URL carries the worker switches; null: webnn-worker.js from baseURL
  workerURL: null,
  // the engine as a classic script, loaded where the scope cannot start workers (a service worker, a shared
  // worker in Chromium); null: webnn-engine.js from baseURL
  engineURL: null,
  // 'auto' keeps a native navigator.ml, 'replace' replaces it (also the script tag's data-install, a worker's
  // WEBNN_POLYFILL_INSTALL)
  install: 'auto',
  // the draft's behaviour where Chromium differs (docs/compatibility.md; also data-strict, a worker's
  // WEBNN_POLYFILL_STRICT)
  strict: false,
  // the page's Pyodide unzips the core wheel in JavaScript; false: CPython's zipfile
  unzip: true,
  // the page's site-packages kept in Cache Storage; false: neither restored nor stored
  siteCache: true,
  // the page's Pyodide starts its steps side by side; false: one after another
  early: true,
  // the standard library's compiled code kept in the page's site-packages entry; false: left out
  stdlibCode: true,
  // keep the core the page's snapshot came with imported; false: import it from its files
  coreSnapshot: true,
  // restore the build's snapshots where none is cached, in the page and every worker; false: start CPython
  prebuiltSnapshot: true,
  // the page's Pyodide snapshot kept in the Origin Private File System; false: Cache Storage
  opfs: true,
  // ms a Pyodide start (the page's, each worker's) may take before it fails with the step it reached (read at each
  // start); null: 180000 (runtime/rpc.js BOOT_LIMIT_MS)
  bootTimeoutMs: null,
  // ms without a byte on a download of the polyfill's files (Pyodide, wheels, snapshots, the manifest) before that
  // file fails; null: 30000 (boot/fetches.js FETCH_STALL_MS)
  fetchStallMs: null,
  // how many execution workers contexts spread over; null: 2 on two or more cores, else 1
  workers: null,
  // true: a graph separable over its batch runs half of it on each of two workers (read at each build())
  split: false,
  // the least work (flops) a graph needs to be split (read at each build()); null: the core's threshold
  splitMinFlops: null,
  // the timeline calls made in one go leave as one postMessage; false: one message each
  batch: true,
  // writeTensor copies into a buffer the worker gave back; false: a fresh one each time
  staging: true,
  // direct mode in every worker (as the worker URL switch direct); false: off
  direct: true,
  // dispatch() reuses a graph's last validated bindings when the same tensors come again; false: validates every
  // time
  bindingCache: true,
});

function known(table, name, what) {
  if (!Object.prototype.hasOwnProperty.call(table, name)) throw new Error(`unknown ${what} '${name}' (switches.js)`);
}

/** The worker URL switch `name` in `params` (URLSearchParams): its value, or null where not given. */
export function workerSwitch(params, name) {
  known(WORKER_SWITCHES, name, 'worker URL switch');
  return params ? params.get(name) : null;
}

/** Whether the worker URL switch `name` is on in `params`: every switch is, unless given as 0. */
export function workerSwitchOn(params, name) {
  return workerSwitch(params, name) !== '0';
}

/** The worker URL switches of `url` (a URLSearchParams; empty for a URL that does not parse). */
export function switchesOf(url) {
  try {
    return new URL(url).searchParams;
  } catch (e) {
    return new URLSearchParams();
  }
}

/** The config key `name` of `config` (undefined where not given). */
export function configValue(config, name) {
  known(CONFIG_KEYS, name, 'WEBNN_POLYFILL_CONFIG key');
  return config ? config[name] : undefined;
}

/** Whether the boolean config key `name` is on: it is, unless given as false. */
export function configOn(config, name) {
  return configValue(config, name) !== false;
}

/** WEBNN_POLYFILL_CONFIG as the page holds it now (keys read at each build() see later changes). */
export function liveConfig() {
  return (typeof globalThis !== 'undefined' && globalThis.WEBNN_POLYFILL_CONFIG) || {};
}
