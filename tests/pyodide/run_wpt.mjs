// Run the WPT conformance runner (py_core.testing.wpt) inside Pyodide under Node and print JSON results.
//
//   node tests/pyodide/run_wpt.mjs [--op NAME] [--data DIR] [--assets DIR] [--native]
//
// --native runs py_core.testing.native_check (the wasm build of the C kernels against float64 formulas)
// instead of the WPT cases and prints {"timings", "native", "checks"}.
//
// Pyodide is started by the polyfill's boot module (scripts/pyodide_node.mjs -> polyfill/src/boot/boot.js); the core
// and its NumPy wheel come from the asset cache that `python scripts/fetch_assets.py` fills:
// $PYODIDE_WEBNN_CACHE/pyodide-<PYODIDE_VERSION>/ (default ~/.cache/pyodide-webnn/...), or --assets DIR.
// The repository is mounted read-only in spirit at /repo with NODEFS; no bytecode is written back to it.
// stdout carries exactly one JSON document: {"timings", "python", "numpy", "summary", "passed", "results"}.

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { assetDir, nodePyodide } from "../../scripts/pyodide_node.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

function parseArgs(argv) {
  const out = { op: null, data: join(repo, "tests", "data", "wpt"), assets: null, native: false, relaxed: "0", plan: "1" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--op") out.op = argv[++i];
    else if (a === "--data") out.data = resolve(argv[++i]);
    else if (a === "--assets") out.assets = resolve(argv[++i]);
    else if (a === "--native") out.native = true;
    else if (a === "--relaxed") out.relaxed = argv[++i];
    else if (a === "--plan") out.plan = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const assets = assetDir(args.assets);
  if (!existsSync(join(assets, "pyodide.mjs"))) {
    console.error(`Pyodide assets not found in ${assets}: run python scripts/fetch_assets.py`);
    process.exit(2);
  }
  if (!args.data.startsWith(repo)) throw new Error(`--data must be inside the repository (${repo})`);
  const t0 = performance.now();
  const log = (s) => process.stderr.write(s + "\n");
  let t1 = 0;
  const pyodide = await nodePyodide({ assets, numpy: true, stdout: log, stderr: log,
    mark: (stage) => { if (stage === "runtime") t1 = performance.now(); } });
  const t2 = performance.now();
  pyodide.FS.mkdir("/repo");
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: repo }, "/repo");
  const dataInRepo = "/repo/" + args.data.slice(repo.length).replace(/^\/+/, "");
  pyodide.globals.set("WPT_DATA", dataInRepo);
  pyodide.globals.set("WPT_OP", args.op);
  // which build of the C kernels loads: 0 the plain one, 1 the relaxed-SIMD one (Node needs
  // --experimental-wasm-relaxed-simd for it; without, the plain one loads instead)
  pyodide.runPython(`import os; os.environ["PYODIDE_WEBNN_RELAXED"] = ${JSON.stringify(String(args.relaxed))}`);
  // --plan 0: every step from Python (no compiled plan, py_core/compiler/plan.py)
  pyodide.runPython(`import os; os.environ["PYODIDE_WEBNN_PLAN"] = ${JSON.stringify(String(args.plan))}`);
  const reportJson = await pyodide.runPythonAsync(args.native ? `
import sys, json
sys.dont_write_bytecode = True
sys.path.insert(0, "/repo")
from py_core.kernels import native
from py_core.testing import native_check
json.dumps({"native": native.available(), "native_file": native.LOADED_FILE,
            "checks": native_check.check_all() if native.available() else []})
` : `
import sys, json, platform
sys.dont_write_bytecode = True  # never write __pycache__ into the mounted repository
sys.path.insert(0, "/repo")
import numpy
from py_core.kernels import native
from py_core.testing import wpt
_results = wpt.run_dir(WPT_DATA, WPT_OP)
_ops = wpt.operator_files(WPT_DATA)
if WPT_OP:
    _ops = {k: v for k, v in _ops.items() if k == WPT_OP or wpt.snake_to_camel(WPT_OP) == k}
_report = wpt.report(_results, _ops)
_report["python"] = platform.python_version()
_report["numpy"] = numpy.__version__
_report["native"] = native.available()
_report["native_file"] = native.LOADED_FILE
json.dumps(_report)
`);
  const t3 = performance.now();
  const report = JSON.parse(reportJson);
  report.timings = {
    pyodide_boot_s: +((t1 - t0) / 1000).toFixed(3),
    numpy_load_s: +((t2 - t1) / 1000).toFixed(3),
    run_s: +((t3 - t2) / 1000).toFixed(3),
    total_s: +((t3 - t0) / 1000).toFixed(3),
  };
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
