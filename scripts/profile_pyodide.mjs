// Where a graph's time goes, inside Pyodide under Node (the worker's engine without the page): runs a
// benchmark graph from build/bench-models (written by `make bench`) and prints the time of each compiled step,
// summed over runs, largest first.  A tool for kernel work, not part of `make bench`.
//   node scripts/profile_pyodide.mjs MODEL_DIR NAME [RUNS] [--no-blas] [--no-compiler]
import fs from 'fs';
import os from 'os';
import path from 'path';
import {fileURLToPath} from 'url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cache = process.env.PYODIDE_WEBNN_CACHE || path.join(os.homedir(), '.cache', 'pyodide-webnn');
const indexURL = path.join(cache, 'pyodide-0.27.7') + '/';
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [modelDir, name, runs = '20'] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const {loadPyodide} = await import(path.join(indexURL, 'pyodide.mjs'));
const py = await loadPyodide({indexURL});
await py.loadPackage(['numpy', 'scipy'], {messageCallback: () => {}});

function copy(src, dst, keep) {
  py.FS.mkdirTree(dst);
  for (const e of fs.readdirSync(src, {withFileTypes: true})) {
    if (e.name === '__pycache__') continue;
    const s = path.join(src, e.name);
    if (e.isDirectory()) copy(s, `${dst}/${e.name}`, keep);
    else if (keep.test(e.name)) py.FS.writeFile(`${dst}/${e.name}`, fs.readFileSync(s));
  }
}
copy(path.join(root, 'py_core'), '/home/pyodide/py_core', /\.(py|json)$|\.wasm32\.wasm$/);
py.FS.mkdirTree('/home/pyodide/models');
for (const ext of ['json', 'bin']) {
  py.FS.writeFile(`/home/pyodide/models/m.${ext}`, fs.readFileSync(path.join(modelDir, `${name}.${ext}`)));
}
py.FS.writeFile('/home/pyodide/bench_models.py', fs.readFileSync(path.join(root, 'scripts', 'bench_models.py')));
py.globals.set('RUNS', Number(runs));
py.globals.set('BLAS', !flags.includes('--no-blas'));
py.globals.set('COMPILER', !flags.includes('--no-compiler'));

console.log(await py.runPythonAsync(`
import json, time, collections, functools
import numpy as np
from bench_models import build_in_python
from py_core.compiler import CompileOptions
from py_core.runtime.executor import prepare
from py_core.kernels.matrix import use_blas
if BLAS:
    from scipy.linalg import blas
    use_blas(blas.sgemm)
g = json.load(open("/home/pyodide/models/m.json"))
blob = open("/home/pyodide/models/m.bin", "rb").read()
exe = prepare(build_in_python(g, blob), None if COMPILER else CompileOptions.none())
rng = np.random.default_rng(0)
feeds = {n: rng.random(d["shape"], dtype=np.float32) for n, d in g["inputs"].items()}
exe.run(feeds)

def describe(step):
    fn = step.call.func if isinstance(step.call, functools.partial) else step.call
    mode = getattr(fn, "mode", "")
    posts = len(getattr(fn, "posts", ()) or ())
    return f"{step.op}{'/' + mode if mode else ''}{'+%d' % posts if posts else ''} {list(step.out_types[0][1])}"

per = collections.defaultdict(float)
count = collections.Counter()
total = 0.0
vals_steps = exe.steps
orig = [s.call for s in vals_steps]
for s in vals_steps:
    def timed(*a, _f=s.call, _k=describe(s), **kw):
        t = time.perf_counter(); r = _f(*a, **kw); per[_k] += time.perf_counter() - t; count[_k] += 1
        return r
    s.call = timed
t0 = time.perf_counter()
for _ in range(RUNS):
    exe.run(feeds)
total = (time.perf_counter() - t0) / RUNS * 1e3
rows = sorted(per.items(), key=lambda kv: -kv[1])
byop = collections.defaultdict(float)
for k, v in per.items():
    byop[k.split(" ")[0]] += v
lines = [f"{len(vals_steps)} steps, {total:.2f} ms per run (timed steps {sum(per.values()) / RUNS * 1e3:.2f} ms)"]
lines += [f"{v / RUNS * 1e3:8.3f} ms  {k}" for k, v in sorted(byop.items(), key=lambda kv: -kv[1])]
lines.append("-- steps")
lines += [f"{v / RUNS * 1e3:8.3f} ms  x{count[k] // RUNS}  {k}" for k, v in rows[:40]]
"\\n".join(lines)
`));
