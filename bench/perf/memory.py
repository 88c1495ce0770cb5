"""The memory a page pays: each scenario in a browser launched for it alone, measured from outside the polyfill.

    python -m bench memory [--browsers chromium,firefox,webkit] [--rounds 1] [--json memory.json]

Scenarios (SCENARIOS), each in a fresh browser and a fresh page of the dev server (cross-origin isolated):
`blank` (a page with nothing on it), `polyfill-idle` (the polyfill's context, one 4-element graph computed),
`polyfill-mobilenetv2` (MobileNetV2 through onnxruntime-web's WebNN EP on the polyfill, run once, session kept
open) and `wasm-mobilenetv2` (the same model through onnxruntime-web's WASM EP, 1 thread, in the same page: the
clients page, which carries the polyfill's script without starting it).  Each is measured once the machine is
quiet again (bench/perf/settle.py), so the polyfill's background stores for the next visit are done.

Methods, per browser (`method` in the result says which gave each number):
- `uasm`: Chromium's `performance.measureUserAgentSpecificMemory()` (cross-origin isolation; launched with
  ForceEagerMeasureMemory for an immediate answer, after a garbage collection), split by attribution into the
  page (Window) and its dedicated workers;
- `pss`: every browser: the proportional set size (Linux's /proc/<pid>/smaps_rollup) of the browser's processes:
  the page's (the largest content process: Chromium's renderer, Firefox's web content, WebKit's WebKitWebProcess,
  where its dedicated workers run too), all content processes, all processes; the blank page's subtracted.  Firefox
  and WebKit have no API of their own for a page's memory.
The polyfill's scenarios also keep `webnnPolyfill.workerStats()` (the engine's breakdown: docs/performance.md).
`make bench` runs it (bench/perf/run.py); the report shows the table and the ratios against the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.perf.settle import settle
from bench.server import dev_server
from web.browsers import launch_args, playwright_has, webkit_over_webdriver

MB = 1e6
# targets: the polyfill's context alone, and MobileNetV2 on the polyfill against the WASM EP's page
IDLE_TARGET_MB = 80.0
MOBILENET_TARGET_RATIO = 2.0
SCENARIOS = ("blank", "polyfill-idle", "polyfill-mobilenetv2", "wasm-mobilenetv2")
MODEL = {"model": "/clients/models/mobilenetv2.onnx", "shape": [1, 3, 224, 224]}
TIMEOUT_MS = 300_000
# PSS samples after a scenario: the median of a few, a short wait apart (a browser frees memory lazily)
PSS_SAMPLES, PSS_GAP_S, SETTLE_S = 3, 0.5, 2.0
SETTLE_MAX_S = 30.0  # the longest wait for a quiet machine after a scenario (bench/perf/settle.py)

PAGES = {"blank": "/perf/blank.html"}
CLIENTS_PAGE = "/clients/"
READY_JS = "() => !!window.clientsReady"

# each scenario keeps what it made in window.__memoryKeep, so nothing it holds is collected before the measure
SCENARIO_JS = {
    "blank": "() => ({})",
    "polyfill-idle": r"""async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const b = new P.MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [4]};
  const graph = await b.build({y: b.relu(b.input('x', desc))});
  const x = await ctx.createTensor({...desc, writable: true});
  const y = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(x, new Float32Array([-1, 2, -3, 4]));
  ctx.dispatch(graph, {x}, {y});
  const values = Array.from(new Float32Array(await ctx.readTensor(y)));
  window.__memoryKeep = {ctx, graph, x, y};
  return {values, stats: await P.workerStats()};
}""",
    "polyfill-mobilenetv2": r"""async ({model, shape}) => {
  const o = await clients.openOrt({model, backend: 'webnn-polyfill'});
  const feeds = o.feeds({input: {data: clients.patternInput(shape), shape}});
  const out = await o.session.run(feeds);
  window.__memoryKeep = {o, feeds, out};
  return {partitions: o.partitions, stats: await webnnPolyfill.workerStats()};
}""",
    "wasm-mobilenetv2": r"""async ({model, shape}) => {
  const o = await clients.openOrt({model, backend: 'wasm'});
  const feeds = o.feeds({input: {data: clients.patternInput(shape), shape}});
  const out = await o.session.run(feeds);
  window.__memoryKeep = {o, feeds, out};
  return {};
}""",
}

# Chromium's own measure, split by attribution: the page (Window) and its dedicated workers; `other` is memory the
# browser could not attribute to either (shared).  Collected first where the page may (--expose-gc).
UASM_JS = r"""async () => {
  if (typeof gc === 'function') gc();
  const m = await performance.measureUserAgentSpecificMemory();
  const out = {bytes: m.bytes, page: 0, worker: 0, other: 0, workers: 0};
  for (const e of m.breakdown) {
    const scopes = (e.attribution || []).map((a) => a.scope);
    if (scopes.includes('DedicatedWorkerGlobalScope')) { out.worker += e.bytes; out.workers += 1; }
    else if (scopes.includes('Window')) out.page += e.bytes;
    else out.other += e.bytes;
  }
  return out;
}"""


# ------------------------------------------------------------------------------------------- the OS's view


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """Every live process below `root` (this process: Playwright's driver and WebKitWebDriver are its children)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            parent = _parent(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []
    # Chromium's zygote children rewrite their command line as one string
    return argv[0].split(" ") if len(argv) == 1 else argv


def pss_bytes(pid: int) -> int:
    """The process's proportional set size (shared pages divided among their users), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def process_kind(browser: str, argv: Sequence[str]) -> str | None:
    """'content' (where pages and their workers run), 'browser' (the browser's other processes) or None (not the
    browser's: Playwright's driver, WebKitWebDriver, Xvfb)."""
    if not argv:
        return None
    exe = os.path.basename(argv[0])
    if browser == "chromium" and exe in ("chromium", "chrome", "headless_shell", "chrome-headless-shell"):
        return "content" if "--type=renderer" in argv else "browser"
    if browser == "firefox" and exe.startswith("firefox"):
        return "content" if "-contentproc" in argv and argv[-1] == "tab" else "browser"
    if browser == "webkit":
        if exe == "WebKitWebProcess":
            return "content"
        if exe.startswith("WebKit") and exe != "WebKitWebDriver" or exe == "MiniBrowser":
            return "browser"
    return None


def browser_pss(browser: str) -> dict[str, int]:
    """PSS in bytes of the browser's processes below this one: {page: the largest content process (the page's and
    its workers'), content: all content processes (spare and internal ones too), all, processes}."""
    out = {"page": 0, "content": 0, "all": 0, "processes": 0}
    for pid in descendants(os.getpid()):
        kind = process_kind(browser, _cmdline(pid))
        if kind is None:
            continue
        n = pss_bytes(pid)
        out["all"] += n
        out["processes"] += 1
        if kind == "content":
            out["content"] += n
            out["page"] = max(out["page"], n)
    return out


def sampled_pss(browser: str) -> dict[str, int]:
    """browser_pss after SETTLE_S, the median of PSS_SAMPLES samples PSS_GAP_S apart."""
    time.sleep(SETTLE_S)
    samples = []
    for i in range(PSS_SAMPLES):
        if i:
            time.sleep(PSS_GAP_S)
        samples.append(browser_pss(browser))
    return {k: int(statistics.median(s[k] for s in samples)) for k in samples[0]}


# ------------------------------------------------------------------------------------------------ scenarios


@contextmanager
def _playwright_page(pw: Any, browser: str) -> Iterator[Any]:
    extra = {"args": ["--enable-blink-features=ForceEagerMeasureMemory", "--js-flags=--expose-gc"]} \
        if browser == "chromium" else {}
    owner = getattr(pw, browser).launch(**launch_args(browser, base={"headless": True, **extra}))
    try:
        page = owner.new_context().new_page()
        page.set_default_timeout(TIMEOUT_MS)
        yield page
    finally:
        owner.close()


@contextmanager
def _webdriver_page() -> Iterator[Any]:
    from web.webdriver import WebDriverPage, webkitgtk_session

    with webkitgtk_session() as driver:
        yield WebDriverPage(driver, TIMEOUT_MS)


def scenario(open_page: Callable[[], Any], browser: str, base: str, name: str) -> dict[str, Any]:
    """One scenario in a browser launched for it: its own answer, Chromium's measure, the processes' PSS."""
    with open_page() as page:
        page.goto(base + PAGES.get(name, CLIENTS_PAGE))
        if name not in PAGES:
            page.wait_for_function(READY_JS)
        t0 = time.perf_counter()
        answer = page.evaluate(SCENARIO_JS[name], MODEL) or {}
        out: dict[str, Any] = {"ms": round((time.perf_counter() - t0) * 1e3), **answer}
        # the page at rest: the polyfill's background stores for the next visit (a snapshot, site-packages) done
        out["settledMs"] = round(settle(SETTLE_MAX_S) * 1e3)
        if browser == "chromium":
            out["uasm"] = page.evaluate(UASM_JS)
        out["pss"] = sampled_pss(browser)
        if "stats" in answer:  # the engine's breakdown after the measures (the same state)
            out["stats"] = page.evaluate("() => webnnPolyfill.workerStats()")
    return out


def measure_browser(pw: Any, browser: str, base: str, rounds: int = 1, log: Callable[[str], None] = print,
                    scenarios: Sequence[str] = SCENARIOS) -> dict[str, Any]:
    """Every scenario `rounds` times in `browser` (a fresh browser each), rounds interleaved; the median round per
    scenario, and the derived table (summarize)."""
    if browser == "webkit" and webkit_over_webdriver(browser, pw):
        opener: Callable[[], Any] = _webdriver_page
    elif playwright_has(getattr(pw, browser)):
        opener = lambda: _playwright_page(pw, browser)  # noqa: E731 - a one-line opener
    else:
        return {"error": f"{browser}: not installed here"}
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in scenarios}
    for r in range(rounds):
        for name in scenarios:
            log(f"memory: {browser} {name} (round {r + 1}/{rounds})")
            runs[name].append(scenario(opener, browser, base, name))
    out: dict[str, Any] = {"rounds": rounds, "scenarios": {}}
    for name, got in runs.items():
        key = (lambda g: g["uasm"]["bytes"]) if browser == "chromium" else (lambda g: g["pss"]["page"])
        ordered = sorted(got, key=key)
        out["scenarios"][name] = ordered[len(ordered) // 2]
    out["table"] = summarize(browser, out["scenarios"])
    return out


def summarize(browser: str, scenarios: dict[str, Any]) -> dict[str, Any]:
    """MB per scenario and method, PSS less the blank page's; the polyfill / WASM EP ratio and the targets."""
    blank = scenarios.get("blank", {}).get("pss", {})
    rows: dict[str, Any] = {}
    for name, got in scenarios.items():
        row: dict[str, Any] = {}
        if "uasm" in got:
            u = got["uasm"]
            row["uasm"] = {"total": u["bytes"] / MB, "page": u["page"] / MB, "worker": u["worker"] / MB,
                           "other": u["other"] / MB}
        p = got.get("pss", {})
        if p:
            row["pss"] = {k: (p[k] - blank.get(k, 0)) / MB for k in ("page", "content", "all") if k in p}
        rows[name] = row
    method = "uasm" if browser == "chromium" else "pss"
    # PSS: the page's own process (the other processes move by tens of MB between launches: spare renderers, caches)
    total = "total" if method == "uasm" else "page"

    def mb(name: str) -> float | None:
        v = rows.get(name, {}).get(method, {}).get(total)
        return None if v is None else float(v)

    idle, poly, wasm = mb("polyfill-idle"), mb("polyfill-mobilenetv2"), mb("wasm-mobilenetv2")
    return {"method": method, "rows": rows, "idleMB": idle, "idleTargetMB": IDLE_TARGET_MB,
            "mobilenetRatio": poly / wasm if poly and wasm else None, "mobilenetTargetRatio": MOBILENET_TARGET_RATIO}


def measure(pw: Any, browsers: Sequence[str], base: str, rounds: int = 1, log: Callable[[str], None] = print,
            scenarios: Sequence[str] = SCENARIOS) -> dict[str, Any]:
    """Every browser's scenarios (a browser that cannot run is an `error` entry, the others go on)."""
    out: dict[str, Any] = {}
    for b in dict.fromkeys(browsers):
        try:
            out[b] = measure_browser(pw, b, base, rounds, log, scenarios)
        except Exception as e:  # noqa: BLE001 - one browser's failure is a reported state
            out[b] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    return out


METHOD_TEXT = {"uasm": "measureUserAgentSpecificMemory (page + workers)",
               "pss": "PSS of the page's content process less the blank page's"}


def summary(result: dict[str, Any]) -> list[str]:
    """Report lines: MB per scenario and browser, the method, the ratios against the targets."""
    lines = [f"\n== memory a page pays (MB; targets: the polyfill's context <= {IDLE_TARGET_MB:.0f} MB, "
             f"MobileNetV2 on the polyfill <= {MOBILENET_TARGET_RATIO:.0f}x the WASM EP's page)"]
    for browser, r in result.items():
        if "error" in r:
            lines.append(f"{browser:9} error: {r['error'][:200]}")
            continue
        t = r["table"]
        lines.append(f"{browser} ({METHOD_TEXT[t['method']]}; rounds {r['rounds']}):")
        for name, row in t["rows"].items():
            parts = []
            if "uasm" in row:
                u = row["uasm"]
                parts.append(f"uasm {u['total']:6.1f} (page {u['page']:5.1f}, workers {u['worker']:5.1f})")
            if "pss" in row:
                p = row["pss"]
                parts.append(f"PSS-blank: page process {p.get('page', 0):6.1f}, content {p['content']:6.1f}, "
                             f"all {p['all']:6.1f}")
            stats = r["scenarios"][name].get("stats")
            if stats and "engineBytes" in stats:
                parts.append(f"worker wasm {stats['wasmBytes'] / MB:.1f} (engine {stats['engineBytes'] / MB:.1f}), "
                             f"page Pyodide {stats.get('pageHeapBytes', 0) / MB:.1f}")
            lines.append(f"  {name:22} " + "; ".join(parts))
        ratio = t["mobilenetRatio"]
        lines.append(f"  context alone {t['idleMB']:.1f} MB (target <= {IDLE_TARGET_MB:.0f}); MobileNetV2 polyfill / "
                     f"WASM EP {ratio:.2f}x (target <= {MOBILENET_TARGET_RATIO:.1f})" if ratio and t["idleMB"]
                     else "  (ratios incomplete)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench memory: the scenarios alone, printed (and written with --json)."""
    ap = argparse.ArgumentParser(prog="python -m bench memory", description=__doc__.splitlines()[0])
    ap.add_argument("--browsers", default="chromium,firefox,webkit")
    ap.add_argument("--rounds", type=int, default=1, help="each scenario this many times (median round)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with dev_server() as base, sync_playwright() as pw:
        result = measure(pw, [b for b in args.browsers.split(",") if b], base, args.rounds,
                         lambda m: print(f"bench: {m}", file=sys.stderr, flush=True),
                         [s for s in args.scenarios.split(",") if s])
    print("\n".join(summary(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0
