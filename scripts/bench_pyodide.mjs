// Part of `make bench` (bench/perf/run.py runs it): the executor inside Pyodide under Node, the same engine as the
// polyfill's worker without the page: per-operator overhead on a 500-operator chain, and MobileNetV2 run
// many times for memory growth and peak.  Prints one JSON line.
//   node scripts/bench_pyodide.mjs MODEL_DIR [RUNS]
import {copyTree, pyodideWithCore} from './pyodide_node.mjs';

const [modelDir, runs = '1000'] = process.argv.slice(2);
const py = await pyodideWithCore();
copyTree(py, modelDir, '/home/pyodide/models', /^(chain1|chain500|mobilenetv2)\.(json|bin)$/);

const result = await py.runPythonAsync(`
import json, time, tracemalloc, statistics
import numpy as np
import pyodide_js
from py_core.graphfile import load, replay
from py_core.runtime.executor import prepare
from py_core.kernels.matrix import use_blas
from scipy.linalg import blas


def timed(exe, feeds, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); exe.run(feeds); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3

out = {}
chains = {}
for name in ("chain1", "chain500"):
    exe = prepare(replay(load(f"/home/pyodide/models/{name}.json")))
    feeds = {"x": np.ones((1, 16), np.float32)}
    timed(exe, feeds, 20)
    chains[name] = min(timed(exe, feeds, 50) for _ in range(3))
out["chain1Ms"], out["chain500Ms"] = chains["chain1"], chains["chain500"]
out["overheadUsPerOp"] = (chains["chain500"] - chains["chain1"]) / 499 * 1e3

use_blas(blas.sgemm)
graph = load("/home/pyodide/models/mobilenetv2.json")
tracemalloc.start()
exe = prepare(replay(graph))
feeds = {"input": np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)}
# the largest set of activations alive at once under the memory plan
live, largest = {}, 0
for st in exe.steps:
    for s, (dt, shape) in zip(st.outputs, st.out_types):
        live[s] = int(np.prod(shape)) * dt.itemsize
    largest = max(largest, sum(live.values()))
    for s in st.release:
        live.pop(s, None)
runs = int(${Number(runs)})
for _ in range(3):
    exe.run(feeds)
import gc
gc.collect()  # the builder's operand handles form cycles; collect them before measuring
heap0 = pyodide_js._module.HEAP8.length
cur0, _ = tracemalloc.get_traced_memory()
tracemalloc.reset_peak()
ts = []
for i in range(runs):
    t = time.perf_counter(); exe.run(feeds); ts.append(time.perf_counter() - t)
cur1, peak = tracemalloc.get_traced_memory()
heap1 = pyodide_js._module.HEAP8.length
weights = len(graph.weights)
MB = 1e6
out["memory"] = {"runs": runs, "currentStartMB": cur0 / MB, "currentEndMB": cur1 / MB, "peakMB": peak / MB,
                 "heapStartMB": heap0 / MB, "heapEndMB": heap1 / MB, "weightsMB": weights / MB,
                 "heldWeightsMB": exe.weight_bytes / MB, "liveMB": largest / MB,
                 "budgetMB": (3 * weights + largest) / MB, "medianMs": statistics.median(ts) * 1e3,
                 "minMs": min(ts) * 1e3}
json.dumps(out)
`);
console.log(result);
