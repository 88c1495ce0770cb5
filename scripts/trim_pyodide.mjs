// The Pyodide the polyfill serves (`make pyodide`, part of `make run`, `make test` and `make dist`): Pyodide's
// files with its standard library and NumPy's wheel cut to the modules the engine imports, each module as
// bytecode only.  A first visit downloads 2.3 MB of standard library and 3.0 MB of NumPy (brotli) from the
// official files; the cut ones are about 0.6 and 1.1 MB, and nothing of either is compiled from source.
//
//   node scripts/trim_pyodide.mjs [--out build/pyodide] [--force]
//
// What is kept is measured, never listed by hand: a Pyodide started here from the official files (the asset cache
// scripts/fetch_assets.py fills, with the pure-Python wheels there) imports every shipped module of py_core and
// what its sources import inside functions or name as NumPy submodules (np.polynomial), runs the vendored WPT
// conformance cases through the core, the page's builder host, a Python traceback and the modules the polyfill's
// own Python snippets import (polyfill/src, the snapshot maker); what its `sys.modules`
// then holds from the standard library's zip and from NumPy's package is kept.  The browser tests run on this cut
// build (the dev server serves it, the snapshots are made from it), which is what proves the trace complete; the
// Node runners (tests/pyodide) start from the official files, since the test oracles use numpy.random.  SciPy (the
// worker's `blas` switch, for a core without its C kernels) does not import beside the cut NumPy: the worker then
// says so and keeps its NumPy products.
//
// Each kept module is compiled by that Pyodide's own CPython (3.12, the bytecode the browser runs) into an
// unchecked hash-based .pyc that replaces its .py (zipimport and site-packages import a sourceless module as
// they import a source one; tracebacks then show no source line for these frames): under Node, starting CPython
// and importing NumPy from this bytecode takes less than half the CPU time it takes from the sources.  The zip and the wheel are
// stored without compression: the server's brotli compresses them whole, better than deflate per file.
//
// OUT holds every file of the official folder (hard links where the file system allows, else copies), except
// python_stdlib.zip, NumPy's wheel (same file name, its own sha256) and pyodide-lock.json (NumPy's entry points at
// the cut wheel); OUT/trim.json says what was kept, the sizes before and after, and the inputs (the official
// files' sha256, py_core's sources, this script): nothing is done when they are unchanged.
import crypto from 'crypto';
import fs from 'fs';
import path from 'path';

import {assetDir, PYODIDE_VERSION, root} from './pyodide_node.mjs';

const FORMAT = 1;  // bump when what is traced or how the files are written changes
const args = process.argv.slice(2);
const outDir = path.resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : path.join(root, 'build', 'pyodide'));
const force = args.includes('--force');
const sources = args.includes('--sources');  // keep each module's .py instead of its bytecode
const STDLIB = 'python_stdlib.zip';
const REPLACED = new Set([STDLIB, 'pyodide-lock.json', 'trim.json']);

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

// the core's and the polyfill's sources, hashed in path order: unchanged, nothing needs to be read again
function sourcesHash() {
  const h = crypto.createHash('sha256');
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, {withFileTypes: true}).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== '__pycache__') walk(p);
      } else if (/\.(py|js)$/.test(e.name)) {
        h.update(path.relative(root, p) + '\0' + sha256(fs.readFileSync(p)) + '\n');
      }
    }
  };
  [path.join(root, 'py_core'), path.join(root, 'polyfill', 'src')].forEach(walk);
  return h.digest('hex');
}

function readMeta() {
  try {
    return JSON.parse(fs.readFileSync(path.join(outDir, 'trim.json'), 'utf8'));
  } catch (e) {
    return null;
  }
}

// what the cut build is made from, but what the core imports (SCAN below: `imports`, added once known)
function inputsOf(src, numpyFile) {
  return {
    format: String(FORMAT),
    pyodide: PYODIDE_VERSION,
    [STDLIB]: sha256(fs.readFileSync(path.join(src, STDLIB))),
    numpy: sha256(fs.readFileSync(path.join(src, numpyFile))),
    lock: sha256(fs.readFileSync(path.join(src, 'pyodide-lock.json'))),
    script: sha256(fs.readFileSync(new URL(import.meta.url))),
    sources: String(sources),
  };
}

// the outputs are there, intact, for these inputs (`imports` left out: when only the sources' hash is known)
function upToDate(meta, inputs) {
  try {
    const same = (k) => k === 'imports' && !('imports' in inputs) || meta.inputs[k] === inputs[k];
    if (!Object.keys(meta.inputs).every(same) || !Object.keys(inputs).every(same)) return false;
    return [STDLIB, meta.numpy.file].every((f) => sha256(fs.readFileSync(path.join(outDir, f))) === meta.sha256[f]);
  } catch (e) {
    return false;
  }
}

// The core's sources and what they import, read before anything is imported: these names decide whether the trace
// must run again
const SCAN = `
import sys, os, _ast
sys.dont_write_bytecode = True  # nothing written into the mounted repository
sys.path.insert(0, "/repo")
# the shipped modules of the core (the oracles under py_core/testing are not shipped: web/core_wheel.py)
_sources = []
for _dir, _subdirs, _files in os.walk("/repo/py_core"):
    _subdirs[:] = sorted(d for d in _subdirs if d not in ("__pycache__", "testing"))
    _sources += [os.path.join(_dir, f) for f in sorted(_files) if f.endswith(".py")]
# what the core imports (at module level, inside functions) or names as a NumPy submodule (np.polynomial...), read in
# its sources (with the builtin _ast: the ast module would count as imported)
def _dotted(node):
    parts = []
    while isinstance(node, _ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, _ast.Name) and node.id in ("np", "numpy"):
        return ".".join(["numpy"] + parts[::-1])
    return None

_named = set()
for _path in _sources:
    with open(_path, "rb") as _f:
        _stack = [compile(_f.read(), _path, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)]
    while _stack:
        _node = _stack.pop()
        if isinstance(_node, _ast.Import):
            _named.update(a.name for a in _node.names)
        elif isinstance(_node, _ast.ImportFrom) and _node.level == 0 and _node.module:
            _named.add(_node.module)
            _named.update(f"{_node.module}.{a.name}" for a in _node.names)
        elif isinstance(_node, _ast.Attribute):
            _name = _dotted(_node)
            if _name:
                _named.update(".".join(_name.split(".")[:i]) for i in range(2, _name.count(".") + 2))
        for _field in _node._fields:
            _value = getattr(_node, _field, None)
            _stack += [v for v in _value if isinstance(v, _ast.AST)] if isinstance(_value, list) else (
                [_value] if isinstance(_value, _ast.AST) else [])
# and the modules the polyfill's own Python snippets import (polyfill/src and the snapshot maker: names after
# "import" or "from" at the start of a line; words of comments that are no module are skipped below)
_named.update(JS_IMPORTS)
sorted(_named)
`;

// What the engine imports, measured (see the header), and the cut files written by the same CPython (after SCAN,
// in the same interpreter: _sources, _named)
const TRACE = `
import importlib
import numpy
# every shipped module of the core, then every name its sources import
for _path in _sources:
    _rel = _path[len("/repo/"):-len(".py")].replace("/", ".")
    importlib.import_module(_rel[:-len(".__init__")] if _rel.endswith(".__init__") else _rel)

for _name in sorted(_named):
    if _name.split(".")[0] in ("py_core", "js", "pyodide", "pyodide_js"):
        continue
    try:
        importlib.import_module(_name)
    except Exception:  # an attribute or a word, not a module (np.float32, from typing import Any)
        pass

# the engine at work: the vendored WPT cases through the core, the page's builder host, a formatted traceback.
# The WPT runner's own imports (argparse, pathlib, ...) are the tests', not the engine's: left out unless
# something above imported them
_before = set(sys.modules)
from py_core.testing import wpt
_runner_only = set(sys.modules) - _before
_results = wpt.run_dir("/repo/tests/data/wpt", None)
_report = wpt.report(_results, wpt.operator_files("/repo/tests/data/wpt"))
import traceback
try:
    raise ValueError("a traceback, formatted as the engine's errors are")
except ValueError:
    traceback.format_exc()
from py_core.bridge.builder_host import HOST as _builder
_builder.call_json("op_support_limits", "[]")

STDLIB_ROOT = "/lib/python312.zip/"
SITE = next(p for p in sys.path if p.endswith("site-packages")) + "/"
kept_std, kept_numpy, outside = set(), set(), set()
for _name, _mod in list(sys.modules.items()):
    if _name in _runner_only:
        continue
    _file = getattr(_mod, "__file__", None) or ""
    if _file.startswith(STDLIB_ROOT):
        kept_std.add(_file[len(STDLIB_ROOT):])
    elif _file.startswith("/lib/python3.12/") and "/site-packages/" not in _file:
        outside.add(_name)  # Pyodide's own copy outside the zip (os, site, ...): not the zip's to carry
    elif _file.startswith(SITE + "numpy/"):
        kept_numpy.add(_file[len(SITE):])

# writing the cut files (what is imported from here on is not counted)
import json, zipfile, base64, hashlib
import importlib.util
from importlib._bootstrap_external import _code_to_hash_pyc

import ast

def _without_docstrings(tree):
    # a docstring becomes \`pass\` on its lines: every other line number stays; asserts stay
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body[0] = ast.copy_location(ast.Pass(), first)
    return tree

def _pyc(source, filename, docstrings=True):
    tree = ast.parse(source, filename)
    if not docstrings:
        tree = _without_docstrings(tree)
    code = compile(tree, filename, "exec", dont_inherit=True, optimize=0)
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))

def _entry(name):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info

def _write_zip(out, members):
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in sorted(members.items()):
            z.writestr(_entry(name), data)

# the standard library: each kept module as .pyc in place of its .py, without its docstrings (166 KB of the
# brotli'd zip; nothing the engine runs reads a standard library docstring).  NumPy keeps its own: its code
# attaches and formats docstrings (overrides.py, _add_newdocs.py)
with zipfile.ZipFile("/lib/python312.zip") as src:
    _std = {}
    for _name in sorted(kept_std):
        _source = src.read(_name)
        if _name.endswith(".py") and not SOURCES:
            _std[_name[:-3] + ".pyc"] = _pyc(_source, STDLIB_ROOT + _name, docstrings=False)
        else:
            _std[_name] = _source
_write_zip("/tmp/stdlib.zip", _std)

# NumPy's wheel: the kept modules (.py as .pyc, extension modules as they are) and its dist-info, RECORD remade
with zipfile.ZipFile(NUMPY_WHEEL) as src:
    _whl = {}
    for _info in src.infolist():
        _name = _info.filename
        if _name in kept_numpy:
            _data = src.read(_name)
            if _name.endswith(".py") and not SOURCES:
                _whl[_name[:-3] + ".pyc"] = _pyc(_data, SITE + _name)
            else:
                _whl[_name] = _data
        elif ".dist-info/" in _name and not _name.endswith("/RECORD"):
            _whl[_name] = src.read(_name)
    _record = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
_whl[_record] = "".join(f"{n},{_digest(d)},{len(d)}\\n" for n, d in sorted(_whl.items())).encode() + f"{_record},,\\n".encode()
_write_zip("/tmp/numpy.whl", _whl)
json.dumps({"stdlib": sorted(kept_std), "outside": sorted(outside), "numpy": sorted(kept_numpy),
            "wpt": _report.get("summary")})
`;

// module names after `import` / `from` at the start of a line in the polyfill's sources and the snapshot maker
function jsImports() {
  const files = [path.join(root, 'scripts', 'make_snapshot.mjs')];
  const walk = (dir) => fs.readdirSync(dir, {withFileTypes: true}).forEach((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.js')) files.push(p);
  });
  walk(path.join(root, 'polyfill', 'src'));
  const names = new Set();
  for (const f of files) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/^\s*(?:import|from)\s+([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)/gm)) {
      m[1].split(',').forEach((n) => names.add(n.trim()));
    }
  }
  return [...names].sort();
}

function linkOrCopy(from, to) {
  try {
    fs.linkSync(from, to);
  } catch (e) {
    fs.copyFileSync(from, to);
  }
}

async function main() {
  const src = assetDir();
  const lock = JSON.parse(fs.readFileSync(path.join(src, 'pyodide-lock.json'), 'utf8'));
  const numpyFile = lock.packages.numpy.file_name;
  const t0 = performance.now();
  const meta0 = readMeta();
  const hashed = sourcesHash();
  const known = inputsOf(src, numpyFile);
  if (!force && meta0 && meta0.sourcesHash === hashed && upToDate(meta0, known)) {
    console.log(`pyodide: ${path.relative(root, outDir)} is up to date`);
    return;
  }
  const {loadPyodide} = await import(path.join(src, 'pyodide.mjs'));
  const py = await loadPyodide({indexURL: src + '/', stdout: () => {}, stderr: (s) => process.stderr.write(s + '\n')});
  py.FS.mkdirTree('/repo');
  py.FS.mount(py.FS.filesystems.NODEFS, {root}, '/repo');
  py.globals.set('JS_IMPORTS', py.toPy(jsImports()));
  const named = py.runPython(SCAN).toJs();
  const inputs = {...known, imports: sha256(JSON.stringify(named))};
  if (!force && meta0 && upToDate(meta0, inputs)) {
    // the sources changed, not what they import: the cut build stands
    fs.writeFileSync(path.join(outDir, 'trim.json'), JSON.stringify({...meta0, sourcesHash: hashed}, null, 1) + '\n');
    console.log(`pyodide: ${path.relative(root, outDir)} is up to date (the core's imports are unchanged)`);
    return;
  }
  await py.loadPackage('numpy', {messageCallback: () => {}});
  // the pure-Python wheels beside Pyodide (the TFLite loader's: loadModel installs them in the worker)
  for (const f of fs.readdirSync(src).filter((n) => /-none-any\.whl$/.test(n))) {
    py.unpackArchive(new Uint8Array(fs.readFileSync(path.join(src, f))), 'wheel');
  }
  py.FS.writeFile('/tmp/numpy-src.whl', fs.readFileSync(path.join(src, numpyFile)));
  py.globals.set('NUMPY_WHEEL', '/tmp/numpy-src.whl');
  py.globals.set('SOURCES', sources);
  const kept = JSON.parse(py.runPython(TRACE));
  const stdlib = py.FS.readFile('/tmp/stdlib.zip');
  const wheel = py.FS.readFile('/tmp/numpy.whl');

  const tmp = `${outDir}.${process.pid}.part`;
  fs.rmSync(tmp, {recursive: true, force: true});
  fs.mkdirSync(tmp, {recursive: true});
  for (const e of fs.readdirSync(src, {withFileTypes: true})) {
    if (e.isFile() && !REPLACED.has(e.name) && e.name !== numpyFile && !e.name.startsWith('.')) {
      linkOrCopy(path.join(src, e.name), path.join(tmp, e.name));
    }
  }
  fs.writeFileSync(path.join(tmp, STDLIB), stdlib);
  fs.writeFileSync(path.join(tmp, numpyFile), wheel);
  lock.packages.numpy = {...lock.packages.numpy, sha256: sha256(wheel)};
  fs.writeFileSync(path.join(tmp, 'pyodide-lock.json'), JSON.stringify(lock));
  const sizeOf = (f) => fs.statSync(path.join(src, f)).size;
  const before = {[STDLIB]: sizeOf(STDLIB), [numpyFile]: sizeOf(numpyFile)};
  const meta = {
    pyodide: PYODIDE_VERSION,
    inputs,
    sourcesHash: hashed,
    numpy: {file: numpyFile, modules: kept.numpy},
    stdlib: {modules: kept.stdlib, outsideZip: kept.outside},
    sha256: {[STDLIB]: sha256(stdlib), [numpyFile]: sha256(wheel)},
    bytes: {before, after: {[STDLIB]: stdlib.length, [numpyFile]: wheel.length}},
    wpt: kept.wpt,
  };
  fs.writeFileSync(path.join(tmp, 'trim.json'), JSON.stringify(meta, null, 1) + '\n');
  fs.rmSync(outDir, {recursive: true, force: true});
  fs.renameSync(tmp, outDir);
  console.log(`pyodide: ${path.relative(root, outDir)}: the standard library ${kept.stdlib.length} modules ` +
    `(${(before[STDLIB] / 1e6).toFixed(2)} -> ${(stdlib.length / 1e6).toFixed(2)} MB), NumPy ${kept.numpy.length} ` +
    `files (${(before[numpyFile] / 1e6).toFixed(2)} -> ${(wheel.length / 1e6).toFixed(2)} MB, stored) in ` +
    `${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

try {
  await main();
} catch (e) {
  // (not the stack: Node prints pyodide.asm.js's one-line source with it)
  console.error(`pyodide: the cut Pyodide was not built: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
