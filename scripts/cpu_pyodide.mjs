// A benchmark graph's whole run (executor.run) in Pyodide under Node, timed in process CPU time: on the shared
// 2-core machine wall time swings with the other work, CPU time much less.  Run it from two checkouts in turn
// to compare them (REPO: the checkout whose scripts/ and py_core/ to use; models from MODEL_DIR, written by
// `make bench`).  With --experimental-wasm-relaxed-simd Node loads the relaxed build of the C kernels, as the
// browsers do.  A tool for kernel work, not part of `make bench`.
//   node --experimental-wasm-relaxed-simd scripts/cpu_pyodide.mjs REPO MODEL_DIR NAME [RUNS]
import fs from 'fs';
import path from 'path';

const [repo, modelDir, name, runs = '30'] = process.argv.slice(2);
const {pyodideWithCore} = await import(path.resolve(repo, 'scripts/pyodide_node.mjs'));
const py = await pyodideWithCore();
py.FS.mkdirTree('/home/pyodide/models');
for (const ext of ['json', 'bin'].filter((e) => fs.existsSync(path.join(modelDir, `${name}.${e}`)))) {
  py.FS.writeFile(`/home/pyodide/models/m.${ext}`, fs.readFileSync(path.join(modelDir, `${name}.${ext}`)));
}
py.runPython(`
import numpy as np
from py_core.graphfile import load, replay
from py_core.kernels import native
from py_core.runtime.executor import prepare
graph = load("/home/pyodide/models/m.json")
exe = prepare(replay(graph))
rng = np.random.default_rng(0)
feeds = {n: rng.random(d["shape"], dtype=np.float32) for n, d in graph.inputs.items()}
for _ in range(5):
    exe.run(feeds)
`);
const times = [];
for (let i = 0; i < Number(runs); i++) {
  const u0 = process.cpuUsage();
  py.runPython('exe.run(feeds); None');
  const u = process.cpuUsage(u0);
  times.push((u.user + u.system) / 1000);
}
times.sort((a, b) => a - b);
console.log(`${repo} ${name} (${py.runPython('native.LOADED_FILE') || 'no C kernels'}): CPU ms per run min ` +
    `${times[0].toFixed(2)}, median ${times[times.length >> 1].toFixed(2)}`);
