// The prebuilt Pyodide memory snapshot (`make snapshot`, part of `make run`, `make test` and `make dist`): the
// bare interpreter started once here, under Node, and its heap shipped gzipped as a build asset, so that a
// browser's first visit restores it (polyfill/src/boot/snapshot.js) instead of starting CPython (1.5-2.3 s of a cold
// start).  A snapshot carries its environment: it is made with exactly the options the worker's and the page's
// Pyodide start with (no env but HOME, no args, the browser's default program name) and holds nothing of
// Node's (its JS references are none; os.environ's LANG is a fixed C.UTF-8).
//
//   node scripts/make_snapshot.mjs [--out polyfill/dist] [--force] [--core-wheel build/core-wheel.whl] [--assets DIR]
//
// With --core-wheel (the wheel the dev server and `make dist` serve: `python -m web.core_wheel FILE`), each
// snapshot also holds the core imported, as its Pyodide imports it (the page's builder host; the worker's glue,
// with the C kernels not loaded: which build loads depends on the browser), so that a restore skips that import
// too (0.4-0.5 s of a cold start, where the interpreter still runs unoptimised code).  It records the wheel's
// sha256 in the heap (`sys._webnn_snapshot_wheels`): a restore beside another core wheel drops those modules and
// imports its own (polyfill/src/boot/boot.js dropStaleImports).
//
// Writes OUT/pyodide-snapshot.bin.gz and OUT/pyodide-snapshot.json ({file, sha256 and size of the .gz,
// snapshotSize: inflated, pyodide: version, coreSha256: the core wheel imported or null, inputs: the sha256 of
// the files it depends on}), and the
// worker's NumPy snapshot as OUT/pyodide-snapshot-numpy.bin.gz and .json (see makeNumpy below); does nothing for
// either when its files are there for the same inputs.  It never fails a build: anything that goes wrong (no
// assets, a Pyodide that cannot be snapshotted) is printed, the outputs are removed, and it exits 0: the
// polyfill then boots as without it.
import crypto from 'crypto';
import fs from 'fs';
import path from 'path';
import zlib from 'zlib';

import {assetDir, PYODIDE_VERSION, root} from './pyodide_node.mjs';
import {hook, lastRelink, record, relinkFor, reserveCountArgsSlot, tableLength} from '../polyfill/src/boot/relink.js';

const NAME = 'pyodide-snapshot';
// what the snapshot is made from: another pyodide.asm.js/.wasm (its build id) or standard library is another one
const INPUTS = ['pyodide.asm.js', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide.mjs'];
const FORMAT = 1;  // bump when the options below change

const args = process.argv.slice(2);
const outDir = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : path.join(root, 'polyfill', 'dist'));
const force = args.includes('--force');
// the Pyodide the snapshots are made from: the one served (make pyodide's cut build), whose standard library a
// restore then reads
const assets = args.includes('--assets') ? path.resolve(args[args.indexOf('--assets') + 1]) : null;
const coreWheelFile = args.includes('--core-wheel') ? path.resolve(args[args.indexOf('--core-wheel') + 1]) : null;
const gzPath = path.join(outDir, `${NAME}.bin.gz`);
const metaPath = path.join(outDir, `${NAME}.json`);

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

function inputsOf(dir, core) {
  const inputs = {format: String(FORMAT)};
  for (const f of INPUTS) inputs[f] = sha256(fs.readFileSync(path.join(dir, f)));
  inputs.core = core ? core.sha256 : null;
  return inputs;
}

function upToDate(inputs, metaFile, gzFile) {
  try {
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8'));
    return JSON.stringify(meta.inputs) === JSON.stringify(inputs) && sha256(fs.readFileSync(gzFile)) === meta.sha256;
  } catch (e) {
    return false;
  }
}

// The core wheel given by --core-wheel ({sha256, bytes}), or null
function coreWheel() {
  if (!coreWheelFile) return null;
  const bytes = fs.readFileSync(coreWheelFile);
  return {sha256: sha256(bytes), bytes};
}

// A wheel unpacked into py's site-packages, as the browser's install does (same paths)
function unpackWheel(py, bytes, name) {
  py.FS.writeFile(`/tmp/${name}`, bytes);
  py.runPython(`import zipfile, site
with zipfile.ZipFile('/tmp/${name}') as z:
    z.extractall(site.getsitepackages()[0])`);
  py.FS.unlink(`/tmp/${name}`);
}

// The core imported (`modules`), its C kernels not loaded (py_core.kernels.native reads the switch at import; the
// worker loads them after the restore: ensure_loaded), and the wheel's sha256 recorded for dropStaleImports
function importCore(py, core, modules) {
  if (!core) return;
  unpackWheel(py, core.bytes, 'core.whl');
  py.runPython(`import os, sys
os.environ['PYODIDE_WEBNN_NATIVE'] = '0'
try:
    ${modules.map((m) => `import ${m}`).join('\n    ')}
finally:
    del os.environ['PYODIDE_WEBNN_NATIVE']
sys._webnn_snapshot_wheels = {'py_core': '${core.sha256}'}`);
}

const PAGE_CORE = ['py_core.bridge.builder_host'];
const WORKER_CORE = ['py_core.bridge.pyodide_glue'];

function writeAtomically(file, bytes) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
}

// The worker's second snapshot: the same start, then NumPy installed as the worker installs it (the wheel the
// lock file names, unpacked into site-packages) and imported, with the standard modules the core imports next
// (json, dataclasses): a restore skips `import numpy` (0.25-0.4 s of a warm start, over 1 s of a cold one).
// Its extension modules are linked again at the restore (polyfill/src/boot/relink.js), which needs what record()
// returns: it goes into the .json, and the browser gets it with the asset.  The snapshot is restored here once
// (a fresh Pyodide, NumPy's files written back, a product and a lazy `numpy.polynomial` import checked) before it
// is written: one that does not restore is not shipped.
const NUMPY_NAME = 'pyodide-snapshot-numpy';
const numpyGz = path.join(outDir, `${NUMPY_NAME}.bin.gz`);
const numpyMeta = path.join(outDir, `${NUMPY_NAME}.json`);
const NUMPY_IMPORTS = 'import numpy, json, dataclasses';

function numpyWheel(dir) {
  const lock = JSON.parse(fs.readFileSync(path.join(dir, 'pyodide-lock.json'), 'utf8'));
  const entry = lock.packages && lock.packages.numpy;
  if (!entry || !entry.file_name || !entry.sha256) throw new Error('no numpy entry in pyodide-lock.json');
  const file = path.join(dir, entry.file_name);
  if (sha256(fs.readFileSync(file)) !== entry.sha256) throw new Error(`${entry.file_name} does not match its sha256`);
  return {file, sha256: entry.sha256};
}

// NumPy's wheel unpacked into py's site-packages, as the worker's install does (same paths)
function installNumpy(py, wheel) {
  unpackWheel(py, fs.readFileSync(wheel.file), 'numpy.whl');
}

async function makeNumpy(dir, loadPyodide, version, options, core) {
  const wheel = numpyWheel(dir);
  const inputs = {...inputsOf(dir, core), numpy: wheel.sha256, imports: NUMPY_IMPORTS, relink: sha256(
    fs.readFileSync(path.join(root, 'polyfill', 'src', 'boot', 'relink.js')))};
  if (!force && upToDate(inputs, numpyMeta, numpyGz)) {
    console.log(`snapshot: ${path.relative(root, numpyGz)} is up to date`);
    return;
  }
  const t0 = performance.now();
  const py = await loadPyodide({...options, _makeSnapshot: true});
  installNumpy(py, wheel);
  reserveCountArgsSlot(py._module);  // the browser's table layout, where NumPy's modules then go
  const before = tableLength(py);
  py.runPython(NUMPY_IMPORTS);
  importCore(py, core, WORKER_CORE);
  const relink = record(py, before);
  const bytes = py.makeMemorySnapshot();
  await selfTest(loadPyodide, options, bytes, relink, wheel, core);
  const gz = zlib.gzipSync(bytes, {level: 9});
  writeAtomically(numpyGz, gz);
  const meta = {file: `${NUMPY_NAME}.bin.gz`, sha256: sha256(gz), size: gz.length, snapshotSize: bytes.length,
    pyodide: version || PYODIDE_VERSION, numpySha256: wheel.sha256, coreSha256: core ? core.sha256 : null, relink,
    inputs};
  writeAtomically(numpyMeta, JSON.stringify(meta, null, 2) + '\n');
  console.log(`snapshot: ${path.relative(root, numpyGz)} (${(bytes.length / 1e6).toFixed(1)} MB, ` +
    `${(gz.length / 1e6).toFixed(1)} MB gzipped, ${relink.handles.length} extension modules) in ` +
    `${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

async function selfTest(loadPyodide, options, bytes, relink, wheel, core) {
  if (!hook()) throw new Error("pyodide.asm.js's module factory is not global");
  // each module compiled at the relink, then each compiled ahead (what a browser's restore mostly does)
  for (const precompile of [false, true]) {
    await selfTestOnce(loadPyodide, options, bytes, relink, wheel, core, precompile);
  }
}

async function selfTestOnce(loadPyodide, options, bytes, relink, wheel, core, precompile) {
  const py = await loadPyodide({...options, _loadSnapshot: relinkFor(new Uint8Array(bytes), relink, {precompile})});
  const {precompiled} = lastRelink();
  if (precompiled !== (precompile ? relink.handles.length : 0)) throw new Error(`${precompiled} modules precompiled`);
  installNumpy(py, wheel);
  const got = py.runPython(`import sys, numpy as np, importlib
importlib.invalidate_caches()
a = np.arange(12.0).reshape(3, 4)
import numpy.polynomial
str(((a @ a.T).tolist(), round(float(np.linalg.det(np.eye(3) * 2)), 9), 'numpy.polynomial' in sys.modules))`);
  const want = '([[14.0, 38.0, 62.0], [38.0, 126.0, 214.0], [62.0, 214.0, 366.0]], 8.0, True)';
  if (got !== want) throw new Error(`the NumPy snapshot restores wrong (precompile ${precompile}): ${got}`);
  if (core) checkCore(py, core, WORKER_CORE, 'from py_core.kernels import native\nassert native.ensure_loaded()');
}

// The core came imported (not imported again: the module objects are the snapshot's) and works once its files
// are written back (`check`: Python that raises if not)
function checkCore(py, core, modules, check) {
  unpackWheel(py, core.bytes, 'core.whl');
  const got = py.runPython(`import sys, importlib
importlib.invalidate_caches()
before = {m: id(sys.modules.get(m)) for m in ${JSON.stringify(modules)}}
${modules.map((m) => `import ${m}`).join('\n')}
${check}
str(all(before[m] == id(sys.modules[m]) for m in before) and sys._webnn_snapshot_wheels == {'py_core': '${core.sha256}'})`);
  if (got !== 'True') throw new Error(`the core did not come imported with the snapshot (${modules})`);
}

async function main() {
  const dir = assetDir(assets);
  const core = coreWheel();
  const inputs = inputsOf(dir, core);
  const {loadPyodide, version} = await import(path.join(dir, 'pyodide.mjs'));
  // The worker's and the page's loadPyodide options (polyfill/src/boot/boot.js BOOT_OPTIONS), plus what a browser has and Node
  // would not: the program name (Node's would be this script's path, in os.environ['_'] and sys.argv) and a
  // fixed LANG (a browser's is its language; Node 20's is C).
  const options = {indexURL: dir + '/', stdout: () => {}, stderr: () => {}, env: {LANG: 'C.UTF-8'},
    _sysExecutable: './this.program'};
  if (!force && upToDate(inputs, metaPath, gzPath)) {
    console.log(`snapshot: ${path.relative(root, gzPath)} is up to date`);
  } else {
    const t0 = performance.now();
    const py = await loadPyodide({...options, _makeSnapshot: true});
    importCore(py, core, PAGE_CORE);
    const bytes = py.makeMemorySnapshot();
    if (core) {
      const restored = await loadPyodide({...options, _loadSnapshot: new Uint8Array(bytes)});
      checkCore(restored, core, PAGE_CORE, "from py_core.bridge.builder_host import HOST\nassert HOST.call_json('op_support_limits', '[]').startswith('{\"ok\"')");
    }
    const gz = zlib.gzipSync(bytes, {level: 9});
    fs.mkdirSync(outDir, {recursive: true});
    writeAtomically(gzPath, gz);
    const meta = {file: `${NAME}.bin.gz`, sha256: sha256(gz), size: gz.length, snapshotSize: bytes.length,
      pyodide: version || PYODIDE_VERSION, coreSha256: core ? core.sha256 : null, inputs};
    writeAtomically(metaPath, JSON.stringify(meta, null, 2) + '\n');
    console.log(`snapshot: ${path.relative(root, gzPath)} (${(bytes.length / 1e6).toFixed(1)} MB, ` +
      `${(gz.length / 1e6).toFixed(1)} MB gzipped) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  // pyodide.asm.js made global (as a browser's early import does), for boot/relink.js's hook
  await import(path.join(dir, 'pyodide.asm.js'));
  try {
    await makeNumpy(dir, loadPyodide, version, options, core);
  } catch (e) {
    for (const f of [numpyGz, numpyMeta]) fs.rmSync(f, {force: true});
    console.warn(`snapshot: the NumPy snapshot is not built (${e && e.message ? e.message : e}); the worker ` +
      'imports NumPy after restoring the bare one');
  }
}

try {
  await main();
} catch (e) {
  for (const f of [gzPath, metaPath]) fs.rmSync(f, {force: true});
  console.warn(`snapshot: not built (${e && e.message ? e.message : e}); the polyfill starts CPython on a first visit`);
}
