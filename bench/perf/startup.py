#!/usr/bin/env python3
"""Startup only, by stage: script tag to a built graph (`bench.perf.run`'s startup procedure: Chromium on an
on-disk profile, cold then restarted warm; Firefox cold then warm in one context), with page query variants
interleaved round by round, so a before/after compares like with like on a shared machine.

    python -m bench startup --browsers chromium,firefox --rounds 3 --variants ",?unpack=0"

Each variant is a query string for the /perf/ page (its switches pass to the polyfill, see
bench/pages/perf/index.html; "" is the default build); "other:<query>" loads it from a second dev server whose
repository root is --other-root (e.g. an export of another branch, built: `git archive main | tar -x -C DIR`, then
its polyfill bundle), the before side of a before/after in the same rounds (the polyfill, Pyodide, the snapshots
and the graphs come from DIR; the bench page itself, bench/pages/perf, from this tree).  Prints one line per visit
(time to a built graph and the polyfill's bootTimings stage times), then the median and minimum per browser x
variant x visit.  A visit's "asked" is when the page asked for its context (after its own scripts: the polyfill
boots at the first createContext()), "context" when it had it, both from the script tag.  Each visit starts once
the machine is quiet (`bench.perf.settle`: a Chromium just launched keeps both cores busy for its first
0.6 s) and closes once it is quiet again (the polyfill's background stores done: a Firefox visit closed at once
had often not stored NumPy's site-packages entry, and the next one unzipped NumPy); "settled" is how long the
first wait took, and --no-settle visits and closes at once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.perf.run import PAGE, PAGE_TIMEOUT_MS, models, open_playwright
from bench.perf.settle import settle
from bench.server import dev_server, free_port, serve_app
from web.browsers import launch_args
from web.settings import Settings


def visit(context: Any, url: str, case: str, cpu_of: str = "", quiet: bool = True) -> dict[str, Any]:
    """perf.startup(case) on a new page of context, once the machine is quiet (bench.perf.settle: a browser just
    launched is busy with its own start), and closed once it is quiet again, unless not quiet; with cpu_of
    (Chromium's profile folder), also the browser's CPU time so far (read before the page closes: its renderer
    process exits with it)."""
    settled = settle() if quiet else 0.0
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(url)
    page.wait_for_function("() => window.perf && window.perf.ready")
    out = dict(page.evaluate("(name) => perf.startup(name)", case))
    out["settledMs"] = settled * 1e3
    if quiet:
        settle()  # its background stores (the site-packages entries, a fresh snapshot) done before it closes
    if cpu_of:
        out["cpu"] = cpu_ms(cpu_of)
    page.close()
    return out


def cpu_ms(marker: str) -> dict[str, float]:
    """CPU time (user + system, ms) of the processes whose command line holds `marker` (Chromium's profile folder)
    and of all their descendants so far, in all (`total`) and per thread name (`DedicatedWorker`: the polyfill's
    worker, `CrRendererMain`: the page, `ThreadPoolForeg`: among others V8's background compiles): the work of one
    visit, which the shared machine's load does not move as it moves the wall clock."""
    procs: dict[int, int] = {}  # pid -> ppid
    threads: dict[int, list[tuple[str, float]]] = {}  # pid -> [(thread name, cpu ms)]
    roots = set()
    tick = 1000 / os.sysconf("SC_CLK_TCK")

    def stat(path: Path) -> tuple[str, list[str]]:
        text = path.read_text()
        return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()

    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            _, fields = stat(entry / "stat")
            cmdline = (entry / "cmdline").read_bytes()
            tasks = []
            for task in (entry / "task").iterdir():
                name, tf = stat(task / "stat")
                tasks.append((name, (int(tf[11]) + int(tf[12])) * tick))
        except (OSError, ValueError):
            continue
        procs[int(entry.name)] = int(fields[1])
        threads[int(entry.name)] = tasks
        if marker.encode() in cmdline:
            roots.add(int(entry.name))
    out: dict[str, float] = {"total": 0.0}
    for pid in procs:
        p, seen = pid, 0
        while p and p not in roots and seen < 64:
            p, seen = procs.get(p, 0), seen + 1
        if p in roots:
            for name, ms in threads[pid]:
                out["total"] += ms
                key = name.split(" ")[0].rstrip("0123456789")
                out[key] = out.get(key, 0.0) + ms
    return out


def asked(row: dict[str, Any]) -> str:
    """When the page asked for its context and when it had it (ms from the script tag), and how long the visit
    waited for a quiet machine before it began."""
    return f"(asked {row.get('calledMs', 0):.0f}, context {row['contextMs']:.0f}) settled {row.get('settledMs', 0):.0f}"


def stages(bt: dict[str, Any]) -> str:
    w = bt.get("worker") or {}
    p = bt.get("page") or {}
    # (the worker's restore: its snapshot read, then pyodide.asm.js's module factory's steps, relink.js markSteps)
    keys = ("script", "module", "snapshotRead", "snapshotFetched", "factoryAt", "instantiateAt", "instantiatedAt",
            "preRunAt", "initializedAt", "restoreAt", "restoredAt", "runtime", "siteOpen", "siteRead", "siteChecked",
            "numpy", "wheels", "packages", "numpyImport", "core")
    ws = " ".join(f"{k}={w[k]}" for k in keys if k in w)
    ps = " ".join(f"{k}={p[k]}" for k in keys if k in p)
    top = " ".join(f"{k}={bt[k]}" for k in ("page-runtime", "page-core", "worker-runtime", "worker-core")
                   if k in bt)
    extra = {k: bt[k] for k in ("snapshot", "wasm", "numpy", "wheels", "siteStored") if k in bt}
    return f"worker[{ws}] page[{ps}] page-clock[{top}] {json.dumps(extra, separators=(',', ':'))}"


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench startup: start-up by stage, page variants interleaved round by round."""
    ap = argparse.ArgumentParser(prog="python -m bench startup", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--browsers", default="chromium")
    ap.add_argument("--variants", default="", help='comma-separated query strings, e.g. ",?unpack=0"')
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", default="chain1")
    ap.add_argument("--warm-visits", type=int, default=1,
                    help="warm visits after the cold one (Chromium makes a script's code cache on the second visit "
                         "and uses it from the third: 'warm2' shows that)")
    ap.add_argument("--no-settle", action="store_true",
                    help="visit at once, not once the machine is quiet (bench.perf.settle): the browser's own "
                         "start then competes with the page")
    ap.add_argument("--json", type=Path, help="write every visit's answer here")
    ap.add_argument("--other-root", type=Path, help='repository root served for "other:" variants')
    ap.add_argument("--chromium-arg", action="append", default=[],
                    help="an extra Chromium switch, e.g. --js-flags=--no-wasm-dynamic-tiering (repeatable)")
    a = ap.parse_args(argv)
    variants = a.variants.split(",")
    labels = ["cold", "warm"] + [f"warm{i + 2}" for i in range(a.warm_visits - 1)]
    models()  # the graphs (bench/perf/models.py), generated on first use
    rows: list[dict[str, Any]] = []
    env = Settings.from_env()
    other_root = (a.other_root or env.repo_root).resolve()
    other = Settings(host="127.0.0.1", port=free_port(), cache_dir=env.cache_dir, repo_root=other_root,
                     reports_dir=env.reports_dir)
    with dev_server() as here, serve_app(other) as there, open_playwright() as pw:
        for r in range(a.rounds):
            for browser in a.browsers.split(","):
                for v in variants:
                    url = f"{there}{PAGE}{v[6:]}" if v.startswith("other:") else f"{here}{PAGE}{v}"
                    if browser == "chromium":
                        with tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
                            for label in labels:
                                kw = launch_args("chromium")
                                kw["args"] = kw.get("args", []) + a.chromium_arg
                                ctx = pw.chromium.launch_persistent_context(profile, **kw)
                                try:
                                    rows.append({"round": r, "browser": browser, "variant": v, "visit": label,
                                                 **visit(ctx, url, a.case, profile, not a.no_settle)})
                                finally:
                                    ctx.close()
                                cpu = rows[-1]["cpu"]
                                print(f"{browser:8} {v or 'default':14} {label} {rows[-1]['builtMs']:7.0f} ms  "
                                      f"{asked(rows[-1])}  cpu {cpu['total']:6.0f} ms "
                                      f"(worker {cpu.get('DedicatedWorker', 0):.0f}, "
                                      f"page {cpu.get('CrRendererMain', 0):.0f}, pool "
                                      f"{cpu.get('ThreadPoolForeg', 0):.0f})  {stages(rows[-1]['bootTimings'])}",
                                      flush=True)
                    else:
                        b = getattr(pw, browser).launch(**launch_args(browser))
                        try:
                            ctx = b.new_context()
                            for label in labels:
                                rows.append({"round": r, "browser": browser, "variant": v, "visit": label,
                                             **visit(ctx, url, a.case, quiet=not a.no_settle)})
                                print(f"{browser:8} {v or 'default':14} {label} {rows[-1]['builtMs']:7.0f} ms  "
                                      f"{asked(rows[-1])}  {stages(rows[-1]['bootTimings'])}", flush=True)
                        finally:
                            b.close()
                    time.sleep(0.5)
    print("\nbuilt graph (ms): median / min over rounds")
    for browser in a.browsers.split(","):
        for v in variants:
            for label in labels:
                xs = [x["builtMs"] for x in rows if x["browser"] == browser and x["variant"] == v
                      and x["visit"] == label]
                cpu = [x["cpu"]["total"] for x in rows if x["browser"] == browser and x["variant"] == v
                       and x["visit"] == label and "cpu" in x]
                if xs:
                    print(f"{browser:8} {v or 'default':14} {label}: {statistics.median(xs):7.0f} / "
                          f"{min(xs):7.0f}  ({', '.join(f'{x:.0f}' for x in xs)})"
                          + (f"  browser CPU {statistics.median(cpu):.0f} / {min(cpu):.0f}" if cpu else ""))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0

