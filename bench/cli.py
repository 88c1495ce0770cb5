"""Command line of the comparison bench, no pytest code needed.

python -m bench run [--browser chromium --browser firefox --browser webkit] [--browser-endpoint ws://...]
                    [--webdriver-endpoint http://...#browser=safari] [--no-native-chromium]
                    [--cases wpt@1,tests/data/graphs] [--impl polyfill --impl 'native:*']
                    [--out reports] [--repeat 3] [--server URL] [--headed] [--quiet]
python -m bench probe [--browser ...] [--browser-endpoint ...] [--webdriver-endpoint ...]
python -m bench perf [--browsers chromium,firefox,webkit] [--cases mobilenetv2,matmul512,...] [--reps N] [--baseline]
                     [--memory-runs 1000] [--skip-startup] [--skip-node] [--skip-transfer] [--out reports]
python -m bench report RUN_DIR
python -m bench list [--out reports]
python -m bench startup|soak|dispatch|network|models|memory|faults|upstream [--help | OPTIONS]

`perf` is `make bench` (bench/perf/run.py): the polyfill against onnxruntime-web in the same page, startup,
LiteRT, the executor under Node; its run directory sits beside the comparison runs and is listed with them.
The other modes measure one thing on their own and print it (docs/bench.md): MODES below.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench import results as res
from bench.cases.select import select
from bench.report import fuzz as fuzz_report
from bench.run.runner import DEFAULT_IMPLS, Runner, expand_impls, plan
from bench.server import dev_server
from bench.targets import WEBDRIVER_ENDPOINT_HELP, Target, local_targets, remote_target, webdriver_target
from bench.targets.playwright import BrowserSession
from bench.targets.probe import VARIANTS
from bench.targets.sessions import open_session
from web.served_files import ServedFiles

# python -m bench MODE ARGS: the module whose main(ARGS) runs it, and what it measures
MODES = {
    "startup": ("bench.perf.startup", "start-up by stage, page variants interleaved round by round"),
    "soak": ("bench.perf.soak", "10,000 dispatches over mixed graphs: memory flat, context never lost"),
    "dispatch": ("bench.perf.dispatch", "the small-op cases alone, or against other worker switches"),
    "network": ("bench.perf.network", "cold and warm start-up from make dist's package over network profiles"),
    "models": ("bench.perf.models", "write the perf bench's graphs (build/bench-models)"),
    "memory": ("bench.perf.memory", "the memory a page pays: blank, the context, MobileNetV2 against ORT's WASM EP"),
    "upstream": ("bench.upstream", "the fuzzer's native findings, minimized, as a table of upstream bugs with "
                 "reproducers (docs/upstream-bugs.md)"),
    "faults": ("bench.faults", "the fault suite: every network and engine fault case, outcome and time per browser"),
}


def _targets(args: argparse.Namespace) -> list[Target]:
    browsers = args.browser or ([] if args.browser_endpoint or args.webdriver_endpoint else ["chromium"])
    native = not args.no_native_chromium
    return (local_targets(browsers, native_chromium=native) + [remote_target(e) for e in args.browser_endpoint]
            + [webdriver_target(e) for e in args.webdriver_endpoint])


@contextmanager
def _runner(args: argparse.Namespace, writer: res.RunWriter | None) -> Iterator[Runner]:
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack:
        served = None if args.server else ServedFiles()
        url = args.server or stack.enter_context(dev_server(wrap=served.wrap if served else None))
        pw = stack.enter_context(sync_playwright())
        base = {"headless": not args.headed}

        scripts = [Path(f).read_text(encoding="utf-8") for f in args.init_script]

        def start(target: Target) -> BrowserSession:
            print(f"  starting {target.id} (browser, bench page, polyfill boot)...", flush=True)
            return open_session(pw, target, url, served=served, launch_base=base, init_scripts=scripts)

        runner = Runner(start, writer, repeat=args.repeat)
        try:
            yield runner
        finally:
            runner.close()


def cmd_run(args: argparse.Namespace) -> int:
    """Run a selection on every implementation, write results.jsonl and report.html, print progress."""
    return execute(args)[1]


def execute(args: argparse.Namespace) -> tuple[Path, int]:
    """cmd_run's work: the run directory it wrote and the exit status."""
    from bench.report.writer import write_report
    from web.settings import Settings

    cases = select(args.cases)
    targets = _targets(args)
    items = plan(cases, targets, expand_impls(args.impl or DEFAULT_IMPLS), with_reference=not args.no_reference)
    out = Path(args.out or Settings.from_env().reports_dir)
    run_dir = out / res.new_run_id()
    started = res.now_iso()
    writer = res.RunWriter(run_dir)
    res.write_meta(
        run_dir,
        {
            "id": run_dir.name,
            "started": started,
            "runner": "cli",
            "command": " ".join(shlex.quote(a) for a in ["python -m bench", *sys.argv[1:]]),
        },
    )
    print(f"{len(cases)} cases x {len(targets)} browser(s) -> {len(items)} items; run directory {run_dir}")
    tally = dict.fromkeys(res.STATUSES, 0)
    t0 = time.perf_counter()
    with _runner(args, writer) as runner:
        for t in targets:
            try:
                print(runner.probe(t).summary(), flush=True)
            except Exception as e:  # noqa: BLE001 - reported on each of its items too
                print(f"{t.id}: cannot start: {type(e).__name__}: {e}", flush=True)
        for n, item in enumerate(items, 1):
            result, _ = runner.run(item)
            tally[result.status] += 1
            shown = result.status not in (res.UNAVAILABLE,) and (not args.quiet or result.status != res.PASS)
            if shown:
                ms = result.timings.get("median_ms")
                timing = f" {ms:.3g} ms" if isinstance(ms, (int, float)) else ""
                err = f"  {'; '.join(result.errors)[:160]}" if result.status != res.PASS else ""
                print(
                    f"[{n:>{len(str(len(items)))}}/{len(items)}] {result.status:<11} {item.id}{timing}{err}",
                    flush=True,
                )
            elif n % 50 == 0 or n == len(items):
                print(f"[{n}/{len(items)}] ...", flush=True)
    path = write_report(run_dir, {"started": started, "finished": res.now_iso()})
    if (run_dir / fuzz_report.MD_NAME).is_file():
        print(fuzz_report.console(json.loads((run_dir / fuzz_report.JSON_NAME).read_text(encoding="utf-8"))))
        print(f"fuzz counts and findings: {run_dir / fuzz_report.MD_NAME}")
    summary = ", ".join(f"{v} {k}" for k, v in tally.items() if v)
    print(f"done in {time.perf_counter() - t0:.1f} s: {summary}\nreport: {path}")
    return run_dir, 1 if tally[res.FAIL] or tally[res.ERROR] else 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Print what each browser offers."""
    with _runner(args, None) as runner:
        for t in _targets(args):
            try:
                print(runner.probe(t).summary())
            except Exception as e:  # noqa: BLE001
                print(f"{t.id}: cannot start: {type(e).__name__}: {e}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Rebuild a run directory's report.html."""
    from bench.report.writer import write_report

    print(write_report(Path(args.run_dir)))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print the past runs, newest first."""
    from bench.report.routes import list_runs
    from web.settings import Settings

    for r in list_runs(Path(args.out or Settings.from_env().reports_dir)):
        counts = ", ".join(f"{v} {k}" for k, v in r["counts"].items() if v)
        print(f"{r['id']}  {r['kind']:<10}  {r['started']}  {r['cases']} cases  {', '.join(r['targets'])}  {counts}")
    return 0


def _browser_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--browser",
        action="append",
        default=[],
        choices=["chromium", "firefox", "webkit", "chromium-npm"],
        help="a local browser (repeatable; default chromium unless endpoints are given); chromium-npm is the npm "
        "Chromium with native WebNN that make setup installs, added next to chromium unless --no-native-chromium",
    )
    p.add_argument(
        "--no-native-chromium",
        action="store_true",
        help="do not add the npm Chromium with native WebNN (chromium-npm) next to --browser chromium",
    )
    p.add_argument(
        "--browser-endpoint",
        action="append",
        default=[],
        metavar="WS_URL",
        help="a remote browser served by `playwright run-server` (repeatable)",
    )
    p.add_argument(
        "--webdriver-endpoint",
        action="append",
        default=[],
        metavar="URL",
        help=WEBDRIVER_ENDPOINT_HELP,
    )
    p.add_argument("--server", help="use this running dev server instead of starting one")
    p.add_argument("--headed", action="store_true", help="show the local browsers")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per case after the first (default 3)")
    p.add_argument(
        "--init-script",
        action="append",
        default=[],
        metavar="FILE",
        help="JavaScript run in the bench page before anything else (repeatable), e.g. a WebNN implementation "
        "under test installed as navigator.ml: the bench then probes and runs it as 'native'",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run a subcommand; returns the exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in and args_in[0] in MODES:
        module = importlib.import_module(MODES[args_in[0]][0])
        return int(module.main(args_in[1:]))
    parser = argparse.ArgumentParser(prog="python -m bench", description="pyodide-webnn comparison bench",
                                     epilog="other modes (python -m bench MODE --help): " + "; ".join(
                                         f"{k}: {v[1]}" for k, v in MODES.items()))
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run cases on every implementation and write a report")
    _browser_options(run)
    run.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="SPEC",
        help="wpt, wpt:OP+OP, wpt@N, a graph file or directory (default: wpt@1,tests/data/graphs)",
    )
    run.add_argument(
        "--impl",
        action="append",
        default=[],
        metavar="SPEC",
        help=f"polyfill, native, IMPL:VARIANT, wildcards (variants: {', '.join(VARIANTS)}; "
        f"default: {' '.join(DEFAULT_IMPLS)})",
    )
    run.add_argument("--out", help="directory of run directories (default $PYODIDE_WEBNN_REPORTS or ./reports)")
    run.add_argument("--no-reference", action="store_true", help="skip the CPython reference rows")
    run.add_argument("--quiet", "-q", action="store_true", help="print failures and a count, not every pass")
    run.set_defaults(func=cmd_run)
    probe = sub.add_parser("probe", help="show which implementations each browser offers")
    _browser_options(probe)
    probe.set_defaults(func=cmd_probe)
    from bench.perf import run as perf

    perf_mode = sub.add_parser("perf", help="the performance bench (make bench): ratios to onnxruntime-web, "
                               "kernels, startup, network profiles, page memory, LiteRT, Node")
    perf.add_arguments(perf_mode)
    perf_mode.set_defaults(func=perf.cmd_perf)
    report = sub.add_parser("report", help="(re)build a run directory's report.html")
    report.add_argument("run_dir")
    report.set_defaults(func=cmd_report)
    lst = sub.add_parser("list", help="list past runs")
    lst.add_argument("--out", help="directory of run directories")
    lst.set_defaults(func=cmd_list)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command == "run" and not args.cases:
        from bench.cases.graphs import GRAPHS_DIR

        args.cases = [f"wpt@1,{GRAPHS_DIR}"]
    return int(args.func(args))
