// The prebuilt Pyodide memory snapshot (`make snapshot`, part of `make run`, `make test` and `make dist`): the
// bare interpreter started once here, under Node, and its heap shipped gzipped as a build asset, so that a
// browser's first visit restores it (polyfill/src/snapshot.js) instead of starting CPython (1.5-2.3 s of a cold
// start).  A snapshot carries its environment: it is made with exactly the options the worker's and the page's
// Pyodide start with (no env but HOME, no args, the browser's default program name) and holds nothing of
// Node's (its JS references are none; os.environ's LANG is a fixed C.UTF-8).
//
//   node scripts/make_snapshot.mjs [--out polyfill/dist] [--force]
//
// Writes OUT/pyodide-snapshot.bin.gz and OUT/pyodide-snapshot.json ({file, sha256 and size of the .gz,
// snapshotSize: inflated, pyodide: version, inputs: the sha256 of the Pyodide files it depends on}); does
// nothing when both are there for the same inputs.  It never fails a build: anything that goes wrong (no
// assets, a Pyodide that cannot be snapshotted) is printed, the outputs are removed, and it exits 0: the
// polyfill then boots as without it.
import crypto from 'crypto';
import fs from 'fs';
import path from 'path';
import zlib from 'zlib';

import {assetDir, PYODIDE_VERSION, root} from './pyodide_node.mjs';

const NAME = 'pyodide-snapshot';
// what the snapshot is made from: another pyodide.asm.js/.wasm (its build id) or standard library is another one
const INPUTS = ['pyodide.asm.js', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide.mjs'];
const FORMAT = 1;  // bump when the options below change

const args = process.argv.slice(2);
const outDir = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : path.join(root, 'polyfill', 'dist'));
const force = args.includes('--force');
const gzPath = path.join(outDir, `${NAME}.bin.gz`);
const metaPath = path.join(outDir, `${NAME}.json`);

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

function inputsOf(dir) {
  const inputs = {format: String(FORMAT)};
  for (const f of INPUTS) inputs[f] = sha256(fs.readFileSync(path.join(dir, f)));
  return inputs;
}

function upToDate(inputs) {
  try {
    const meta = JSON.parse(fs.readFileSync(metaPath, 'utf8'));
    return JSON.stringify(meta.inputs) === JSON.stringify(inputs) && sha256(fs.readFileSync(gzPath)) === meta.sha256;
  } catch (e) {
    return false;
  }
}

function writeAtomically(file, bytes) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
}

async function main() {
  const dir = assetDir();
  const inputs = inputsOf(dir);
  if (!force && upToDate(inputs)) {
    console.log(`snapshot: ${path.relative(root, gzPath)} is up to date`);
    return;
  }
  const t0 = performance.now();
  const {loadPyodide, version} = await import(path.join(dir, 'pyodide.mjs'));
  // The worker's and the page's loadPyodide options (boot.js bootPyodide), plus what a browser has and Node
  // would not: the program name (Node's would be this script's path, in os.environ['_'] and sys.argv) and a
  // fixed LANG (a browser's is its language; Node 20's is C).
  const py = await loadPyodide({indexURL: dir + '/', stdout: () => {}, stderr: () => {}, env: {LANG: 'C.UTF-8'},
    _sysExecutable: './this.program', _makeSnapshot: true});
  const bytes = py.makeMemorySnapshot();
  const gz = zlib.gzipSync(bytes, {level: 9});
  fs.mkdirSync(outDir, {recursive: true});
  writeAtomically(gzPath, gz);
  const meta = {file: `${NAME}.bin.gz`, sha256: sha256(gz), size: gz.length, snapshotSize: bytes.length,
    pyodide: version || PYODIDE_VERSION, inputs};
  writeAtomically(metaPath, JSON.stringify(meta, null, 2) + '\n');
  console.log(`snapshot: ${path.relative(root, gzPath)} (${(bytes.length / 1e6).toFixed(1)} MB, ` +
    `${(gz.length / 1e6).toFixed(1)} MB gzipped) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

try {
  await main();
} catch (e) {
  for (const f of [gzPath, metaPath]) fs.rmSync(f, {force: true});
  console.warn(`snapshot: not built (${e && e.message ? e.message : e}); the polyfill starts CPython on a first visit`);
}
