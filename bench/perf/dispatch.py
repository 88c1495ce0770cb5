"""Small-op graphs, per-dispatch overhead and two contexts at once, in one page of the dev server's
bench/pages/clients (onnxruntime-web loaded, the polyfill beside it):

    python -m bench dispatch [--browser chromium] [--reps 30] [--cases encoder_bert,dispatch,two_contexts]
                                     [--switches native=0] [--capture DIR] [--compare direct=0 --rounds 3]

Each case is one function of a Playwright page that returns a JSON-able dict; `python -m bench perf` (make
bench) runs them all on its own page (run_small_ops; the case name small_ops):
`ort_encoder` (onnxruntime-web's WebNN EP on the polyfill against its WASM EP, one run of each in turn, after
 a warm-up),
`dispatch_overhead` (writeTensor, dispatch, readTensor of a 1-operator graph), `data_path` (writeTensor and
readTensor of 1 and 4 MB) and `two_contexts` (the same graph dispatched on two contexts one after the other, then
at once: concurrent if the contexts run on two workers; two bare spinning workers timed alike are its control).
--compare opens a second page with other worker URL switches and runs the cases in both, interleaved (the
before/after of a switch in one browser).
--capture writes the graphs ORT builds (the build messages to the worker) for scripts/profile_pyodide.mjs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.server import dev_server
from web.browsers import launch_args


def _summary(ms: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(ms), 3), "min": round(min(ms), 3), "n": len(ms)}


# V8 tiers the hot code of both clients up while the first few hundred runs go: on the 2-core VM, Chromium's
# compile threads kept both cores busy for 1-3 s, and the polyfill's runs (two threads: the page and its worker)
# took 4-14 ms where they take 1.2 once warm (docs/performance.md, "The encoder's warm-up"). So the timed runs
# come after WARMUP runs of each; the first EARLY runs after each session's first are reported on their own.
ORT_EARLY, ORT_WARMUP = 20, 300

ORT_JS = r"""
async ({model, shape, reps, early, warmup}) => {
  const input = {data: clients.patternInput(shape, -1, 1), shape};
  // what onnxruntime-web's WebNN EP asks of the polyfill per session.run: each MLContext call counted, and the
  // time from its writeTensor to its readTensor's result (the rest of session.run is ORT's own JavaScript)
  const proto = Object.getPrototypeOf(await webnnPolyfill.ml.createContext());
  let counting = false;
  const calls = {};
  let wrote = 0;
  const polyfillMs = [];
  const saved = {};
  for (const name of ['createTensor', 'writeTensor', 'dispatch', 'readTensor']) {
    saved[name] = proto[name];
    proto[name] = function (...args) {
      if (counting) calls[name] = (calls[name] || 0) + 1;
      if (name === 'writeTensor') wrote = performance.now();
      const r = saved[name].apply(this, args);
      if (name === 'readTensor' && counting) r.then(() => polyfillMs.push(performance.now() - wrote), () => {});
      return r;
    };
  }
  const backends = ['wasm', 'webnn-polyfill'];
  const open = {};
  try {
    for (const backend of backends) {
      open[backend] = await clients.openOrt({model, backend});
      open[backend].input = open[backend].feeds({input});
      await open[backend].session.run(open[backend].input);
    }
    // one run of each in turn, the order swapped each time: drift on a shared machine hits both alike
    const pairs = async (n) => {
      const ms = {wasm: [], 'webnn-polyfill': []};
      for (let i = 0; i < n; i++) {
        for (const backend of i % 2 ? backends : [...backends].reverse()) {
          const t = performance.now();
          await open[backend].session.run(open[backend].input);
          ms[backend].push(performance.now() - t);
        }
      }
      return ms;
    };
    const earlyMs = await pairs(early);
    await pairs(warmup);
    counting = true;
    const ms = await pairs(reps);
    counting = false;
    const perRun = Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, Math.round(100 * v / reps) / 100]));
    return {...ms, early: earlyMs, polyfillMs, perRun, partitions: open['webnn-polyfill'].partitions};
  } finally {
    Object.assign(proto, saved);
    for (const o of Object.values(open)) await o.close();
  }
}
"""


def _versus(ms: dict[str, list[float]]) -> dict[str, Any]:
    """Each EP's runs summarised, and the ratio of their medians (the WebNN EP on the polyfill / the WASM EP)."""
    out: dict[str, Any] = {backend: _summary(ms[backend]) for backend in ("wasm", "webnn-polyfill")}
    out["ratio"] = round(out["webnn-polyfill"]["median"] / out["wasm"]["median"], 2)
    return out


def ort_encoder(page: Any, model: str = "encoder_bert", shape: tuple[int, ...] = (1, 32, 128),
                reps: int = 60) -> dict[str, Any]:
    """onnxruntime-web on `model`: its WebNN EP on the polyfill vs its WASM EP (1 thread); ms per session.run,
    the two runs in turn, timed after ORT_WARMUP runs of each (`early`: the ORT_EARLY before those).
    Also: the polyfill's share of a WebNN EP run (writeTensor to readTensor's result), the MLContext calls per
    run, and ORT's WebNN partitions (each one a graph, a dispatch and a read per run)."""
    runs = page.evaluate(ORT_JS, {"model": f"/clients/models/{model}.onnx", "shape": list(shape), "reps": reps,
                                  "early": ORT_EARLY, "warmup": ORT_WARMUP})
    out = _versus(runs)
    # the best runs: on a busy machine the medians carry other processes' load
    out["ratioOfMins"] = round(out["webnn-polyfill"]["min"] / out["wasm"]["min"], 2)
    out["early"] = {**_versus(runs["early"]), "warmup": ORT_WARMUP}
    if runs["polyfillMs"]:
        out["polyfill"] = _summary(runs["polyfillMs"])
    out["callsPerRun"], out["partitions"] = runs["perRun"], runs["partitions"]
    return out


DISPATCH_JS = r"""
async ({reps, size, ops}) => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const b = new P.MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [size]};
  const input = b.input('x', desc);
  const graph = await b.build({y: ops === 2 ? b.relu(b.mul(input, input)) : b.relu(input)});
  const x = await ctx.createTensor({...desc, writable: true});
  const y = await ctx.createTensor({...desc, readable: true});
  const data = new Float32Array(size).fill(-1);
  // each of `reps` awaited round trips timed alone, after 20 unmeasured ones
  const timed = async (once) => {
    for (let i = 0; i < 20; i++) await once();
    const out = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      await once();
      out.push(performance.now() - t);
    }
    return out;
  };
  const ms = await timed(async () => {
    ctx.writeTensor(x, data);
    ctx.dispatch(graph, {x}, {y});
    return ctx.readTensor(y);
  });
  // pipelined: many dispatches queued, one read at the end (the throughput side)
  const t = performance.now();
  for (let i = 0; i < reps; i++) { ctx.writeTensor(x, data); ctx.dispatch(graph, {x}, {y}); }
  await ctx.readTensor(y);
  const pipelined = (performance.now() - t) / reps;
  ctx.destroy();
  // the floor under any worker round trip on this machine at this moment: an echo worker in the same page (its
  // thread's wake-up, the page's and two postMessages; on the 2-core test VM 25-30 us in some stretches and
  // 50-100 us in others, whatever the polyfill does: docs/performance.md)
  const echo = new Worker(URL.createObjectURL(new Blob(['onmessage = () => postMessage(0);'],
    {type: 'text/javascript'})));
  let answered;
  echo.onmessage = () => answered();
  const echoMs = await timed(() => new Promise((resolve) => { answered = resolve; echo.postMessage(0); }));
  echo.terminate();
  return {ms, pipelined, echoMs};
}
"""


def dispatch_overhead(page: Any, reps: int = 200, size: int = 4, ops: int = 1) -> dict[str, Any]:
    """Round trip of writeTensor + dispatch + readTensor on a 1-operator graph (relu of `size` floats), or with
    ops=2 relu(x * x) (a graph the compiled plan runs as one C call), ms.  echoRoundTrip: right after, a bare
    echo worker's round trip in the same page, the part of it no polyfill code takes."""
    r = page.evaluate(DISPATCH_JS, {"reps": reps, "size": size, "ops": ops})
    return {"roundTrip": _summary(r["ms"]), "pipelinedPerDispatch": round(r["pipelined"], 3),
            "echoRoundTrip": _summary(r["echoMs"])}


def dispatch_two_ops(page: Any, reps: int = 200) -> dict[str, Any]:
    """dispatch_overhead of relu(x * x) on 4 floats."""
    return dispatch_overhead(page, reps, ops=2)


DATA_PATH_JS = r"""
async ({reps, mbs}) => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const out = {};
  for (const mb of mbs) {
    const n = mb * 262144;
    const desc = {dataType: 'float32', shape: [n]};
    const x = await ctx.createTensor({...desc, writable: true, readable: true});
    const data = new Float32Array(n).fill(-1);
    const into = new Float32Array(n);
    const plain = async () => { ctx.writeTensor(x, data); return ctx.readTensor(x); };
    const byob = async () => { ctx.writeTensor(x, data); return ctx.readTensor(x, into); };
    for (let i = 0; i < 3; i++) { await plain(); await byob(); }
    const a = [], b = [];
    for (let i = 0; i < reps; i++) {  // interleaved
      let t = performance.now(); await plain(); a.push(performance.now() - t);
      t = performance.now(); await byob(); b.push(performance.now() - t);
    }
    out[`${mb}MB`] = {plain: a, into: b};
    x.destroy();
  }
  ctx.destroy();
  return out;
}
"""


def data_path(page: Any, reps: int = 15, mbs: tuple[int, ...] = (1, 4)) -> dict[str, Any]:
    """writeTensor + readTensor of 1 and 4 MB (the data path: one copy each way), ms; `into`: readTensor into
    outputData."""
    r = page.evaluate(DATA_PATH_JS, {"reps": reps, "mbs": list(mbs)})
    return {size: {k: _summary(v) for k, v in runs.items()} for size, runs in r.items()}


# One context with the two_contexts graph (four n x n matmul + relu steps) and its run(k): k dispatches, then a
# read; warmed up by two runs
CONTEXT_SETUP_JS = r"""
  async function setup() {
    const ctx = await P.ml.createContext();
    const b = new P.MLGraphBuilder(ctx);
    const desc = {dataType: 'float32', shape: [n, n]};
    const w = b.constant(desc, new Float32Array(n * n).fill(1 / n));
    let h = b.input('x', desc);
    for (let i = 0; i < 4; i++) h = b.relu(b.matmul(h, w));
    const graph = await b.build({y: h});
    const x = await ctx.createTensor({...desc, writable: true});
    const y = await ctx.createTensor({...desc, readable: true});
    ctx.writeTensor(x, new Float32Array(n * n).fill(0.5));
    const run = async (k) => {
      for (let i = 0; i < k; i++) ctx.dispatch(graph, {x}, {y});
      return ctx.readTensor(y);
    };
    await run(2);
    return {ctx, run};
  }
"""

TWO_CONTEXTS_JS = r"""
async ({reps, n, rounds}) => {
  const P = webnnPolyfill;
""" + CONTEXT_SETUP_JS + r"""
  // The control: two bare workers spinning a fixed JavaScript loop, one after the other, then both at once.  Their
  // ratio is how much of a second core this machine gave at that moment (on the shared 2-vCPU VM anything from 1
  // to 2), which the contexts' ratio is read against.
  const spinner = () => new Worker(URL.createObjectURL(new Blob([`onmessage = (e) => {
    let x = 0; for (let i = 0; i < e.data; i++) x = (x * 1.0000001 + 1e-9) % 7;
    postMessage(x); };`], {type: 'text/javascript'})));
  const spinners = [spinner(), spinner()];
  const spin = (wk, iters) => new Promise((resolve) => { wk.onmessage = resolve; wk.postMessage(iters); });
  const a = await setup();
  const b = await setup();
  // warm-up with both at once: both workers' code is hot for either order, and a worker that has just booted has
  // finished whatever it does after its boot before anything is timed
  for (let i = 0; i < 2; i++) await Promise.all([a.run(reps), b.run(reps)]);
  let t = performance.now();
  await a.run(reps);
  const target = performance.now() - t;  // one context's run: the control spins about as long
  let iters = 1e6;
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    await spin(spinners[0], iters);
    iters = Math.max(1e5, Math.round(iters * target / Math.max(1, performance.now() - t)));
  }
  await spin(spinners[1], iters);
  const timed = async (f) => { const t0 = performance.now(); await f(); return performance.now() - t0; };
  const one = [], both = [], ctrlOne = [], ctrlBoth = [];
  const phases = [
    async () => one.push(await timed(async () => { await a.run(reps); await b.run(reps); })),
    async () => both.push(await timed(() => Promise.all([a.run(reps), b.run(reps)]))),
    async () => ctrlOne.push(await timed(async () => {
      await spin(spinners[0], iters); await spin(spinners[1], iters); })),
    async () => ctrlBoth.push(await timed(() => Promise.all(spinners.map((wk) => spin(wk, iters))))),
  ];
  for (let round = 0; round < rounds; round++) {
    // the order alternates, so drift over a round weighs on each phase alike
    for (const phase of round % 2 ? [...phases].reverse() : phases) await phase();
  }
  spinners.forEach((wk) => wk.terminate());
  a.ctx.destroy();
  b.ctx.destroy();
  return {one, both, ctrlOne, ctrlBoth, workers: (await P.workerStats()).workers, cores: navigator.hardwareConcurrency};
}
"""


def two_contexts(page: Any, reps: int = 10, n: int = 256, rounds: int = 9) -> dict[str, Any]:
    """`reps` dispatches of a 4 x (matmul n + relu) graph on each of two contexts: one after the other, then
    both at once, `rounds` times (the order alternating); speedup = sequential / concurrent, medians (2.0 = two
    cores fully used).  control: the same ratio of two bare workers spinning as long, in the same rounds: what the
    machine gave (on a 2-core machine shared with other work, the contexts cannot beat it)."""
    r = page.evaluate(TWO_CONTEXTS_JS, {"reps": reps, "n": n, "rounds": rounds})
    seq, conc = statistics.median(r["one"]), statistics.median(r["both"])
    ctrl = statistics.median(r["ctrlOne"]) / statistics.median(r["ctrlBoth"])
    return {"sequentialMs": round(seq, 1), "concurrentMs": round(conc, 1), "speedup": round(seq / conc, 2),
            "controlSpeedup": round(ctrl, 2), "rounds": rounds,
            "roundSpeedups": [round(x / y, 2) for x, y in zip(r["one"], r["both"], strict=True)],
            "workers": r["workers"], "cores": r["cores"]}


SECOND_WORKER_JS = r"""
async () => {
  const P = webnnPolyfill;
  const a = await P.ml.createContext();
  const before = await P.workerStats();
  const t = performance.now();
  const b = await P.ml.createContext();
  const ms = performance.now() - t;
  const after = await P.workerStats();
  a.destroy();
  b.destroy();
  return {ms, before, after};
}
"""


def second_worker(page: Any) -> dict[str, Any]:
    """What a second concurrent context costs when it starts a worker of its own: createContext() time and the
    WebAssembly memory the new worker adds (both workers' wasmBytes summed by workerStats)."""
    r = page.evaluate(SECOND_WORKER_JS)
    mib = 1 << 20
    return {"workers": [r["before"]["workers"], r["after"]["workers"]], "createContextMs": round(r["ms"]),
            "addedWasmMiB": round((r["after"]["wasmBytes"] - r["before"]["wasmBytes"]) / mib, 1),
            "firstWorkerWasmMiB": round(r["before"]["wasmBytes"] / mib, 1)}


# Before the polyfill loads: keep what the page sends the worker's 'build' (graph JSON and constants).
CAPTURE_INIT = r"""
(() => {
  window.__builds = [];
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (msg, ...rest) {
    // copied now: the buffers are transferred
    if (msg && msg.type === 'build') window.__builds.push({...msg, buffers: msg.buffers.map((u) => u.slice())});
    return post.call(this, msg, ...rest);
  };
})();
"""

CAPTURED_JS = r"""
() => window.__builds.map((m) => ({graph: m.graph, constIds: m.constIds, constantTensors: m.constantTensors,
  buffers: m.buffers.map((u) => clients.toBase64(u))}))
"""


def save_captured(page: Any, out: Path) -> list[Path]:
    """The captured build messages as DIR/build<i>.json (graph JSON string, constants base64)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, m in enumerate(page.evaluate(CAPTURED_JS)):
        p = out / f"build{i}.json"
        p.write_text(json.dumps(m))
        paths.append(p)
    return paths


def run_small_ops(browser: Any, base: str, log: Any) -> dict[str, Any]:
    """Every case above in one fresh page of `browser` (for the perf run): {case: result or {error}}."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(600_000)
    out: dict[str, Any] = {}
    try:
        page.goto(f"{base}/clients/")
        page.wait_for_function("window.clientsReady === true")
        page.evaluate("async () => { (await webnnPolyfill.ml.createContext()).destroy(); }")
        for name, fn in CASES.items():
            log(f"small ops: {name}")
            try:
                out[name] = fn(page)
            except Exception as e:  # a failing case is reported, the bench goes on
                out[name] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    finally:
        context.close()
    return out


def _ms(stat: dict[str, Any], digits: int = 2) -> str:
    """'<median> ms (min <min>)' of one timed run."""
    return f"{stat['median']:.{digits}f} ms (min {stat['min']:.{digits}f})"


def _echo(case: dict[str, Any]) -> str:
    """', a bare echo worker <median> ms (min <min>)' when the case measured one."""
    return f"; a bare echo worker in that page {_ms(case['echoRoundTrip'], 3)}" if "echoRoundTrip" in case else ""


def summary(results: dict[str, Any]) -> list[str]:
    """Report lines for `run_small_ops`' results of one browser."""
    lines = []
    enc, disp, two, sec = (results.get(k, {}) for k in ("encoder_bert", "dispatch", "two_contexts", "second_worker"))
    if "wasm" in enc:
        lines.append(f"small ops: encoder_bert via ORT, WebNN EP on the polyfill {_ms(enc['webnn-polyfill'])} vs "
                     f"ORT WASM {_ms(enc['wasm'])}: x{enc['ratio']} (mins x{enc['ratioOfMins']}); target <= 2")
        if "early" in enc:
            e = enc["early"]
            lines.append(f"small ops: encoder_bert before V8's tier-up ({e['wasm']['n']} runs after the first, "
                         f"before {e['warmup']} more untimed): polyfill {_ms(e['webnn-polyfill'])} vs ORT WASM "
                         f"{_ms(e['wasm'])}: x{e['ratio']}")
        if "polyfill" in enc:
            lines.append(f"small ops: encoder_bert, of which writeTensor..readTensor {_ms(enc['polyfill'])}; "
                         f"per run {enc.get('callsPerRun')}, WebNN partitions {enc.get('partitions')}")
    if "roundTrip" in disp:
        lines.append(f"small ops: 1-op write+dispatch+read {_ms(disp['roundTrip'], 3)}; target < 0.15"
                     + _echo(disp))
    two_ops = results.get("dispatch_2op", {})
    if "roundTrip" in two_ops:
        lines.append(f"small ops: 2-op (one C call) write+dispatch+read {_ms(two_ops['roundTrip'], 3)}"
                     + _echo(two_ops))
    for size, runs in results.get("data_path", {}).items():
        if "plain" in runs:
            lines.append(f"small ops: writeTensor + readTensor of {size} {_ms(runs['plain'])}, "
                         f"into outputData {_ms(runs['into'])}")
    if "speedup" in two:
        lines.append(f"small ops: two contexts at once x{two['speedup']} ({two['sequentialMs']} ms one after the "
                     f"other, {two['concurrentMs']} ms together, medians of {two.get('rounds', 3)} rounds, "
                     f"{two['workers']} workers, {two['cores']} cores); two bare workers spinning as long in the "
                     f"same rounds x{two.get('controlSpeedup', '?')}")
    if "createContextMs" in sec:
        lines.append(f"small ops: a second worker costs {sec['addedWasmMiB']} MiB of wasm memory and "
                     f"{sec['createContextMs']} ms on its createContext()")
    lines += [f"small ops: {k} ERROR {v['error'][:200]}" for k, v in results.items() if "error" in v]
    return lines


# second_worker before two_contexts: the worker it starts is then warm for the concurrency case
CASES = {"dispatch": dispatch_overhead, "dispatch_2op": dispatch_two_ops, "data_path": data_path,
         "second_worker": second_worker, "two_contexts": two_contexts, "encoder_bert": ort_encoder}


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench dispatch: the small-op cases alone, optionally against other worker switches."""
    ap = argparse.ArgumentParser(prog="python -m bench dispatch", description=__doc__.splitlines()[0])
    ap.add_argument("--browser", default="chromium")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--reps", type=int, default=0, help="override each case's repetitions")
    ap.add_argument("--switches", default="", help="worker URL switches, e.g. native=0&compiler=0")
    ap.add_argument("--capture", type=Path, default=None)
    ap.add_argument("--compare", default=None, metavar="SWITCHES",
                    help="a second page with these worker URL switches (e.g. direct=0), the cases run in both, "
                         "interleaved, --rounds times")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --compare")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with dev_server() as base, sync_playwright() as pw:
        browser = getattr(pw, args.browser).launch(**launch_args(args.browser))

        def open_page(switches: str) -> Any:
            page = browser.new_page()
            page.set_default_timeout(600_000)
            if args.capture:
                page.add_init_script(CAPTURE_INIT)
            if switches:
                url = f"{base}/polyfill/webnn-worker.js?{switches}"
                page.add_init_script(f"window.WEBNN_POLYFILL_CONFIG = {{workerURL: {json.dumps(url)}}};")
            page.goto(f"{base}/clients/")
            page.wait_for_function("window.clientsReady === true")
            page.evaluate("async () => { (await webnnPolyfill.ml.createContext()).destroy(); }")
            return page

        page = open_page(args.switches)
        pages = [(args.switches or "default", page)]
        if args.compare is not None:
            pages.append((args.compare, open_page(args.compare)))
        for r in range(args.rounds if args.compare is not None else 1):
            for name in args.cases.split(","):
                kw = {"reps": args.reps} if args.reps else {}
                for label, p in pages:
                    tag = f"[{label}, round {r + 1}] " if args.compare is not None else ""
                    print(f"{tag}{name}: {json.dumps(CASES[name](p, **kw))}", flush=True)
        if args.capture:
            for p in save_captured(page, args.capture):
                print(f"captured {p}")
        browser.close()
    return 0

