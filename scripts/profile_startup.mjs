// Where a warm start's Python time goes, inside Pyodide under Node (the worker's path without the page): NumPy's
// wheel and the core unpacked into site-packages, one Pyodide run writes their .pyc (as a first visit does for the
// site-packages cache, polyfill/src/boot/sitecache.js), then each round boots a fresh Pyodide, writes that tree back
// with the cache's modification time and times, in wall and process CPU time: `import numpy`, the core's import
// (py_core.bridge.pyodide_glue) and the first build of a 1-op graph (the bench's chain1: one relu).
// A tool for startup work, not part of `make bench`.
//   node scripts/profile_startup.mjs [--rounds N] [--preload] [--importtime] [--cprofile] [--no-pyc] [--no-stdlib]
// --preload links NumPy's extension modules first (Pyodide's loadDynlib, as `import numpy` would, asynchronously)
//   and times that apart;
// --importtime prints CPython's -X importtime lines of the last round (self and cumulative us, largest first);
// --no-stdlib leaves the standard library's code uncached (polyfill/src/boot/stdlibpyc.js off);
// --cprofile prints the last round's first build under cProfile.
import fs from 'fs';
import path from 'path';

import {bootPyodide} from '../polyfill/src/boot/boot.js';
import {SITE_MTIME_MS, forgetListings, readTree, sitePackagesOf, writeTree, listTree} from '../polyfill/src/boot/sitecache.js';
import {readZip} from '../polyfill/src/boot/wheels.js';
import {hookStdlib, saveStdlib} from '../polyfill/src/boot/stdlibpyc.js';
import {assetDir, root} from './pyodide_node.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const rounds = Number(argv[argv.indexOf('--rounds') + 1] || 0) || 3;

const assets = assetDir();
const lock = JSON.parse(fs.readFileSync(path.join(assets, 'pyodide-lock.json'), 'utf8'));
const numpyWheel = fs.readFileSync(path.join(assets, lock.packages.numpy.file_name));

// the core wheel's files (web/core_wheel.py ships py_core's sources, JSON and wasm kernels)
function coreFiles(dir = path.join(root, 'py_core'), rel = 'py_core') {
  const out = [];
  for (const e of fs.readdirSync(dir, {withFileTypes: true})) {
    if (e.name === '__pycache__') continue;
    if (e.isDirectory()) out.push(...coreFiles(path.join(dir, e.name), `${rel}/${e.name}`));
    else if (/\.(py|json)$|\.wasm32\.wasm$/.test(e.name)) {
      out.push({path: `${rel}/${e.name}`, data: new Uint8Array(fs.readFileSync(path.join(dir, e.name)))});
    }
  }
  return out;
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const clock = () => ({wall: performance.now(), cpu: cpu()});
const since = (t) => ({wall: Math.round(performance.now() - t.wall), cpu: Math.round(cpu() - t.cpu)});

const BUILD_CHAIN1 = `
from py_core.bridge.builder_host import BuilderHost
_bh = BuilderHost()
_b = _bh.new_builder()
_x = _bh.input(_b, "x", {"dataType": "float32", "shape": [1, 16]})
_y = _bh.op(_b, "relu", {"input": _x["id"]}, "")
_built = _bh.build(_b, {"y": _y[0]["id"]})
`;

async function boot(stderr = () => {}, args = undefined) {
  return (await bootPyodide({indexURL: assets + '/', stderr, args})).py;
}

// one Pyodide that installs and imports everything with bytecode writing on: the tree a cached visit restores
async function firstVisit() {
  const py = await boot();
  const site = sitePackagesOf(py);
  writeTree(py.FS, site, [...await readZip(new Uint8Array(numpyWheel)), ...coreFiles()], SITE_MTIME_MS);
  forgetListings(py);
  if (!flag('--no-pyc')) py.runPython('import sys; sys.dont_write_bytecode = False');
  if (!flag('--no-stdlib')) hookStdlib(py, site, true);
  py.runPython('import numpy, py_core.bridge.pyodide_glue' + BUILD_CHAIN1);
  if (!flag('--no-stdlib')) console.log(`standard library code objects kept: ${saveStdlib(py, site)}`);
  return {tree: readTree(py.FS, site), graph: py.runPython('_built["graph"]')};
}

const {tree, graph} = await firstVisit();
console.log(`site-packages: ${tree.length} files, ${tree.filter((f) => f.path.endsWith('.pyc')).length} .pyc`);
const rows = [];
for (let r = 0; r < rounds; r++) {
  const last = r === rounds - 1;
  const lines = [];
  const py = await boot((line) => lines.push(line), last && flag('--importtime') ? ['-X', 'importtime'] : undefined);
  const site = sitePackagesOf(py);
  let t = clock();
  writeTree(py.FS, site, tree, SITE_MTIME_MS);
  forgetListings(py);
  if (!flag('--no-stdlib')) hookStdlib(py, site, false);
  const row = {write: since(t)};
  if (flag('--preload')) {
    t = clock();
    const libs = listTree(py.FS, `${site}/numpy`).filter((p) => /^(_core\/_multiarray_umath|linalg\/_umath_linalg)\./.test(p));
    await Promise.all(libs.map((p) => py._api.loadDynlib(`${site}/numpy/${p}`, false, [])));
    row.link = since(t);
  }
  t = clock();
  py.runPython('import numpy');
  row.numpy = since(t);
  t = clock();
  py.runPython('import py_core.bridge.pyodide_glue');
  row.core = since(t);
  t = clock();
  if (last && flag('--cprofile')) {
    py.runPython('import cProfile, pstats, io; _pr = cProfile.Profile(); _pr.enable()');
  }
  py.globals.set('GRAPH', graph);
  py.runPython(`from py_core.bridge import pyodide_glue as _g
_r = _g.build(1, 1, GRAPH, "[]", [], "{}")
assert _r[0] is None, _r[0]
`);
  row.build = since(t);
  if (last && flag('--cprofile')) {
    console.log(py.runPython(`_pr.disable(); _s = io.StringIO()
pstats.Stats(_pr, stream=_s).sort_stats("cumulative").print_stats(40); _s.getvalue()`));
  }
  row.libs = Object.keys(py._module.LDSO.loadedLibsByName).filter((n) => n.startsWith('/')).map((n) => path.basename(n));
  rows.push(row);
  console.log(JSON.stringify(row));
  if (last && flag('--importtime')) {
    const parsed = lines.filter((l) => l.startsWith('import time:') && !l.includes('self [us]'))
      .map((l) => l.slice(12).split('|').map((s) => s.trim()))
      .map(([self, cum, name]) => ({self: Number(self), cum: Number(cum), name}));
    console.log(`importtime: ${parsed.length} modules, self total ${parsed.reduce((s, p) => s + p.self, 0)} us`);
    for (const p of parsed.sort((a, b) => b.self - a.self).slice(0, 40)) console.log(`${p.self}\t${p.cum}\t${p.name}`);
  }
}
const med = (key, part) => {
  const v = rows.map((r) => r[key] && r[key][part]).filter((x) => x !== undefined).sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : '-';
};
for (const key of ['write', 'link', 'numpy', 'core', 'build']) {
  console.log(`${key}: median wall ${med(key, 'wall')} ms, cpu ${med(key, 'cpu')} ms`);
}
