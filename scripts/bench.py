"""`make bench`: the polyfill next to onnxruntime-web (WASM, 1 and 2 threads) in one Chromium page and one
Firefox page, the gallery's TFLite models against native LiteRT, startup and memory; ratios, JSON and HTML.

    python scripts/bench.py [--browsers chromium,firefox] [--cases mobilenetv2,matmul512,...] [--reps N]
                            [--baseline] [--memory-runs 1000] [--skip-startup] [--skip-transfer]
                            [--skip-small-ops] [--out reports]

Every timing is a median and a minimum over repeated runs measured in the same page, interleaved with the
peer it is compared to; the ratios are what to read (this is a shared 2-core machine).  Cases come from
scripts/bench_models.py (MobileNetV2 and the kernels written in torch, exported to ONNX, and translated to
the WebNN graph with the same weights; the MediaPipe models through py_core's TFLite loader).
--baseline adds a polyfill page with the compiler, the C kernels and BLAS off (?compiler=0&native=0&blas=0): the
"before" column, NumPy reference kernels only.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import html
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_dispatch  # noqa: E402
import bench_transfer  # noqa: E402
from bench_models import DEFAULT_OUT, generate  # noqa: E402

KERNEL_CASES = ["matmul512", "conv3x3_64", "depthwise3x3_144", "relu", "sigmoid", "add"]
TFLITE_CASES = ["selfie_segmentation", "face_detection_short_range", "face_landmark", "hand_landmark_lite",
                "pose_detection"]
DEFAULT_CASES = ["mobilenetv2", *KERNEL_CASES, "chain1", "chain500", *TFLITE_CASES]
PAGE_TIMEOUT_MS = 600_000


# ------------------------------------------------------------------------------------------------ server


class ByteCounter:
    """ASGI wrapper counting response body bytes and requests (what a page load downloads)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.reset()

    def reset(self) -> None:
        self.bytes, self.requests, self.not_modified, self.paths = 0, 0, 0, {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]

        async def counting(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.requests += 1
                self.not_modified += message["status"] == 304
            elif message["type"] == "http.response.body":
                n = len(message.get("body", b""))
                self.bytes += n
                self.paths[path] = self.paths.get(path, 0) + n
            await send(message)

        await self.app(scope, receive, counting)


def start_server() -> tuple[str, ByteCounter, Any]:
    import uvicorn

    from web.app import create_app
    from web.settings import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = Settings.from_env()
    settings = Settings(host="127.0.0.1", port=port, cache_dir=env.cache_dir, repo_root=env.repo_root)
    counter = ByteCounter(create_app(settings))
    server = uvicorn.Server(uvicorn.Config(counter, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline:
            raise RuntimeError("the dev server did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", counter, server


# ------------------------------------------------------------------------------------------------ browsers


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def open_page(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("() => window.perf && window.perf.ready")
    return context, page, errors


def probe_native(page: Any) -> dict[str, Any]:
    """What native WebNN this browser offers: absent, present-but-unusable (with its message), or usable."""
    return page.evaluate("""async () => {
        const n = webnnPolyfill.native;
        if (!n) return {state: 'absent'};
        try { await n.createContext(); return {state: 'usable'}; }
        catch (e) { return {state: 'unusable', error: `${e.name}: ${e.message}`}; }
    }""")


def _startup_page(context: Any, base: str, counter: ByteCounter, case: str) -> dict[str, Any]:
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    counter.reset()
    t0 = time.perf_counter()
    page.goto(f"{base}/perf/")
    page.wait_for_function("() => window.perf && window.perf.ready")
    res = page.evaluate("(name) => perf.startup(name)", case)
    res["wallMs"] = (time.perf_counter() - t0) * 1e3
    res["bytes"], res["requests"], res["notModified"] = counter.bytes, counter.requests, counter.not_modified
    res["largest"] = dict(sorted(counter.paths.items(), key=lambda kv: -kv[1])[:6])
    page.close()
    return res


def startup(pw: Any, browser: Any, name: str, base: str, counter: ByteCounter, case: str) -> dict[str, Any]:
    """Cold (empty profile) then warm (the same profile again: HTTP cache, compiled-code cache) page loads up to
    a built graph of `case`.  Chromium gets a real on-disk profile (a throwaway context's in-memory cache skips
    files as large as pyodide.asm.wasm); Firefox a fresh context, whose cache keeps them."""
    import tempfile

    from web.browsers import launch_args

    out: dict[str, Any] = {"case": case}
    if name == "chromium":
        with tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
            for label in ("cold", "warm"):  # warm: the browser restarted on the same profile, a return visit
                context = pw.chromium.launch_persistent_context(profile, **launch_args("chromium"))
                try:
                    out[label] = _startup_page(context, base, counter, case)
                finally:
                    context.close()
        return out
    context = browser.new_context()
    try:
        for label in ("cold", "warm"):
            out[label] = _startup_page(context, base, counter, case)
    finally:
        context.close()
    return out


def run_browser(pw: Any, name: str, base: str, counter: ByteCounter, args: argparse.Namespace,
                index: dict[str, Any]) -> dict[str, Any]:
    from web.browsers import launch_args

    kw = launch_args(name, native_webnn=(name == "chromium"))
    browser = getattr(pw, name).launch(**kw)
    result: dict[str, Any] = {"browser": name, "version": browser.version, "cases": {}, "baseline": {}}
    try:
        context, page, errors = open_page(browser, f"{base}/perf/")
        result["native"] = probe_native(page)
        result["crossOriginIsolated"] = page.evaluate("globalThis.crossOriginIsolated")
        for case in args.cases:
            if case not in index:
                continue
            reps = args.reps if case in ("mobilenetv2",) or case in TFLITE_CASES else args.reps * 2
            log(f"{name}: {case}")
            try:
                res = page.evaluate("([n, o]) => perf.run(n, o)",
                                    [case, {"reps": reps, "warmup": 2, "seconds": args.seconds,
                                            "returnOutputs": case in TFLITE_CASES}])
                page.evaluate("(n) => perf.destroy(n)", case)
            except Exception as e:  # a failing case is reported, the bench goes on
                res = {"error": f"{type(e).__name__}: {e}"[:2000]}
                log(f"{name}: {case} failed: {res['error'][:300]}")
            result["cases"][case] = res
        result["pageErrors"] = errors
        # which engine ran: C kernels loaded (native 1/0) and SciPy BLAS state, from the polyfill's worker
        result["worker"] = page.evaluate("webnnPolyfill.workerStats()")
        context.close()
        if args.baseline:
            context, page, _ = open_page(browser, f"{base}/perf/?compiler=0&native=0&blas=0")
            for case in args.cases:
                if case not in index or case in TFLITE_CASES:
                    continue
                log(f"{name}: {case} (baseline: compiler, C kernels and BLAS off)")
                try:
                    res = page.evaluate("([n, o]) => perf.run(n, o)",
                                        [case, {"reps": max(3, args.reps // 2), "warmup": 1,
                                                "seconds": args.seconds, "threads": []}])
                    page.evaluate("(n) => perf.destroy(n)", case)
                except Exception as e:
                    res = {"error": f"{type(e).__name__}: {e}"[:2000]}
                result["baseline"][case] = res
            context.close()
        if not args.skip_small_ops:  # #16 lines 2 and 4: scripts/bench_dispatch.py
            result["smallOps"] = bench_dispatch.run_small_ops(browser, base, lambda m: log(f"{name}: {m}"))
        if not args.skip_startup:
            for case in ("chain1", "selfie_segmentation"):
                if case in index:
                    log(f"{name}: startup with {case}")
                    result.setdefault("startup", {})[case] = startup(pw, browser, name, base, counter, case)
    finally:
        browser.close()
    return result


# ------------------------------------------------------------------------------------------------ native


def litert(index: dict[str, Any], browser_results: list[dict[str, Any]], reps: int) -> dict[str, Any]:
    """The TFLite models in native LiteRT (XNNPACK, 1 thread) on the page's inputs; outputs compared."""
    from ai_edge_litert.interpreter import Interpreter

    out: dict[str, Any] = {}
    for case in TFLITE_CASES:
        entry = index.get(case)
        page_res = next((r["cases"].get(case) for r in browser_results if r["cases"].get(case, {}).get("inputs")),
                        None)
        if entry is None or page_res is None:
            continue
        it = Interpreter(model_path=entry["tflite"], num_threads=1)
        it.allocate_tensors()
        feeds = [np.frombuffer(base64.b64decode(page_res["inputs"][n]), np.float32).reshape(d["shape"])
                 for n, d in entry["inputs"].items()]
        for d, x in zip(it.get_input_details(), feeds, strict=True):
            it.set_tensor(d["index"], x)
        times = []
        for i in range(reps + 3):
            t0 = time.perf_counter()
            for d, x in zip(it.get_input_details(), feeds, strict=True):
                it.set_tensor(d["index"], x)
            it.invoke()
            outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
        agree = {}
        for r in browser_results:
            res = r["cases"].get(case, {})
            if "outputs" not in res:
                continue
            errs = []
            for n, ref in zip(entry["outputs"], outs, strict=False):
                got = np.frombuffer(base64.b64decode(res["outputs"][n]), np.float32)
                ref = ref.reshape(-1).astype(np.float32)
                errs.append(float(np.abs(got - ref).max() / (np.abs(ref).max() or 1)) if got.size == ref.size
                            else float("nan"))
            agree[r["browser"]] = max(errs)
        out[case] = {"median": statistics.median(times), "min": min(times), "runs": len(times),
                     "relativeError": agree}
    return out


def pyodide_node(model_dir: Path, memory_runs: int) -> dict[str, Any]:
    """Executor overhead and MobileNetV2 memory inside Pyodide under Node (the worker's engine, no page)."""
    node = subprocess.run(["node", str(ROOT / "scripts" / "bench_pyodide.mjs"), str(model_dir), str(memory_runs)],
                          capture_output=True, text=True, cwd=ROOT, timeout=7200, check=False)
    lines = [ln for ln in node.stdout.splitlines() if ln.startswith("{")]
    if node.returncode != 0 or not lines:
        return {"error": (node.stderr or node.stdout)[-2000:]}
    return json.loads(lines[-1])


# ------------------------------------------------------------------------------------------------ report


def ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


def summarize(report: dict[str, Any]) -> list[str]:
    lines = []
    for r in report["browsers"]:
        lines.append(f"\n== {r['browser']} {r['version']}  crossOriginIsolated={r.get('crossOriginIsolated')}  "
                     f"native WebNN: {r.get('native')}  polyfill worker: {r.get('worker')}")
        lines.append(f"{'case':28} {'impl':14} {'median ms':>10} {'min ms':>9} {'runs':>5} {'x ort-1t':>9} "
                     f"{'x ort-2t':>9} {'before':>9}  agreement")
        for case, res in r["cases"].items():
            if "error" in res:
                lines.append(f"{case:28} ERROR {res['error'][:200]}")
                continue
            impls = res["impls"]
            o1 = impls.get("ort-wasm-1t", {}).get("median")
            o2 = impls.get("ort-wasm-2t", {}).get("median")
            base = r["baseline"].get(case, {}).get("impls", {}).get("polyfill", {}).get("median")
            agree = res.get("agreement")
            agree_s = " ".join(f"{v['relative']:.1e}" for v in agree.values()) if agree else ""
            for impl, s in impls.items():
                cols = [f"{case:28} {impl:14} {s['median']:10.2f} {s['min']:9.2f} {s['runs']:5d}"]
                if impl == "polyfill":
                    r1, r2 = ratio(s["median"], o1), ratio(s["median"], o2)
                    cols.append(f"{r1:9.2f}" if r1 else f"{'':9}")
                    cols.append(f"{r2:9.2f}" if r2 else f"{'':9}")
                    cols.append(f"{base:9.2f}" if base else f"{'':9}")
                    cols.append(f"  {agree_s}")
                lines.append(" ".join(cols))
        lines += bench_dispatch.summary(r.get("smallOps") or {})
        for case, s in (r.get("startup") or {}).items():
            for label in ("cold", "warm"):
                x = s.get(label, {})
                lines.append(f"startup {case:20} {label}: built {x.get('builtMs', 0):8.0f} ms  "
                             f"downloaded {x.get('bytes', 0) / 1e6:6.2f} MB in {x.get('requests')} requests "
                             f"({x.get('notModified')} x 304)  boot {x.get('bootTimings')}")
    lt = report.get("litert", {})
    if lt:
        lines.append("\n== TFLite models: polyfill (end to end, per browser) vs native LiteRT (CPython, 1 thread)")
        for case, s in lt.items():
            row = f"{case:28} litert {s['median']:7.2f} ms"
            for r in report["browsers"]:
                p = r["cases"].get(case, {}).get("impls", {}).get("polyfill")
                if p:
                    err = s["relativeError"].get(r["browser"], float("nan"))
                    row += (f" | {r['browser']} {p['median']:7.1f} ms ({1000 / p['median']:5.1f} fps) "
                            f"x{p['median'] / s['median']:5.1f} err {err:.1e}")
            lines.append(row)
    node = report.get("pyodide", {})
    if node and "error" not in node:
        lines.append(f"\n== Pyodide under Node: executor overhead {node['overheadUsPerOp']:.1f} us/op "
                     f"(500-op chain {node['chain500Ms']:.2f} ms, 1-op {node['chain1Ms']:.3f} ms)")
        m = node.get("memory", {})
        lines.append(f"   MobileNetV2 x{m.get('runs')}: traced current {m.get('currentStartMB'):.1f} -> "
                     f"{m.get('currentEndMB'):.1f} MB, wasm heap {m.get('heapStartMB'):.0f} -> "
                     f"{m.get('heapEndMB'):.0f} MB, peak {m.get('peakMB'):.1f} MB vs budget 3 x weights "
                     f"{m.get('weightsMB'):.1f} MB + largest live activations {m.get('liveMB'):.1f} MB = "
                     f"{m.get('budgetMB'):.1f} MB; run {m.get('medianMs'):.0f} ms")
    elif node:
        lines.append(f"\n== Pyodide under Node: ERROR {node['error'][-500:]}")
    if report.get("transfer"):
        lines += bench_transfer.summary(report["transfer"])
    return lines


def write_html(report: dict[str, Any], lines: list[str], path: Path) -> None:
    body = html.escape("\n".join(lines))
    path.write_text(f"<!doctype html><meta charset=utf-8><title>pyodide-webnn bench {report['id']}</title>"
                    f"<h1>pyodide-webnn performance bench {report['id']}</h1><pre>{body}</pre>"
                    f"<p>Raw data: <a href='{path.with_suffix('.json').name}'>JSON</a></p>")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browsers", default="chromium,firefox")
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--reps", type=int, default=10, help="timed runs per implementation (kernels: twice this)")
    ap.add_argument("--seconds", type=float, default=90, help="time limit per case and implementation set")
    ap.add_argument("--baseline", action="store_true", help="also time the polyfill with compiler and BLAS off")
    ap.add_argument("--memory-runs", type=int, default=1000)
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--skip-small-ops", action="store_true", help="skip the encoder, dispatch and two-context cases")
    ap.add_argument("--skip-node", action="store_true")
    ap.add_argument("--skip-transfer", action="store_true", help="skip the first visit's transfer from dist/")
    ap.add_argument("--regen", action="store_true", help="regenerate the benchmark graphs")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    args = ap.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]

    model_dir = DEFAULT_OUT
    if args.regen or not (model_dir / "index.json").is_file():
        log("generating the benchmark graphs (scripts/bench_models.py)")
        generate(model_dir)
    index = json.loads((model_dir / "index.json").read_text())

    from playwright.sync_api import sync_playwright

    base, counter, server = start_server()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    report: dict[str, Any] = {"id": stamp, "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                              "command": sys.argv, "browsers": []}
    try:
        with sync_playwright() as pw:
            for name in [b for b in args.browsers.split(",") if b]:
                report["browsers"].append(run_browser(pw, name, base, counter, args, index))
            if not args.skip_transfer:
                log("first visit's transfer from make dist's package (scripts/bench_transfer.py)")
                report["transfer"] = bench_transfer.measure(pw, [b for b in args.browsers.split(",") if b],
                                                            ROOT / "dist")
    finally:
        server.should_exit = True
    args.out.mkdir(parents=True, exist_ok=True)
    partial = args.out / f"bench-{stamp}.partial.json"  # the browser part survives an interrupted Node part
    partial.write_text(json.dumps(report))
    report["litert"] = litert(index, report["browsers"], args.reps * 3)
    if not args.skip_node:
        log(f"Pyodide under Node: executor overhead and {args.memory_runs} MobileNetV2 runs")
        report["pyodide"] = pyodide_node(model_dir, args.memory_runs)
    for r in report["browsers"]:  # the raw outputs were for the comparison only
        for res in r["cases"].values():
            res.pop("outputs", None)
            res.pop("inputs", None)
    lines = summarize(report)
    print("\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench-{stamp}.json"
    path.write_text(json.dumps(report, indent=1))
    partial.unlink(missing_ok=True)
    write_html(report, lines, path.with_suffix(".html"))
    print(f"\nbench: wrote {path} and {path.with_suffix('.html')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
