// The compiled plan (py_core/compiler/plan.py) against the step-by-step executor, interleaved in one Pyodide
// under Node: the same graph prepared both ways, runs alternated, median and minimum ms per run of each.
//   node scripts/bench_plan.mjs MODEL_DIR NAME [ROUNDS]          (a benchmark graph, e.g. build/bench-models)
//   node scripts/bench_plan.mjs --captured BUILD.json [ROUNDS]  (a graph a page built: bench_dispatch --capture)
import fs from 'fs';
import path from 'path';

import {pyodideWithCore} from './pyodide_node.mjs';

const captured = process.argv.includes('--captured');
const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const [modelDir, name, rounds = '30'] = captured ? [positional[0], '', positional[1] || '30'] : positional;
const py = await pyodideWithCore();
py.FS.mkdirTree('/home/pyodide/models');
if (captured) {
  py.FS.writeFile('/home/pyodide/models/captured.json', fs.readFileSync(modelDir));
} else {
  for (const ext of ['json', 'bin'].filter((e) => fs.existsSync(path.join(modelDir, `${name}.${e}`)))) {
    py.FS.writeFile(`/home/pyodide/models/m.${ext}`, fs.readFileSync(path.join(modelDir, `${name}.${ext}`)));
  }
}
py.globals.set('CAPTURED', captured);
py.globals.set('ROUNDS', Number(rounds));
console.log(await py.runPythonAsync(`
import json, time, statistics
import numpy as np
from py_core.compiler import CompileOptions
from py_core.runtime.executor import prepare
from py_core.kernels import native

def build(options):
    if CAPTURED:
        import base64
        from py_core.bridge.jsonnum import loads
        from py_core.builder import graph_from_json
        m = json.load(open("/home/pyodide/models/captured.json"))
        consts = {int(i): base64.b64decode(b) for i, b in zip(json.loads(m["constIds"]), m["buffers"])}
        return prepare(graph_from_json(loads(m["graph"]), consts), options)
    from py_core.graphfile import load, replay
    return prepare(replay(load("/home/pyodide/models/m.json")), options)

exes = {"plan": build(CompileOptions(plan=True)), "steps": build(CompileOptions(plan=False))}
rng = np.random.default_rng(0)
feeds = {n: rng.random(d.shape, dtype=np.float32) for n, d in exes["plan"].input_descs.items()}
want = exes["steps"].run(feeds)
got = exes["plan"].run(feeds)
err = max(float(np.max(np.abs(got[k] - want[k]))) if want[k].size else 0.0 for k in want)
times = {k: [] for k in exes}
for r in range(ROUNDS):
    for k, exe in (exes.items() if r % 2 else reversed(exes.items())):
        t = time.perf_counter(); exe.run(feeds); times[k].append((time.perf_counter() - t) * 1e3)
plan = exes["plan"].plan
lines = [f"native: {native.LOADED_FILE}; {len(exes['steps'].steps)} steps; "
         + (plan and f"{plan.steps_in_c} in C in {len(plan.segments)} segment(s); max |plan - steps| {err:.2e}" or "no plan")]
for k, v in times.items():
    lines.append(f"{k:6s} median {statistics.median(v):8.3f} ms  min {min(v):8.3f} ms  ({len(v)} runs)")
"\\n".join(lines)
`));
