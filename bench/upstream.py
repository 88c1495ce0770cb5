"""python -m bench upstream: the fuzzer's native findings as a table of upstream bugs, with reproducers.

    python -m bench upstream [--from FUZZ_RUN_DIR] [--cases SPEC] [--browser chromium-npm]

With --from, every distinct native finding of that fuzz run (one per category and error message, or per
leading operator for values) that reproduces on its own is minimized on the implementation that showed it
(bench/run/minimize.py) and added to the findings set, tests/data/fuzz/findings.json.  Then the findings set
(and any --cases, e.g. named regression seeds `fuzz:SEED/ID`) runs on native WebNN, the polyfill and the
reference like any bench run, and the native findings that still hold are written as a table into the run's
upstream.md and into docs/upstream-bugs.md, each with its standalone reproducer in docs/upstream-bugs/.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import results as res
from bench.cases.graphs import BenchCase
from bench.report import fuzz as fuzz_report
from bench.results import Result
from bench.run.fuzz_judge import AGREE
from bench.run.minimize import minimize
from bench.run.runner import Item, Runner
from web.settings import REPO_ROOT

FINDINGS = REPO_ROOT / "tests" / "data" / "fuzz" / "findings.json"
DOC = REPO_ROOT / "docs" / "upstream-bugs.md"
NOT_FINDINGS = (AGREE, "unsupported")


def native_findings(run_dir: Path, limit: int) -> list[tuple[Result, str]]:
    """The native findings of a fuzz run, one per kind: (result, category)."""
    _, results = res.load(run_dir)
    seen: dict[tuple[Any, ...], tuple[Result, str]] = {}
    for r in results:
        f = (r.metrics or {}).get("fuzz") or {}
        category = f.get("category", AGREE)
        if r.implementation != "native" or category in NOT_FINDINGS:
            continue
        # values: one per leading operator; errors: one per message (numbers and names aside), whatever the graph
        what = r.ops[:1] if category == "values" else re.sub(r"\d+|'[^']*'|\[[^\]]*\]", "#", f.get("message", ""))
        key = (category, str(what), f.get("stage"), f.get("error"), bool(f.get("defect")))
        seen.setdefault(key, (r, category))
    return list(seen.values())[:limit]


def _entry(case: BenchCase, origin: str, column: str, category: str) -> dict[str, Any]:
    graph = {k: v for k, v in case.graph.items() if k != "expectedOutputs"}
    name = origin.replace("fuzz:", "").replace("/", "-")
    return {"name": name, "graph": graph, "description": case.description,
            "fuzz": {**(case.fuzz or {}), "origin": origin, "found": column, "category": category}}


def minimize_findings(runner: Runner, targets: Mapping[str, Any], found: Sequence[tuple[Result, str]],
                      budget: int) -> list[dict[str, Any]]:
    """Each finding minimized on the target and variant that showed it, as a findings-file entry."""
    entries = []
    for r, category in found:
        case = fuzz_report.case_of(r.case, r.source)
        target = targets.get(r.target)
        if case is None or target is None:
            continue

        def holds(c: BenchCase, r: Result = r, target: Any = target, category: str = category) -> bool:
            result, _ = runner.run(Item(target, r.implementation, r.variant, c))
            return ((result.metrics or {}).get("fuzz") or {}).get("category") == category

        if not holds(case):  # collateral of an earlier case (a context it lost), or flaky: not kept
            print(f"  {r.case} ({category}): does not reproduce on its own", flush=True)
            continue
        small, runs = minimize(case, holds, budget, values=category != "values")
        print(f"  {r.case} ({category}, {'+'.join(case.ops)}): {len(small.ops)} operator(s) after {runs} runs",
              flush=True)
        entries.append(_entry(small, r.case, r.column, category))
    return entries


def merge_findings(path: Path, entries: Sequence[Mapping[str, Any]]) -> None:
    """Add entries to the findings file (by name; a newer minimization replaces an older one)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {
        "name": "findings", "description": "native WebNN findings of the fuzzer, minimized (python -m bench "
        "upstream --from RUN_DIR); the cases python -m bench upstream runs", "tests": []}
    tests = {t["name"]: t for t in data["tests"]}
    tests.update({e["name"]: dict(e) for e in entries})
    data["tests"] = [tests[n] for n in sorted(tests)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def table(run_dir: Path, doc_repros: Path | None) -> tuple[list[str], str]:
    """The native findings of an upstream run as Markdown rows, and the browser they were made in."""
    _, results = res.load(run_dir)
    expected = {r.case: (r.metrics or {}).get("fuzz") or {} for r in results if r.implementation == "reference"}
    # values the polyfill misses as well are the judge's tolerance at issue, not a native bug
    disputed = {r.case for r in results if r.implementation == "polyfill"
                and ((r.metrics or {}).get("fuzz") or {}).get("category") == "values"}
    rows: list[str] = []
    browser = ""
    for r in sorted(results, key=lambda r: (((r.metrics or {}).get("fuzz") or {}).get("category", ""), r.case)):
        f = (r.metrics or {}).get("fuzz") or {}
        if r.implementation != "native" or r.variant != "default" or f.get("category", AGREE) in NOT_FINDINGS:
            continue
        if f.get("category") == "values" and r.case in disputed:
            continue
        if expected.get(r.case, {}).get("stage") == "compute":  # a graph with no defined result: a draft gap
            continue
        browser = f"{r.target} {r.browser_version}"
        exp = expected.get(r.case, {})
        want = exp.get("error") if exp.get("verdict") == "rejected" else "values of the float64 reference"
        got = ("; ".join(r.errors) or f.get("message", "")).replace("|", "\\|").replace("\n", " ")[:220]
        link = ""
        case = fuzz_report.case_of(r.case, r.source)
        if case is not None and doc_repros is not None:
            from bench.report import repro

            page = repro.write(case, doc_repros, f"{r.column}: {f.get('category')}.")
            link = f"[{page.name}](upstream-bugs/{page.name})"
        rows.append(f"| {len(rows) + 1} | {f.get('category')} | {_graph(case, r.ops)} | {got} | {want} | {link} |")
    return rows, browser


def _graph(case: BenchCase | None, ops: Sequence[str]) -> str:
    """The table's graph column: the operators, then the defect or build() naming one operand twice."""
    text = f"`{'+'.join(ops)}`"
    if case is None:
        return text
    named = list((case.graph.get("buildOutputs") or {}).values())
    if len(named) != len(set(named)):
        text += ", build() names one operand twice"
    if case.fuzz and case.fuzz.get("defect"):
        text += f", defect: {case.fuzz['defect']}".replace("|", "\\|")
    return text


def write_doc(doc: Path, rows: Sequence[str], browser: str, command: str, run_id: str) -> None:
    """docs/upstream-bugs.md: the table, when and with what command it was made."""
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = [
        "# Native WebNN findings (upstream bugs)", "",
        f"Made on {when} by `{command}` in {browser or 'no native WebNN'} (bench run `{run_id}`). The command",
        "rewrites this page: it runs the fuzzer's minimized findings (`tests/data/fuzz/findings.json`, see",
        "[bench.md](bench.md#the-fuzzer)) on native WebNN, the polyfill and the CPython reference, and lists each",
        "case native WebNN still gets wrong. The expectation is the draft's error for a graph with a defect, else",
        "the float64 reference's values within the WPT tolerance. Left out: values the polyfill misses as well",
        "(the tolerance is at issue there) and graphs with no defined result (the reference refuses them when it",
        "computes, e.g. convTranspose2d with input channels not divisible by groups, which the draft allows).",
        "Each reproducer is a standalone page of plain `navigator.ml` calls that prints PASS or FAIL in any",
        "browser with WebNN.", "",
        "| # | category | graph | what native WebNN does | expected | reproducer |",
        "| --- | --- | --- | --- | --- | --- |", *rows, "",
    ]
    doc.write_text("\n".join(text), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, minimize and run the findings, write the table; returns the exit status."""
    from bench import cli

    p = argparse.ArgumentParser(prog="python -m bench upstream", description=__doc__.split("\n\n")[0])
    cli._browser_options(p)
    p.add_argument("--from", dest="from_run", metavar="RUN_DIR", help="a fuzz run: minimize its native findings "
                   "into the findings set first")
    p.add_argument("--cases", action="append", default=[], metavar="SPEC", help="more cases, e.g. fuzz:SEED/ID")
    p.add_argument("--findings", type=Path, default=FINDINGS, help="the findings set (default %(default)s)")
    p.add_argument("--budget", type=int, default=16, help="runs per finding while minimizing (default 16)")
    p.add_argument("--max", type=int, default=60, help="findings taken from --from (default 60)")
    p.add_argument("--doc", type=Path, default=DOC, help="the page to write (default docs/upstream-bugs.md)")
    p.add_argument("--out", help="directory of run directories (default $PYODIDE_WEBNN_REPORTS or ./reports)")
    args = p.parse_args(argv)
    args.browser = args.browser or ["chromium-npm"]
    command = " ".join(["python -m bench upstream", *(shlex.quote(a) for a in (argv or []))])
    if args.from_run:
        found = native_findings(Path(args.from_run), args.max)
        print(f"{len(found)} distinct native findings in {args.from_run}; minimizing", flush=True)
        with cli._runner(args, None) as runner:
            targets = {t.id: t for t in cli._targets(args)}
            merge_findings(args.findings, minimize_findings(runner, targets, found, args.budget))
    run_args = argparse.Namespace(**vars(args), impl=["polyfill", "native:default"], no_reference=False,
                                  quiet=True)
    run_args.cases = [str(args.findings), *args.cases]
    run_dir, _ = cli.execute(run_args)
    rows, browser = table(run_dir, None)
    head = ["| # | category | graph | what native WebNN does | expected | reproducer |", "| --- |" * 6]
    (run_dir / "upstream.md").write_text("\n".join([*head, *rows]) + "\n", encoding="utf-8")
    repros = args.doc.with_suffix("")
    if repros.is_dir():
        shutil.rmtree(repros)
    rows, browser = table(run_dir, repros)
    write_doc(args.doc, rows, browser, command, run_dir.name)
    print(f"{len(rows)} native findings hold: {args.doc} (reproducers in {repros})")
    return 0

