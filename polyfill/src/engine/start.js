// The engine's 'init': boots its own Pyodide with NumPy and the core (boot/boot.js), hands the page's Pyodide
// what it needs to start fast, and loads the core's C kernels. The worker URL's switches (switches.js) choose
// the paths; a switch that changes the core's environment (compiler, native, plan) boots without snapshots,
// since a snapshot carries the environment it was made in.

import {workerSwitch, workerSwitchOn} from '../switches.js';

// a snapshot that did not come from Cache Storage (boot/snapshot.js startPyodide)
function fresh(snapshot) {
  return snapshot === 'made' || snapshot === 'prebuilt';
}

// The page's Pyodide starts once this one runs, from what this one has: the compiled pyodide.asm.wasm and the
// memory snapshot of the bare interpreter (of an environment-free boot only: a snapshot carries its
// environment), sent on the page's own port (a message it cannot read fails there, not on the engine's).
function handOver(port, {snapshot, snapshotBytes = null, wasmModule = null}) {
  if (!port) return;
  // Two messages, always (the page waits for both): one a browser fails to read (a messageerror) costs only
  // that part. A snapshot new to the cache (made here, or the build's) is stored by the page (`made`).
  const parts = [{snapshot: snapshotBytes, made: fresh(snapshot)}, {module: wasmModule}];
  // the snapshot's 21 MB moved, not copied (50-70 ms of this thread in Chromium): this Pyodide has restored or
  // made it and keeps no use for them
  const whole = snapshotBytes && snapshotBytes.byteOffset === 0
    && snapshotBytes.byteLength === snapshotBytes.buffer.byteLength;
  const transfers = [whole ? [snapshotBytes.buffer] : [], []];
  for (const [i, part] of parts.entries()) {
    try {
      port.postMessage(part, transfers[i]);
    } catch (e) {
      console.warn(`WebNN polyfill: the page's Pyodide starts without a part of the worker's: ${e && e.message}`);
      port.postMessage({});
    }
  }
  // (not closed here: the page closes its end once both parts are read.  Firefox fails, about one visit in two,
  // to read the module on the page when the port is closed right after the post: a messageerror)
}

/** The environment the worker URL's switches give the core (its compiler, C kernels, compiled plan). */
function coreEnvironment(switches) {
  const env = {};
  if (!workerSwitchOn(switches, 'compiler')) env.PYODIDE_WEBNN_COMPILER = '0';
  if (!workerSwitchOn(switches, 'native')) env.PYODIDE_WEBNN_NATIVE = '0';
  if (!workerSwitchOn(switches, 'plan')) env.PYODIDE_WEBNN_PLAN = '0';
  return env;
}

/**
 * Boot this engine's Pyodide for the init message `msg` (runtime/runtime.js engineInit) with `boot`
 * (boot/for-engine.js); `progress(stage, message)` reports to the page. Resolves to {pyodide, glue, direct,
 * numpyLater, reply}: `direct` whether direct mode is on, `numpyLater` a promise of NumPy's files written after
 * the init reply (null where they already are), `reply` the init reply.
 */
export async function startEngine(msg, {switches, progress, boot}) {
  const {bootPyodide, cacheLog, inFirefox, lastRelink, stdlibUsed} = boot;
  // the worker's own clock, since its first line ran: the page's stage times lag while its thread is busy
  const t0 = performance.now();
  const stages = {};
  const env = coreEnvironment(switches);
  // The page stores the snapshot (of a bare interpreter); a snapshot carries its environment, so the
  // switches boot without one.
  const plain = !Object.keys(env).length;
  const prebuilt = plain && workerSwitchOn(switches, 'prebuilt');
  // NumPy imported in the snapshot (boot/relink.js); ?numpysnapshot=0: imported after the bare one's restore
  const numpyAsset = prebuilt && workerSwitchOn(switches, 'numpysnapshot') ? msg.numpySnapshotAsset || null : null;
  const defer = workerSwitch(switches, 'defernumpy');
  const booted = await bootPyodide({indexURL: msg.pyodideURL, lockFileURL: msg.lockFileURL, env,
    // a snapshot made here goes to the page, which stores it (boot/snapshot.js)
    snapshot: {use: plain, make: plain, store: !msg.handoff, prebuilt: prebuilt ? msg.snapshotAsset || null : null,
      numpyAsset},
    numpy: true,
    wheels: [{url: msg.coreWheelURL, sha256: msg.coreWheelSha256}], unpack: workerSwitchOn(switches, 'unpack'),
    stallMs: msg.stallMs,
    unzip: workerSwitchOn(switches, 'unzip'), siteCache: workerSwitchOn(switches, 'sitecache'),
    // where NumPy comes imported its entry holds no .pyc of it (nothing compiled them): kept apart from the
    // entries a boot that imports NumPy stores and restores
    siteScope: numpyAsset ? 'worker-numpysnap' : 'worker',
    early: workerSwitchOn(switches, 'early'), stdlibCode: workerSwitchOn(switches, 'stdlibcode'),
    snapshotImports: workerSwitchOn(switches, 'coresnapshot'),
    // NumPy's files written after the init reply where NumPy came imported.  Not by default in Firefox: there
    // the 13 MB site entry issued just before the first graph was built is often not yet written when a short
    // visit closes, so every later visit unzips NumPy again; nor does its cold start gain
    deferNumpy: defer === '1' || (defer !== '0' && !inFirefox()),
    mark: (stage, info) => {
      stages[stage] = Math.round(performance.now() - t0);
      const what = msg.handOver || {};
      // Restoring the NumPy snapshot, this Pyodide has no snapshot for the page's: the page's starts as soon as
      // the compiled module is known (its own restore then runs beside this one's), not after the restore
      if (stage === 'module' && numpyAsset && msg.handoff) {
        handOver(msg.handoff, {wasmModule: info.wasmModule});
        msg.handoff = null;
      }
      if (stage !== 'runtime') return;
      handOver(msg.handoff, !plain ? {} : {...info,
        snapshotBytes: fresh(info.snapshot) || what.cachedSnapshot ? info.snapshotBytes : null});
      progress('worker-runtime', 'Pyodide started in the worker');
    }});
  const pyodide = booted.py;
  if (booted.numpySnapshot) {
    // a duration and a count, not times since the start
    const {ms, precompiled, at = {}} = lastRelink() || {};
    Object.assign(stages, {relinkMs: ms, relinkPrecompiled: precompiled});
    // the restore's steps on this clock: module factory called, module ready, heap restored (relinked)
    for (const [step, t] of Object.entries(at)) stages[`${step}At`] = Math.round(t - t0);
  }
  progress('worker-numpy', booted.numpyLater ? 'NumPy imported (its files still being written)'
    : `NumPy installed (${booted.numpy})`);
  pyodide.runPython('import numpy');  // timed apart from the core's own imports
  stages.numpyImport = Math.round(performance.now() - t0);
  // NumPy's files and .pyc for the next visit (boot/sitecache.js), on their way before the core's import holds
  // this thread: stored after the graph was built, they are often not written when a short visit ends
  let storeSite = booted.storeSite;
  const store = async (group) => {
    const {stored} = await storeSite([group]);
    stored.then((ok) => ok && progress('worker-site-stored', group));
  };
  if (storeSite) await store('numpy');
  const glue = pyodide.pyimport('py_core.bridge.pyodide_glue');
  // a core that came imported with the build's snapshot has its C kernels still to load (make_snapshot.mjs)
  const kernels = pyodide.pyimport('py_core.kernels.native');
  try {
    kernels.ensure_loaded();
  } finally {
    kernels.destroy();
  }
  const direct = msg.direct !== false && workerSwitchOn(switches, 'direct');
  if (storeSite) await store('wheels');  // the core wheel's, likewise
  let numpyLater = null;
  if (booted.numpyLater) {
    // Every request after this one waits for NumPy's files (engine.js): no graph exists before they are
    // written.  And for their entry's store to be under way, as above: a visit that closes once its graph ran
    // would otherwise leave the next one without it.
    numpyLater = booted.numpyLater.then(async ({how, storeSite: prepared}) => {
      progress('worker-numpy-files', how);
      storeSite = prepared;
      await store('numpy').catch(() => {});  // (a failed store only costs the next visit)
      store('wheels').catch(() => {});
    }, (e) => {
      throw new Error(`NumPy's files could not be installed: ${e && e.message ? e.message : e}`);
    });
  }
  stages.core = Math.round(performance.now() - t0);
  progress('worker-core', 'core loaded');
  // numpyPending: the page waits for NumPy's files ('worker-numpy-files') before it hands out a context
  const reply = {ok: true, numpyPending: !!numpyLater, snapshot: booted.snapshot, numpySnapshot: booted.numpySnapshot,
    numpySnapshotWhy: booted.numpySnapshotWhy,
    imported: booted.imported, numpy: booted.numpy, wheels: booted.wheels, stages, stdlibCode: stdlibUsed(pyodide),
    cache: cacheLog()};
  return {pyodide, glue, direct, numpyLater, reply};
}
