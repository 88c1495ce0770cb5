// Where a graph's time goes, inside Pyodide under Node (the worker's engine without the page): runs a
// benchmark graph from build/bench-models (written by `make bench`) and prints the time of each compiled step,
// summed over runs, largest first.  A tool for kernel work (docs/bench.md), not part of `make bench`.
//   node scripts/profile_pyodide.mjs MODEL_DIR NAME [RUNS] [--no-blas] [--no-compiler]
//   node scripts/profile_pyodide.mjs --captured BUILD.json [RUNS] [--no-blas] [--no-compiler]
// --captured takes a build message a page sent its worker (`python -m bench dispatch --capture DIR`): e.g. the graph
// onnxruntime-web's WebNN EP builds for the encoder.
// Steps are timed one by one, so the compiled plan is off here (it runs runs of steps as one C call).
import {loadGraphArgs, pyodideWithCore} from './pyodide_node.mjs';

const py = await pyodideWithCore();
const flags = loadGraphArgs(py, process.argv.slice(2), 'RUNS', 20);
py.globals.set('BLAS', !flags.includes('--no-blas'));
py.globals.set('COMPILER', !flags.includes('--no-compiler'));

console.log(await py.runPythonAsync(`
import json, time, collections, functools
import numpy as np
from py_core.graphfile import load, replay
from py_core.compiler import CompileOptions
from py_core.runtime.executor import prepare
from py_core.kernels.matrix import use_blas
if BLAS:
    from scipy.linalg import blas
    use_blas(blas.sgemm)
rng = np.random.default_rng(0)
if CAPTURED:
    import base64
    from py_core.bridge.jsonnum import loads
    from py_core.builder import graph_from_json
    m = json.load(open("/home/pyodide/models/captured.json"))
    consts = {int(i): base64.b64decode(b) for i, b in zip(json.loads(m["constIds"]), m["buffers"])}
    exe = prepare(graph_from_json(loads(m["graph"]), consts), CompileOptions(plan=False) if COMPILER else CompileOptions.none())
    feeds = {n: rng.random(d.shape, dtype=np.float32) for n, d in exe.input_descs.items()}
else:
    graph = load("/home/pyodide/models/m.json")
    exe = prepare(replay(graph), CompileOptions(plan=False) if COMPILER else CompileOptions.none())
    feeds = {n: rng.random(d["shape"], dtype=np.float32) for n, d in graph.inputs.items()}
exe.run(feeds)

def describe(step):
    fn = step.call.func if isinstance(step.call, functools.partial) else step.call
    posts = len(getattr(fn, "posts", ()) or ())
    kernel = f"[{step.variant}]" if step.variant else ""
    return f"{step.op}{kernel}{'+%d' % posts if posts else ''} {list(step.out_types[0][1])}"

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
