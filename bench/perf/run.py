"""The performance bench (`make bench`, `python -m bench perf`): the polyfill next to onnxruntime-web
(WASM, 1 and 2 threads) in one page per browser, the gallery's TFLite models against native LiteRT, startup,
start-up over network profiles, the memory a page pays (bench/perf/memory.py), the executor under Node and its
memory.  A mode of the comparison bench: the same
dev server (bench.targets.playwright.dev_server), browser sessions and probe (webnnBench.probe in the /perf/ page), and
the same run directory (bench.results) under reports/, listed at /reports/, with bench/report/perf.py's
report.

Every timing is a median and a minimum over repeated runs measured in the same page, interleaved with the peer it
is compared to (bench/pages/perf/perf.js); the ratios are what to read (this is a shared 2-core machine).  The
graphs come from bench/perf/models.py (build/bench-models/index.json).

In the run directory (results model: bench/results.py, run.json "kind": "perf", "schema": PERF_SCHEMA):
- a "probe" line per browser (what it offers, as in the comparison bench);
- a "result" line per case x implementation x browser: implementation "polyfill" (variant "default", or
  "baseline": compiler, C kernels and BLAS off), "wasm" for onnxruntime-web's WASM path (variants "1-thread",
  "2-threads"); timings.median_ms / min_ms / runs / times_ms; metrics: the polyfill's ratios to each peer and its
  agreement with onnxruntime-web, the graph's build times;
- "measure" lines for what is not a case: startup (cold/warm per browser), worker (engine state), litert, node
  (executor overhead and memory), network (cold and warm start-up over network profiles), memory
  (bench/perf/memory.py).

Adding a case: bench/perf/models.py writes its graph (and, for a peer, an ONNX file) into the index; a row in
CASES below says how to time it (group, repetitions, extra options for perf.run).  A case in the index without a
row runs with its kind's defaults.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import results as res
from bench.perf import dispatch, memory, network
from bench.perf import models as bench_models
from bench.perf.schema import PERF_SCHEMA, POLYFILL, impl_of, page_name
from bench.perf.settle import settle
from bench.report.perf import load_run, summary_lines, write_report
from bench.server import dev_server
from bench.targets import BrowserUnavailable, Target, local_target
from bench.targets.playwright import BrowserSession
from bench.targets.webdriver import WebDriverSession
from web.browsers import webkit_over_webdriver
from web.network_profile import parse_profile
from web.settings import Settings
from web.webdriver import WebDriverPage, webkitgtk_session

# PYODIDE_WEBNN_BENCH_QUERY (e.g. "?plan=0") is added to the perf page's URL: worker switches for a before/after
PAGE = "/perf/" + os.environ.get("PYODIDE_WEBNN_BENCH_QUERY", "")
BASELINE_QUERY = "?compiler=0&native=0&blas=0"
PAGE_TIMEOUT_MS = 600_000


# ---------------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class PerfCase:
    """How to time one graph of bench/perf/models.py's index."""

    name: str
    group: str  # "model", "kernel", "chain" (executor overhead), "tflite" (compared with native LiteRT)
    reps_factor: float = 1.0  # timed runs: --reps x this
    baseline: bool = True  # also timed on the ?compiler=0&native=0&blas=0 page with --baseline
    startup: bool = False  # one of the graphs the startup measurement builds (whatever --cases says)
    options: Mapping[str, Any] = field(default_factory=dict)  # extra perf.run options

    @property
    def compares_outputs(self) -> bool:
        """The page returns its inputs and outputs: the native LiteRT run gets the same inputs."""
        return self.group == "tflite"


def _cases(*rows: PerfCase) -> dict[str, PerfCase]:
    return {c.name: c for c in rows}


TFLITE = ("selfie_segmentation", "face_detection_short_range", "face_landmark", "hand_landmark_lite",
          "pose_detection")
CASES: dict[str, PerfCase] = _cases(
    PerfCase("mobilenetv2", "model"),
    # one graph over both cores: split (polyfill) and unsplit (polyfill-unsplit) in the same page, interleaved
    PerfCase("mobilenetv2_b4", "model", 0.5, baseline=False, options={"split": True}),
    *(PerfCase(k, "kernel", 2.0) for k in ("matmul512", "conv3x3_64", "depthwise3x3_144", "relu", "sigmoid", "add")),
    PerfCase("chain1", "chain", 2.0, startup=True),
    PerfCase("chain500", "chain", 2.0),
    *(PerfCase(t, "tflite", baseline=False, startup=t == "selfie_segmentation") for t in TFLITE),
)
# not a graph: the small-op cases of bench/perf/dispatch.py on their own page
SMALL_OPS = "small_ops"
DEFAULT_CASES = [*CASES, SMALL_OPS]


def case_of(name: str, entry: Mapping[str, Any] | None = None) -> PerfCase:
    """The registry row of `name`, or defaults from its index entry's kind (tflite, chain, else kernel)."""
    if name in CASES:
        return CASES[name]
    kind = (entry or {}).get("kind")
    if kind == "tflite":
        return PerfCase(name, "tflite", baseline=False)
    return PerfCase(name, "chain" if kind == "chain" else "kernel", 2.0)


# --------------------------------------------------------------------------------------------------- server


class ByteCounter:
    """ASGI wrapper counting response body bytes and requests (what a page load downloads)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.reset()

    def reset(self) -> None:
        """Start counting afresh."""
        self.bytes, self.requests, self.not_modified = 0, 0, 0
        self.paths: dict[str, int] = {}

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


class PerfSession(BrowserSession):
    """A browser with the perf page (/perf/: perf.js and the bench harness bench.js) booted."""

    ready_js = "() => !!(window.perf && window.perf.ready && globalThis.webnnBench)"

    def __init__(self, *args: Any, page_path: str = PAGE, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.page_path = page_path

    def perf(self, js: str, arg: Any = None) -> Any:
        """page.evaluate on window.perf; Playwright errors propagate (the caller records them)."""
        return self.page.evaluate(js, arg)


class PerfWebDriverSession(WebDriverSession):
    """The perf page in a WebDriver browser (WebKitGTK here): the same cases, the same page-side timing."""

    ready_js = PerfSession.ready_js

    def __init__(self, target: Target, server_url: str, *, page_path: str = PAGE, timeout_ms: int) -> None:
        super().__init__(target, server_url, served=None, timeout_ms=timeout_ms)
        self.page_path = page_path

    def perf(self, js: str, arg: Any = None) -> Any:
        """page.evaluate on window.perf; errors propagate (the caller records them)."""
        return self.page.evaluate(js, arg)


def webdriver_startup(base: str, counter: ByteCounter, case: str) -> dict[str, Any]:
    """startup() in WebKitGTK over WebDriver: a first window of a new session (its profile new, unless the browser
    keeps automation profiles), then a second window of the same session (its caches warm)."""
    out: dict[str, Any] = {"case": case}
    with webkitgtk_session() as driver:
        for label in ("cold", "warm"):
            out[label] = _startup_page(lambda: WebDriverPage.new_window(driver, PAGE_TIMEOUT_MS), base, counter, case)
    return out


def log(msg: str) -> None:
    """Progress on stderr (stdout carries the summary)."""
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ measuring


@dataclass
class PerfOptions:
    """What to measure (the command line's knobs)."""

    browsers: list[str]
    cases: list[str]
    reps: int = 10
    seconds: float = 90
    baseline: bool = False
    memory_runs: int = 1000
    skip_startup: bool = False
    skip_node: bool = False
    skip_transfer: bool = False
    network_profiles: str = network.DEFAULT_PROFILES
    network_rounds: int = 1
    skip_litert: bool = False
    skip_memory: bool = False
    regen: bool = False
    headed: bool = False


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:2000]


def case_result(target: Target, version: str, case: PerfCase, raw: Mapping[str, Any],
                variant_of_polyfill: str = "default") -> list[res.Result]:
    """perf.run's answer as result lines: one per implementation, the polyfill's with its ratios to the peers."""
    impls = raw.get("impls", {})
    peers = {k: s["median"] for k, s in impls.items() if k != POLYFILL and s.get("median")}
    out = []
    for name, s in impls.items():
        impl, variant = impl_of(name)
        if impl == POLYFILL:
            variant = variant_of_polyfill
        r = res.Result(case=case.name, implementation=impl, variant=variant, status=res.PASS,
                       browser=target.browser, browser_version=version, target=target.id, op=case.group,
                       model=case.name if case.group in ("model", "tflite") else None, source="perf")
        r.timings = {"median_ms": s["median"], "min_ms": s["min"], "runs": s["runs"], "times_ms": s.get("times", [])}
        if name == POLYFILL:
            r.timings.update(build_ms=raw.get("buildMs"), builder_ms=raw.get("builderMs"))
            mine = s.get("median")
            r.metrics = {"ratio": {page_name(*impl_of(k)): mine / v for k, v in peers.items() if mine}}
            if raw.get("split"):
                r.metrics["split"] = raw["split"]
            agree = raw.get("agreement")
            if agree:
                r.metrics["agreement"] = agree
                r.max_abs = max(float(a["maxAbs"]) for a in agree.values())
                r.expected = "wasm:1-thread"
        out.append(r)
    return out


def error_result(target: Target, version: str, case: PerfCase, error: str, variant: str = "default") -> res.Result:
    """A case that failed in the page: reported, the bench goes on."""
    return res.Result(case=case.name, implementation=POLYFILL, variant=variant, status=res.ERROR,
                      browser=target.browser, browser_version=version, target=target.id, op=case.group,
                      source="perf", errors=[error])


def run_cases(session: PerfSession | PerfWebDriverSession, cases: Sequence[PerfCase], opts: PerfOptions,
              writer: res.RunWriter, *, baseline: bool = False) -> dict[str, dict[str, Any]]:
    """Time each case in the session's page; write result lines.  Returns the raw answers (the TFLite cases'
    inputs and outputs go to the LiteRT comparison, not to the run directory)."""
    raws: dict[str, dict[str, Any]] = {}
    target = session.target
    for case in cases:
        if baseline and not case.baseline:
            continue
        reps = max(1, round(opts.reps * case.reps_factor))
        run_opts: dict[str, Any] = {"reps": reps, "warmup": 2, "seconds": opts.seconds,
                                    "returnOutputs": case.compares_outputs, **case.options}
        if baseline:  # the polyfill alone, fewer runs: the "before" column
            run_opts.update(reps=max(3, opts.reps // 2), warmup=1, threads=[], returnOutputs=False)
        log(f"{target.id}: {case.name}" + (" (baseline: compiler, C kernels and BLAS off)" if baseline else ""))
        try:
            raw = session.perf("([n, o]) => perf.run(n, o)", [case.name, run_opts])
            session.perf("(n) => perf.destroy(n)", case.name)
        except Exception as e:  # noqa: BLE001 - a failing case is reported, the bench goes on
            error = _error_text(e)
            log(f"{target.id}: {case.name} failed: {error[:300]}")
            writer.result(error_result(target, session.version, case, error, "baseline" if baseline else "default"))
            continue
        raws[case.name] = raw
        for r in case_result(target, session.version, case, raw, "baseline" if baseline else "default"):
            writer.result(r)
    return raws


def _playwright_page(context: Any) -> Callable[[], Any]:
    """A new page of `context` with the visit's timeout, for _startup_page."""
    def open_page() -> Any:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        return page

    return open_page


def _startup_page(open_page: Callable[[], Any], base: str, counter: ByteCounter, case: str) -> dict[str, Any]:
    """One visit to a built graph of `case` in a page from open_page() (Playwright's or a WebDriver window)."""
    settled = settle()  # the browser just launched (or the last visit's background work): see bench/perf/settle.py
    page = open_page()
    counter.reset()
    t0 = time.perf_counter()
    page.goto(f"{base}{PAGE}")
    page.wait_for_function("() => window.perf && window.perf.ready")
    out = dict(page.evaluate("(name) => perf.startup(name)", case))
    out["wallMs"] = (time.perf_counter() - t0) * 1e3
    out["settledMs"] = settled * 1e3
    out["bytes"], out["requests"], out["notModified"] = counter.bytes, counter.requests, counter.not_modified
    out["largest"] = dict(sorted(counter.paths.items(), key=lambda kv: -kv[1])[:6])
    settle()  # its background stores (site-packages entries, a fresh snapshot) done before it closes
    page.close()
    return out


def startup(pw: Any, target: Target, browser: Any, base: str, counter: ByteCounter, case: str) -> dict[str, Any]:
    """Cold (empty profile) then warm (the same profile again: HTTP cache, compiled-code cache) page loads up to
    a built graph of `case`.  Chromium gets a real on-disk profile, restarted for the warm visit (a throwaway
    context's in-memory cache skips files as large as pyodide.asm.wasm); Firefox a fresh context, whose cache
    keeps them."""
    from web.browsers import launch_args, native_chromium_launch_args

    out: dict[str, Any] = {"case": case}
    if target.browser == "chromium" and not target.remote:
        kw = native_chromium_launch_args() if target.id != "chromium" else launch_args("chromium")
        with tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
            for label in ("cold", "warm"):
                context = pw.chromium.launch_persistent_context(profile, **kw)
                try:
                    out[label] = _startup_page(_playwright_page(context), base, counter, case)
                finally:
                    context.close()
        return out
    context = browser.new_context()
    try:
        for label in ("cold", "warm"):
            out[label] = _startup_page(_playwright_page(context), base, counter, case)
    finally:
        context.close()
    return out


def small_ops(browser: Any, base: str, target: str) -> dict[str, Any]:
    """The small-op cases (bench/perf/dispatch.py, on its own clients page): the encoder through ORT's WebNN EP
    vs its WASM EP, the 1-op round trip, a second worker's cost, two contexts at once."""
    return dict(dispatch.run_small_ops(browser, base, lambda m: log(f"{target}: {m}")))


def litert(index: Mapping[str, Any], page_runs: Mapping[str, Mapping[str, Any]], reps: int) -> dict[str, Any]:
    """The TFLite models in native LiteRT (XNNPACK, 1 thread) on the page's inputs; outputs compared.
    `page_runs`: target -> case -> perf.run's answer (with inputs and outputs)."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter  # type: ignore[import-untyped]

    out: dict[str, Any] = {}
    for case in (c for c, e in index.items() if e.get("kind") == "tflite"):
        entry = index[case]
        with_inputs = [r[case] for r in page_runs.values() if r.get(case, {}).get("inputs")]
        if not with_inputs or "tflite" not in entry:
            continue
        it = Interpreter(model_path=entry["tflite"], num_threads=1)
        it.allocate_tensors()
        feeds = [np.frombuffer(base64.b64decode(with_inputs[0]["inputs"][n]), np.float32).reshape(d["shape"])
                 for n, d in entry["inputs"].items()]
        times, outs = [], []
        for i in range(reps + 3):
            t0 = time.perf_counter()
            for d, x in zip(it.get_input_details(), feeds, strict=True):
                it.set_tensor(d["index"], x)
            it.invoke()
            outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
        agree = {}
        for target, runs in page_runs.items():
            got_outputs = runs.get(case, {}).get("outputs")
            if not got_outputs:
                continue
            errs = []
            for n, want in zip(entry["outputs"], outs, strict=False):
                got = np.frombuffer(base64.b64decode(got_outputs[n]), np.float32)
                want = want.reshape(-1).astype(np.float32)
                errs.append(float(np.abs(got - want).max() / (np.abs(want).max() or 1)) if got.size == want.size
                            else float("nan"))
            agree[target] = max(errs)
        out[case] = {"median": statistics.median(times), "min": min(times), "runs": len(times),
                     "relativeError": agree}
    return out


def pyodide_node(model_dir: Path, memory_runs: int) -> dict[str, Any]:
    """Executor overhead and MobileNetV2 memory inside Pyodide under Node (the worker's engine, no page)."""
    root = Settings.from_env().repo_root
    node = subprocess.run(["node", str(root / "scripts" / "bench_pyodide.mjs"), str(model_dir), str(memory_runs)],
                          capture_output=True, text=True, cwd=root, timeout=7200, check=False)
    lines = [ln for ln in node.stdout.splitlines() if ln.startswith("{")]
    if node.returncode != 0 or not lines:
        return {"error": (node.stderr or node.stdout)[-2000:]}
    return dict(json.loads(lines[-1]))


# ---------------------------------------------------------------------------------------------------- a run


def models(regen: bool = False) -> tuple[Path, dict[str, Any]]:
    """bench/perf/models.py's output directory and index, generated when missing (or with regen)."""
    model_dir = Path(bench_models.DEFAULT_OUT)
    if regen or not bench_models.is_current(model_dir):
        log(f"generating the benchmark graphs (bench/perf/models.py) into {model_dir}")
        bench_models.generate(model_dir)
    return model_dir, dict(json.loads((model_dir / "index.json").read_text()))


@contextmanager
def open_playwright() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


def run(opts: PerfOptions, out: Path, command: str) -> Path:
    """One perf run into a new run directory under `out`; returns the directory (report.html written)."""

    model_dir, index = models(opts.regen)
    chosen = []
    for name in opts.cases:
        if name == SMALL_OPS:
            continue
        if name in index:
            chosen.append(case_of(name, index[name]))
        else:
            log(f"{name}: not among the generated graphs ({model_dir / 'index.json'}), skipped")
    # startup builds its own graphs whatever --cases says (as make bench always did)
    startup_cases = [c for c in CASES.values() if c.startup and c.name in index]
    targets = [local_target(b) for b in opts.browsers]
    run_dir = out / res.new_run_id()
    started = res.now_iso()
    writer = res.RunWriter(run_dir)
    res.write_meta(run_dir, {"id": run_dir.name, "kind": "perf", "schema": PERF_SCHEMA, "started": started,
                             "runner": "perf", "command": command,
                             "options": asdict(opts)})
    log(f"{len(chosen)} cases x {len(targets)} browser(s); run directory {run_dir}")
    page_runs: dict[str, dict[str, Any]] = {}
    repo_root = Settings.from_env().repo_root
    counter: ByteCounter | None = None

    def wrap(app: Any) -> ByteCounter:
        nonlocal counter
        counter = ByteCounter(app)
        return counter

    with dev_server(wrap=wrap) as base, open_playwright() as pw:
        assert counter is not None
        for target in targets:
            over_webdriver = webkit_over_webdriver(target.browser, pw)
            session: PerfSession | PerfWebDriverSession
            if over_webdriver:
                session = PerfWebDriverSession(target, base, timeout_ms=PAGE_TIMEOUT_MS)
            else:
                session = PerfSession(pw, target, base, launch_base={"headless": not opts.headed},
                                      native_webnn=target.browser == "chromium", timeout_ms=PAGE_TIMEOUT_MS)
            try:
                log(f"{target.id}: starting (browser, perf page, polyfill boot)")
                session.start()
                probe = session.probe(["default"])
                writer.probe(probe.to_json())
                print(probe.summary(), flush=True)
                # the probe's contexts would hold the first worker, so perf.js's own context would start a
                # second one and be timed there (and workerStats would report the idle first one)
                session.perf("() => webnnBench.release()")
                page_runs[target.id] = run_cases(session, chosen, opts, writer)
                writer.measure("worker", target.id, {"stats": session.perf("webnnPolyfill.workerStats()"),
                                                     "pageErrors": session.page_errors})
                if SMALL_OPS in opts.cases and over_webdriver:
                    writer.measure("unavailable", f"{target.id}-smallOps",
                                   {"reason": "the small-op cases open pages through Playwright"})
                elif SMALL_OPS in opts.cases:
                    writer.measure("smallOps", target.id, small_ops(session.browser, base, target.id))
                if opts.baseline:
                    session.page_path = PAGE + BASELINE_QUERY
                    session.open_page()
                    run_cases(session, chosen, opts, writer, baseline=True)
                if not opts.skip_startup:
                    for case in startup_cases:
                        log(f"{target.id}: startup with {case.name}")
                        data = (webdriver_startup(base, counter, case.name) if over_webdriver
                                else startup(pw, target, session.browser, base, counter, case.name))
                        writer.measure("startup", target.id, data)
            except BrowserUnavailable as e:
                log(f"{target.id}: not installed here: {e}")
                writer.measure("unavailable", target.id, {"reason": str(e)})
            except Exception as e:  # noqa: BLE001 - the other browsers and measurements still run
                log(f"{target.id}: {_error_text(e)[:300]}")
                writer.measure("error", target.id, {"error": _error_text(e)})
            finally:
                session.close()
        if not opts.skip_transfer:
            log(f"start-up over {opts.network_profiles} from make dist's package (bench/perf/network.py)")
            browsers = [t.browser for t in targets if not t.remote and t.id in ("chromium", "firefox", "webkit")]
            try:
                profiles = [parse_profile(p) for p in opts.network_profiles.split(",") if p]
                writer.measure("network", "", network.measure(pw, browsers, repo_root / "dist", profiles,
                                                              opts.network_rounds, log))
            except (Exception, SystemExit) as e:  # noqa: BLE001 - no dist/ is a reported state
                writer.measure("network", "", {"error": _error_text(e)})
        if not opts.skip_memory:
            log("the memory a page pays, a browser per scenario (bench/perf/memory.py)")
            writer.measure("memory", "", memory.measure(pw, [t.browser for t in targets if not t.remote], base,
                                                        log=log))
    if not opts.skip_litert and any(c.group == "tflite" for c in chosen):
        try:
            writer.measure("litert", "cpython", litert(index, page_runs, opts.reps * 3))
        except ImportError as e:
            writer.measure("litert", "cpython", {"error": _error_text(e)})
    if not opts.skip_node:
        log(f"Pyodide under Node: executor overhead and {opts.memory_runs} MobileNetV2 runs")
        writer.measure("node", "node", pyodide_node(model_dir, opts.memory_runs))
    write_report(run_dir, {"finished": res.now_iso()})
    return run_dir


# --------------------------------------------------------------------------------------------- command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The perf mode's options."""
    p.add_argument("--browsers", default="chromium,firefox,webkit",
                   help="comma-separated: chromium, firefox, webkit, chromium-npm (default chromium,firefox,webkit; "
                   "webkit is WebKitGTK through WebDriver where Playwright has no WebKit)")
    p.add_argument("--cases", default=",".join(DEFAULT_CASES),
                   help=f"comma-separated graphs of bench/perf/models.py, and {SMALL_OPS} (the encoder via ORT, "
                        "the 1-op round trip, two contexts: bench/perf/dispatch.py); "
                        f"default: {','.join(DEFAULT_CASES)}")
    p.add_argument("--reps", type=int, default=10, help="timed runs per implementation (kernels: twice this)")
    p.add_argument("--seconds", type=float, default=90, help="time limit per case and implementation set")
    p.add_argument("--baseline", action="store_true",
                   help="also time the polyfill with the compiler, the C kernels and BLAS off")
    p.add_argument("--memory-runs", type=int, default=1000, help="MobileNetV2 runs under Node (memory)")
    p.add_argument("--skip-startup", action="store_true")
    p.add_argument("--skip-node", action="store_true")
    p.add_argument("--skip-transfer", action="store_true",
                   help="skip cold and warm start-up from dist/ over network profiles (python -m bench network)")
    p.add_argument("--network-profiles", default=network.DEFAULT_PROFILES,
                   help=f"the network bench's profiles (default {network.DEFAULT_PROFILES}; RATE-RTT accepted)")
    p.add_argument("--network-rounds", type=int, default=1, help="the network bench's rounds (median)")
    p.add_argument("--skip-litert", action="store_true", help="skip native LiteRT on the TFLite models")
    p.add_argument("--skip-memory", action="store_true", help="skip the memory a page pays (bench/perf/memory.py)")
    p.add_argument("--regen", action="store_true", help="regenerate the benchmark graphs")
    p.add_argument("--headed", action="store_true", help="show the browsers")
    p.add_argument("--out", help="directory of run directories (default $PYODIDE_WEBNN_REPORTS or ./reports)")


def cmd_perf(args: argparse.Namespace) -> int:
    """Run the performance bench; print the summary; exit 0 (a failing case is a reported result)."""

    opts = PerfOptions(
        browsers=[b for b in args.browsers.split(",") if b], cases=[c for c in args.cases.split(",") if c],
        reps=args.reps, seconds=args.seconds, baseline=args.baseline, memory_runs=args.memory_runs,
        skip_startup=args.skip_startup, skip_node=args.skip_node, skip_transfer=args.skip_transfer,
        network_profiles=args.network_profiles, network_rounds=args.network_rounds,
        skip_litert=args.skip_litert, skip_memory=args.skip_memory, regen=args.regen, headed=args.headed)
    out = Path(args.out or Settings.from_env().reports_dir)
    command = "python -m bench " + shlex.join(getattr(args, "argv", ["perf"]))
    t0 = time.perf_counter()
    run_dir = run(opts, out, command)
    print("\n".join(summary_lines(*load_run(run_dir))))
    print(f"\nbench: done in {time.perf_counter() - t0:.0f} s; run {run_dir.name}: {run_dir / res.REPORT} "
          f"(also at /reports/{run_dir.name}/ on the dev server)")
    return 0

