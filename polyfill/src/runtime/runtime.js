// Boots the two Pyodide instances the polyfill uses, once per page:
//  - the page's own (NumPy-free) Pyodide, where MLGraphBuilder validates synchronously, and
//  - the execution worker's Pyodide with NumPy, where graphs run off the main thread.
// Reports progress as `progress` events on webnnPolyfill.

import {errorFromJson} from '../api/errors.js';
import {WorkerClient, bootLimit} from './rpc.js';
import {bootPyodide} from '../boot/boot.js';
import {cacheLog} from '../boot/cachelog.js';
import {transient, watchFetches} from '../boot/fetches.js';
import {inFirefox} from '../boot/load-pyodide.js';
import {stdlibUsed} from '../boot/stdlibpyc.js';
import {configOn, configValue} from '../switches.js';

// the page's Pyodide waits at most this long for the worker's to start and hand it its compiled wasm and
// snapshot (a cold first visit takes 3-4 s here, much longer on a loaded machine; a worker that fails
// releases it at once): booting beside a slow worker would only slow both
const PAGE_WAIT_LIMIT_MS = 60000;
// A boot that failed because a download broke off (not a 404, nor a stall) is started again this many times:
// a connection cut once, as a flaky network or a browser's cache under load does, is not worth a failed page
const BOOT_RETRIES = 1;
const STAGES = ['manifest', 'page-runtime', 'page-core', 'worker-runtime', 'worker-numpy', 'worker-core'];

/** The config's bound on a stalled download, in ms (fetchStallMs), else undefined: boot/fetches.js's. */
function fetchStall(config) {
  const given = Number(configValue(config, 'fetchStallMs'));
  return given > 0 ? given : undefined;
}

// What the worker hands over beside its compiled pyodide.asm.wasm, which it hands over in every browser
// (engine/start.js handOver).  In Firefox a return visit is slower (0.3-1.7 s in six interleaved pairs) with the
// page restoring the worker's copy of the cached snapshot than reading the cache itself, so Firefox gets only a
// snapshot the worker has just made (a first visit, where it spares the page's CPython start).
function handOverWhat() {
  return {cachedSnapshot: !inFirefox()};
}

export class Runtime {
  constructor(config, events) {
    this.config = config;
    this.events = events;
    this.timings = {};  // ms from boot() per stage; `snapshot`: per instance, 'handed', 'loaded', 'made' or 'none'
    this.handoff = null;  // resolves to what the worker hands the page's Pyodide: {snapshot, module}
    this.done = new Set();
    this.lostListeners = new Set();
    this.host = null;
    this.pageHeap = null;  // the page's Pyodide module, once it runs (pageHeapBytes)
    this.worker = null;
    this.booting = null;  // the worker being started (terminated if the boot fails)
    this.pagePromise = null;
    this.workerPromise = null;
    // resolves when the worker's Pyodide runs (or took too long); to false when it failed: the boot fails with it,
    // and a page Pyodide started then would only fetch what just failed beside the next attempt
    this.workerStarted = null;
    this.releasePage = () => {};  // resolves workerStarted
    this.t0 = 0;
  }

  #progress(stage, message) {
    // Stages after boot (e.g. the worker loading SciPy BLAS for a large graph) are reported, not counted.
    if (stage === 'worker-runtime' && !this.handoff) this.releasePage();  // else its handoff releases it
    // when the site-packages entries were stored (page clock; boot/sitecache.js): message 'numpy' or 'wheels'.  A
    // timing only, not a progress event: it often comes after the graph is built, and a page showing progress
    // as "loading" (examples/webnn-app) would show it over its result
    // NumPy's files written after the worker's init reply (boot/boot.js deferNumpy): how they were installed
    if (stage === 'worker-numpy-files') {
      this.timings.numpy = message;
      return;
    }
    if (stage === 'worker-site-stored') {
      this.timings.siteStored = {...this.timings.siteStored,
        [`worker-${message}`]: Math.round(performance.now() - this.t0)};
      return;
    }
    if (STAGES.includes(stage)) {
      this.done.add(stage);
      this.timings[stage] = Math.round(performance.now() - this.t0);
    }
    const detail = {stage, message, loaded: this.done.size, total: STAGES.length,
      elapsedMs: Math.round(performance.now() - this.t0)};
    this.events.dispatchEvent(new CustomEvent('progress', {detail}));
  }

  async #manifest() {
    if (!this.manifestPromise && this.config.coreWheel) {
      // a built package names its core wheel (and hash) itself
      this.coreWheelURL = this.config.coreWheel.url;
      this.coreWheelSha256 = this.config.coreWheel.sha256;
      this.snapshotAsset = this.config.snapshotAsset || null;
      this.numpySnapshotAsset = this.config.numpySnapshotAsset || null;
      this.manifestPromise = Promise.resolve(this.config.coreWheel);
      this.#progress('manifest', 'core wheel named by the package');
    }
    if (!this.manifestPromise) {
      const url = this.config.coreManifestURL;
      const watch = watchFetches([url], fetchStall(this.config));  // bounded, and a failure names it
      this.manifestPromise = fetch(url, {cache: 'no-cache'}).then(async (r) => {
        if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
        const m = await r.json().catch((e) => {
          throw new Error(`${url} is not a core manifest: ${e && e.message ? e.message : e}`);
        });
        this.coreWheelURL = new URL(m.wheel, this.config.coreManifestURL).href;
        this.coreWheelSha256 = m.sha256;
        // the build's Pyodide snapshots (scripts/make_snapshot.mjs), when they were built: the bare one, and the
        // worker's taken after `import numpy` (its extension modules relinked: boot/relink.js)
        const at = (asset) => (asset ? {...asset, url: new URL(asset.url, this.config.coreManifestURL).href} : null);
        this.snapshotAsset = at(m.snapshot);
        this.numpySnapshotAsset = at(m.numpySnapshot);
        this.#progress('manifest', 'core manifest loaded');
        return m;
      }).finally(() => watch.release());
      // a failed boot is tried again from the start (boot)
      this.manifestPromise.catch(() => { this.manifestPromise = null; });
    }
    return this.manifestPromise;
  }

  async #bootPage() {
    await this.#manifest();
    const t0 = performance.now();
    const page = {};
    // From the snapshot and compiled module the worker's Pyodide handed over as it started (nothing when it
    // failed, took too long or runs with switches); without them from the snapshot the last visit stored;
    // without one, boot normally and store one for the next visit.
    const handed = (await Promise.race([this.handoff, null])) || {};
    this.handoff = null;  // 20 MB: not kept once used
    const {py, snapshot, wheels, storeSite, imported} = await bootPyodide({indexURL: this.config.pyodideURL,
      lockFileURL: this.config.lockFileURL, unzip: configOn(this.config, 'unzip'),
      siteCache: configOn(this.config, 'siteCache'), siteScope: 'page', early: configOn(this.config, 'early'),
      stdlibCode: configOn(this.config, 'stdlibCode'), snapshotImports: configOn(this.config, 'coreSnapshot'),
      snapshot: {use: true, make: true, given: handed.snapshot || null, givenNew: !!handed.made,
        prebuilt: this.prebuilt()},
      wasmModule: handed.module || null, stallMs: fetchStall(this.config),
      wheels: [{url: this.coreWheelURL, sha256: this.coreWheelSha256}],
      mark: (stage) => {
        page[stage] = Math.round(performance.now() - t0);
        if (stage === 'runtime') this.#progress('page-runtime', 'Pyodide started on the page');
      }});
    this.timings.snapshot = {...this.timings.snapshot, page: snapshot};
    // the page's caches: its store, entries dropped, storage refused (boot/cachelog.js; live: later writes too)
    this.timings.cache = {...this.timings.cache, page: cacheLog()};
    // the packages that came imported with the snapshot (['py_core']: the build's, for this core wheel)
    this.timings.imported = {...this.timings.imported, page: imported};
    // 'cached' (site-packages from Cache Storage), 'unzipped' (in JavaScript) or 'unpacked' (CPython's zipfile)
    this.timings.wheels = {...this.timings.wheels, page: wheels};
    this.timings.wasm = handed.module ? 'handed' : 'compiled';  // the page's pyodide.asm.wasm: the worker's, or its own
    this.pageHeap = py._module;  // for pageHeapBytes()
    const mod = py.pyimport('py_core.bridge.builder_host');
    this.host = mod.HOST;
    this.callJson = this.host.call_json;
    // compiles of the standard library answered from the site cache's stored code (boot/stdlibpyc.js)
    this.timings.stdlibCode = {...this.timings.stdlibCode, page: stdlibUsed(py)};
    page.core = Math.round(performance.now() - t0);
    this.timings.page = page;  // ms on this page's clock since its Pyodide started booting
    this.#progress('page-core', 'graph builder ready');
    this.limits = this.call('op_support_limits');
    // the core wheel and the builder's .pyc, for the next visit (boot/sitecache.js)
    setTimeout(async () => {
      if (await (await storeSite()).stored) {
        this.timings.siteStored = {...this.timings.siteStored, page: Math.round(performance.now() - this.t0)};
      }
    }, 0);
  }

  async #bootWorker(handoff) {
    await this.#manifest();
    const worker = new WorkerClient(
      this.config.workerURL,
      (msg) => this.#progress(msg.stage, msg.message),
      (reason) => this.#workerLost(worker, reason), this.config);
    this.booting = worker;
    const ready = await worker.start({...this.engineInit(), handoff, handOver: handOverWhat()},
      handoff ? [handoff] : []);
    // workers started before one ran its script (rpc.js #spawn): 1 but where a browser never ran one
    this.timings.workerStarts = worker.spawns;
    if (ready && ready.snapshot) this.timings.snapshot = {...this.timings.snapshot, worker: ready.snapshot};
    // true: the worker's snapshot came with NumPy imported (boot/relink.js); else, where it was asked for, why not
    if (ready) this.timings.numpySnapshot = !!ready.numpySnapshot;
    if (ready && ready.numpySnapshotWhy) this.timings.numpySnapshotWhy = ready.numpySnapshotWhy;
    if (ready && ready.imported) this.timings.imported = {...this.timings.imported, worker: ready.imported};
    // 'cached' (site-packages from Cache Storage), 'unzipped' (in JavaScript), 'unpacked' (CPython's zipfile) or
    // 'loadPackage' (fallback)
    if (ready && ready.numpy) this.timings.numpy = ready.numpy;
    if (ready && ready.wheels) this.timings.wheels = {...this.timings.wheels, worker: ready.wheels};
    if (ready && ready.stages) this.timings.worker = ready.stages;  // ms on the worker's own clock
    if (ready && ready.cache) this.timings.cache = {...this.timings.cache, worker: ready.cache};  // as at its reply
    if (ready && ready.stdlibCode !== undefined) {
      this.timings.stdlibCode = {...this.timings.stdlibCode, worker: ready.stdlibCode};
    }
    this.worker = worker;
    return worker;
  }

  /** What every execution worker's 'init' carries (this one, and further ones: pool.js); after #manifest(). */
  engineInit() {
    return {pyodideURL: this.config.pyodideURL, lockFileURL: this.config.lockFileURL,
      coreWheelURL: this.coreWheelURL, coreWheelSha256: this.coreWheelSha256, snapshotAsset: this.prebuilt(),
      stallMs: fetchStall(this.config),
      numpySnapshotAsset: this.prebuilt() && this.numpySnapshotAsset};
  }

  /** The build's snapshot for a Pyodide without a cached one; WEBNN_POLYFILL_CONFIG.prebuiltSnapshot = false:
   * none, for the page's and the workers' (a worker's own switch is its URL's ?prebuilt=0), nor the worker's
   * NumPy snapshot. */
  prebuilt() {
    return configOn(this.config, 'prebuiltSnapshot') ? this.snapshotAsset || null : null;
  }

  #workerLost(worker, reason) {
    if (this.worker === worker) this.worker = null;
    this.workerPromise = null;
    for (const fn of [...this.lostListeners]) fn(worker, reason);
  }

  /** The execution worker alone, booting it if needed (the page's builder Pyodide is not started by this). */
  engine() {
    if (!this.t0) this.t0 = performance.now();
    if (!this.workerPromise) {
      // The page's Pyodide starts once the worker's runs: two Pyodides compiling and restoring at once compete
      // for the cores (Firefox recompiles the 10 MB pyodide.asm.wasm on every visit), and the worker's path
      // (NumPy, the core, the compiler) is the longer one.
      this.workerStarted = new Promise((resolve) => {
        this.releasePage = resolve;
        setTimeout(resolve, PAGE_WAIT_LIMIT_MS);
      });
      // While the page's Pyodide is not running, the worker hands it its compiled pyodide.asm.wasm and its
      // memory snapshot (engine/start.js handOver) on a port of its own.
      let handoff = null;
      if (!this.callJson && typeof MessageChannel === 'function') {
        const {port1, port2} = new MessageChannel();
        handoff = port2;
        this.handoff = new Promise((resolve) => {
          const got = {};
          let parts = 0;
          const take = (data) => {
            Object.assign(got, data);
            if (++parts < 2) return;
            port1.close();
            resolve(got);
            this.releasePage();
          };
          port1.onmessage = (e) => take(e.data);
          port1.onmessageerror = () => {
            console.warn("WebNN polyfill: a part of the worker's Pyodide could not be read here; compiled again");
            take({});
          };
        });
      }
      this.workerPromise = this.#bootWorker(handoff).catch((e) => {
        this.workerPromise = null;
        this.releasePage(false);
        throw e;
      });
    }
    return this.workerPromise;
  }

  /** Boot whatever is not running yet; resolves when builder and worker are both ready, or rejects with why not
   *  (each attempt within bootLimit; a download that broke off is tried again, BOOT_RETRIES).  After a failure the
   *  next call starts again from the manifest. */
  async boot() {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#bootOnce();
      } catch (e) {
        if (attempt >= BOOT_RETRIES || !transient(e)) throw e;
        this.timings.bootRetries = attempt + 1;
        console.warn(`WebNN polyfill: starting again, a download broke off (${e.message})`);
      }
    }
  }

  async #bootOnce() {
    const engine = this.engine();
    if (!this.pagePromise) {
      const page = this.pagePromise = this.workerStarted.then((started) => {
        if (started === false) throw new Error('the WebNN worker did not start');
        return this.#bootPage();
      }).catch((e) => {
        if (this.pagePromise === page) this.pagePromise = null;  // (a retry may have started another)
        throw e;
      });
    }
    let timer = null;
    const limit = bootLimit(this.config);
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => {
        // (the worker's own start is bounded the same way, from its spawn: rpc.js start)
        if (this.callJson) {
          reject(new Error(`the WebNN worker was not ready within ${limit / 1000} s`));
          return;
        }
        this.pagePromise = null;
        const step = this.booting && !this.booting.dead ? `; the worker's last step: ${this.booting.lastStage}` : '';
        reject(new Error(`the page's Pyodide did not start within ${limit / 1000} s${step}`));
      }, limit);
    });
    try {
      const [, worker] = await Promise.race([Promise.all([this.pagePromise, engine]), late]);
      this.timings.total = Math.round(performance.now() - this.t0);
      this.#progress('ready', 'WebNN polyfill ready');
      return worker;
    } catch (e) {
      // nothing of a failed boot is kept: the next attempt starts a fresh worker, and a page Pyodide of its own
      // unless this one already runs (one still starting may be waiting on the file that failed)
      if (this.booting && this.booting !== this.worker) this.booting.terminate(`the WebNN polyfill could not start`);
      if (!this.callJson) this.pagePromise = null;
      throw new DOMException(`the WebNN polyfill could not start: ${e && e.message ? e.message : e}`,
        'NotSupportedError');
    } finally {
      clearTimeout(timer);
    }
  }

  /** The page's Pyodide's WebAssembly memory in bytes (0 before it runs): what the builder's validation costs. */
  pageHeapBytes() {
    return this.pageHeap ? this.pageHeap.HEAPU8.buffer.byteLength : 0;
  }

  /** A synchronous call into the page's builder host; throws the spec's error on failure. */
  call(method, ...args) {
    if (!this.callJson) throw new DOMException('the WebNN polyfill is not started', 'InvalidStateError');
    const reply = JSON.parse(this.callJson(method, JSON.stringify(args)));
    if (reply.error) throw errorFromJson(reply.error);
    return reply.ok;
  }
}
