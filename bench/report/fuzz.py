"""The fuzzer's counts for a run: per implementation, how many cases fell in each category
(bench/run/fuzz_judge.py); per pair of implementations, where they disagree (accept/reject, error type,
output descriptor, values and who is wrong by the float64 reference, lost contexts, hangs); and the findings.
Written as fuzz.json and fuzz.md in the run directory."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.results import FAIL, Result
from bench.run.fuzz_judge import AGREE, CATEGORIES, HANG, REJECTED

JSON_NAME, MD_NAME = "fuzz.json", "fuzz.md"
PAIR_KEYS = ("cases", "agree", "unsupported", "accept/reject", "error type", "descriptor", "values: a wrong",
             "values: b wrong", "values: both wrong", "lost: a", "lost: b", "hang: a", "hang: b")


def _fuzz(r: Result) -> dict[str, Any] | None:
    f = r.metrics.get("fuzz") if r.metrics else None
    return f if isinstance(f, dict) else None


def _pair(a: Result, b: Result) -> list[str]:
    """The PAIR_KEYS one case adds to a pair's counts."""
    fa, fb = _fuzz(a), _fuzz(b)
    assert fa is not None and fb is not None
    keys = ["cases"]
    for side, f in (("a", fa), ("b", fb)):
        if f.get("lost"):
            keys.append(f"lost: {side}")
        if f["verdict"] == HANG:
            keys.append(f"hang: {side}")
    va, vb = fa["verdict"], fb["verdict"]
    if HANG in (va, vb):
        return keys
    if "unsupported" in (fa.get("category"), fb.get("category")):
        return [*keys, "unsupported"]
    if va != vb:
        return [*keys, "accept/reject"]
    if va == REJECTED:
        return [*keys, "error type" if fa["error"] != fb["error"] else AGREE]
    if fa.get("descriptors") != fb.get("descriptors"):
        return [*keys, "descriptor"]
    wrong_a, wrong_b = a.status == FAIL, b.status == FAIL
    if wrong_a or wrong_b:
        return [*keys, "values: both wrong" if wrong_a and wrong_b else f"values: {'a' if wrong_a else 'b'} wrong"]
    return [*keys, AGREE]


def summarize(results: Sequence[Result]) -> dict[str, Any]:
    """Counts per implementation column and per pair, and the findings (every non-agreeing result)."""
    by_case: dict[str, dict[str, Result]] = defaultdict(dict)
    for r in results:
        if _fuzz(r) is not None:
            by_case[r.case][r.column] = r
    columns = sorted({c for rs in by_case.values() for c in rs}, key=lambda c: (c != "reference", c))
    per_column: dict[str, Counter[str]] = {c: Counter() for c in columns}
    pairs: dict[tuple[str, str], Counter[str]] = {p: Counter() for p in itertools.combinations(columns, 2)}
    findings = []
    invalid = 0
    for case, rs in sorted(by_case.items()):
        ref = rs.get("reference")
        invalid += bool(ref and (_fuzz(ref) or {}).get("defect"))
        for col, r in rs.items():
            f = _fuzz(r) or {}
            category = f.get("category", AGREE if col == "reference" and r.status != FAIL else "values")
            per_column[col][category] += 1
            if category not in (AGREE, "unsupported"):
                findings.append({"case": case, "column": col, "category": category, "ops": r.ops,
                                 "defect": f.get("defect"), "problem": "; ".join(r.errors)[:400]})
        for a, b in pairs:
            if a in rs and b in rs:
                pairs[(a, b)].update(_pair(rs[a], rs[b]))
    return {
        "cases": len(by_case),
        "invalid": invalid,
        "columns": {c: {k: per_column[c][k] for k in CATEGORIES if per_column[c][k]} for c in columns},
        "pairs": [{"a": a, "b": b, **{k: n[k] for k in PAIR_KEYS}} for (a, b), n in pairs.items()],
        "findings": findings,
    }


def markdown(summary: Mapping[str, Any], repros: Mapping[tuple[str, str], str] | None = None) -> str:
    """The summary as Markdown tables (a finding's reproducer path where one was written)."""
    cols = list(summary["columns"])
    lines = [f"# Fuzz results: {summary['cases']} cases ({summary['invalid']} with a defect)", "",
             "## Per implementation", "", "| category | " + " | ".join(cols) + " |",
             "| --- |" + " ---: |" * len(cols)]
    for k in CATEGORIES:
        row = [str(summary["columns"][c].get(k, 0)) for c in cols]
        if any(v != "0" for v in row):
            lines.append(f"| {k} | " + " | ".join(row) + " |")
    lines += ["", "## Per pair (values: who is wrong by the float64 reference)", "",
              "| a | b | " + " | ".join(PAIR_KEYS) + " |", "| --- | --- |" + " ---: |" * len(PAIR_KEYS)]
    for p in summary["pairs"]:
        lines.append(f"| {p['a']} | {p['b']} | " + " | ".join(str(p[k]) for k in PAIR_KEYS) + " |")
    lines += ["", "## Findings", "", "| case | implementation | category | operators | defect | reproducer | problem |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for f in summary["findings"]:
        repro = (repros or {}).get((f["case"], f["column"]), "")
        problem = str(f["problem"]).replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| `{f['case']}` | {f['column']} | {f['category']} | {'+'.join(f['ops'])} | "
                     f"{f['defect'] or ''} | {repro} | {problem} |")
    return "\n".join(lines) + "\n"


def write(run_dir: str | Path, results: Sequence[Result], repros: Mapping[tuple[str, str], str] | None = None
          ) -> dict[str, Any]:
    """Write fuzz.json and fuzz.md into the run directory; returns the summary."""
    summary = summarize(results)
    run_dir = Path(run_dir)
    (run_dir / JSON_NAME).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (run_dir / MD_NAME).write_text(markdown(summary, repros), encoding="utf-8")
    return summary



def case_of(case_id: str, source: str) -> Any:
    """The BenchCase a fuzz result came from: regenerated from its seed and index (`fuzz:SEED/INDEX`), or read
    from the findings file it names."""
    from bench.cases.fuzz import select_fuzz
    from bench.cases.graphs import load_graph_file

    cases = select_fuzz(source)
    if cases is None and Path(source).is_file():
        cases = load_graph_file(source)
    return next((c for c in cases or [] if c.id == case_id), None)


MAX_REPROS = 300  # reproducers per run: the findings beyond are listed without one


def write_reproducers(run_dir: str | Path, results: Sequence[Result]) -> dict[tuple[str, str], str]:
    """One reproducer page per case an implementation (not the reference) disagrees on, under repro/;
    (case, column) -> its path relative to the run directory."""
    from bench.report import repro

    out: dict[tuple[str, str], str] = {}
    pages: dict[str, str] = {}
    for r in results:
        f = _fuzz(r)
        if f is None or r.implementation == "reference" or f.get("category", AGREE) in (AGREE, "unsupported"):
            continue
        if r.case not in pages and len(pages) < MAX_REPROS:
            case = case_of(r.case, r.source)
            if case is None:
                continue
            path = repro.write(case, Path(run_dir) / "repro", f"{r.column}: {f.get('category')}.")
            pages[r.case] = path.relative_to(run_dir).as_posix()
        if r.case in pages:
            out[(r.case, r.column)] = pages[r.case]
    return out


def console(summary: Mapping[str, Any]) -> str:
    """The per-implementation counts in a few lines for the terminal."""
    lines = [f"fuzz: {summary['cases']} cases ({summary['invalid']} with a defect)"]
    for col, counts in summary["columns"].items():
        lines.append(f"  {col}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines)
