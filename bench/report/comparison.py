"""The self-contained HTML report of a run: what each browser offers, the pass matrix (operator x
implementation x browser), error distributions against tolerance and pairwise errors, latency per case and
per model, and the environment.  Inline CSS and SVG only: the file opens anywhere, offline.

    python -m bench report RUN_DIR      (re)build RUN_DIR/report.html from its results
"""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import results as res
from bench.report import fuzz, svg
from bench.report.html import CSS, escape
from bench.results import Result
from bench.run.compare import Pair, pairwise
from bench.run.reference import environment

BIN_LABELS = ("exact", "≤1/64", "≤1/16", "≤1/4", "≤1", ">1")


def _ratio(r: Result) -> float | None:
    """Error as a fraction of the tolerance (0 exact, 1 at the budget)."""
    if r.max_ulp is None or not r.tolerance:
        return None
    ulp, atol = r.tolerance.get("ulp", 0), r.tolerance.get("atol", 0.0)
    if r.max_ulp == 0 or r.max_abs == 0:
        return 0.0
    candidates = []
    if ulp:
        candidates.append(r.max_ulp / ulp)
    if atol:
        candidates.append((r.max_abs or 0.0) / atol)
    return min(candidates) if candidates else math.inf


def _bin(ratio: float) -> int:
    for i, edge in enumerate((0.0, 1 / 64, 1 / 16, 1 / 4, 1.0)):
        if ratio <= edge:
            return i
    return 5


def _columns(results: Sequence[Result]) -> list[str]:
    order = {"reference": 0, "polyfill": 1}
    cols = {
        r.column: (
            0 if r.implementation == "reference" else 1,
            r.target,
            order.get(r.implementation, 2),
            r.variant != "default",
            r.column,
        )
        for r in results
    }
    return sorted(cols, key=lambda c: cols[c])


def _errors(r: Result, limit: int) -> str:
    """A result's error messages, joined and cut to `limit` characters (before escaping, so that no entity
    is cut in half)."""
    return "; ".join(str(e) for e in r.errors)[:limit]


def _fmt_ms(v: Any) -> str:
    return "" if v is None else f"{float(v):.3g}"


# ----------------------------------------------------------------------------------------------- sections


def _environment(meta: Mapping[str, Any], probes: Sequence[Mapping[str, Any]]) -> str:
    out = ['<h2 id="environment">Implementations found and environment</h2>']
    seen = set()
    for p in probes:
        if p["target"] in seen:
            continue
        seen.add(p["target"])
        env = p.get("environment", {})
        out.append(f"<h3>{escape(p['target'])}: {escape(p['browser'])} {escape(p.get('browser_version', ''))}</h3>")
        out.append(
            f'<p class="small">{escape(env.get("userAgent", ""))}<br>secure context: '
            f"{escape(env.get('isSecureContext'))}, crossOriginIsolated: {escape(env.get('crossOriginIsolated'))}, "
            f"cores: {escape(env.get('hardwareConcurrency'))}, polyfill {escape(env.get('polyfill'))}, "
            f"polyfill boot (ms): {escape(env.get('polyfillBoot', {}))}</p>"
        )
        rows: dict[str, dict[str, Any]] = defaultdict(dict)
        for s in p.get("states", []):
            rows[s["variant"]][s["impl"]] = s
        out.append("<table><tr><th>context variant</th><th>polyfill</th><th>native WebNN</th></tr>")
        for variant, by_impl in rows.items():
            cells = []
            for impl in ("polyfill", "native"):
                s = by_impl.get(impl)
                if not s:
                    cells.append('<td class="na">not probed</td>')
                    continue
                cls = "pass" if s["state"] == "usable" else ("na" if s["state"] == "absent" else "fail")
                err = s.get("error") or {}
                msg = f": {escape(err.get('name', ''))}: {escape(err.get('message', ''))}" if err else ""
                acc = "" if s.get("accelerated") is None else f" (accelerated={escape(s['accelerated'])})"
                cells.append(f'<td class="{cls}">{escape(s["state"])}{acc}{msg}</td>')
            out.append(f"<tr><td><code>{escape(variant)}</code></td>{''.join(cells)}</tr>")
        out.append("</table>")
    ref = meta.get("reference", {})
    out.append(
        f"<h3>cpython reference</h3><p>py_core under CPython {escape(ref.get('python', ''))}, "
        f"NumPy {escape(ref.get('numpy', ''))}, {escape(ref.get('platform', ''))}</p>"
    )
    host = meta.get("host", {})
    out.append(
        f"<h3>host</h3><p>{escape(host.get('platform', ''))}, {escape(host.get('cpus', '?'))} CPUs; "
        f"command: <code>{escape(meta.get('command', ''))}</code></p>"
    )
    return "\n".join(out)


def _matrix(results: Sequence[Result], columns: Sequence[str]) -> str:
    by: dict[str, dict[str, list[Result]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by[r.op][r.column].append(r)
    # columns where nothing ran (an implementation absent or unusable in that browser) fold into one note
    dead = [c for c in columns if all(r.status == res.UNAVAILABLE for op in by.values() for r in op.get(c, []))]
    live = [c for c in columns if c not in dead]
    out = [
        '<h2 id="matrix">Pass matrix: operator × implementation × browser</h2>',
        '<p class="small">passed/ran per cell (skipped states in the tooltip); green: all pass, red: a '
        "failure or error, amber: unsupported or invalid cases only.</p>",
        "<table><tr><th>operator</th>" + "".join(f"<th>{escape(c)}</th>" for c in live) + "</tr>",
    ]
    for op in sorted(by):
        cells = []
        for c in live:
            rs = by[op].get(c, [])
            if not rs:
                cells.append('<td class="na c">–</td>')
                continue
            n_pass = sum(r.status == res.PASS for r in rs)
            bad = [r for r in rs if r.status in (res.FAIL, res.ERROR)]
            other = [r for r in rs if r.status not in (res.PASS, res.FAIL, res.ERROR)]
            cls = "fail" if bad else ("pass" if not other else ("part" if n_pass < len(rs) else "pass"))
            if all(r.status == res.UNAVAILABLE for r in rs):
                cls = "na"
            tip = "\n".join(f"{r.status}: {r.case}: {_errors(r, 200)}" for r in bad + other)
            ran = len(rs) - sum(r.status == res.UNAVAILABLE for r in rs)
            cells.append(f'<td class="{cls} c" title="{escape(tip)}">{n_pass}/{ran}</td>')
        out.append(f"<tr><td><code>{escape(op)}</code></td>{''.join(cells)}</tr>")
    out.append("</table>")
    if dead:
        notes = {}
        for r in results:
            if r.column in dead and r.column not in notes:
                notes[r.column] = _errors(r, 600)
        out.append("<p><b>Not run</b> (absent or unusable, see the environment section):</p><ul>")
        out += [f"<li><code>{escape(c)}</code>: {escape(notes.get(c, ''))}</li>" for c in dead]
        out.append("</ul>")
    return "\n".join(out)


def _failures(results: Sequence[Result], limit: int = 300) -> str:
    bad = [r for r in results if r.status in (res.FAIL, res.ERROR, res.UNSUPPORTED, res.INVALID)]
    out = [f'<h2 id="failures">Failures, errors, unsupported ({len(bad)})</h2>']
    if not bad:
        return out[0] + "<p>None.</p>"
    out.append(
        "<table><tr><th>case</th><th>implementation</th><th>status</th><th>max ULP / abs</th>"
        "<th>tolerance</th><th>message</th></tr>"
    )
    for r in bad[:limit]:
        err = "" if r.max_ulp is None else f"{r.max_ulp:g} / {r.max_abs or 0.0:g}"
        out.append(
            f"<tr><td><code>{escape(r.case)}</code></td><td>{escape(r.column)}</td><td>{escape(r.status)}</td>"
            f"<td>{err}</td><td>{escape(r.tolerance or '')}</td>"
            f"<td>{escape(_errors(r, 600))}</td></tr>"
        )
    out.append("</table>")
    if len(bad) > limit:
        out.append(f"<p>... and {len(bad) - limit} more in results.jsonl.</p>")
    return "\n".join(out)


def _pairs(run_dir: Path, results: Sequence[Result]) -> list[Pair]:
    per_case: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in results:
        out = res.load_outputs(run_dir, r.outputs)
        if out is not None:
            per_case[r.case][r.column] = out
    return [p for case, outs in per_case.items() for p in pairwise(case, outs)]


def _accuracy(results: Sequence[Result], columns: Sequence[str], pairs: Sequence[Pair]) -> str:
    out = [
        '<h2 id="accuracy">Errors against tolerance</h2>',
        '<p class="small">Per implementation: how many cases end at each fraction of their WPT tolerance '
        "(maximum error over the outputs / the summed ULP or ATOL budget of the graph). Red bars are out of "
        'tolerance.</p><div class="charts">',
    ]
    for c in columns:
        ratios = [x for x in (_ratio(r) for r in results if r.column == c) if x is not None]
        if not ratios:
            continue
        counts = [0] * len(BIN_LABELS)
        for x in ratios:
            counts[_bin(x)] += 1
        out.append(svg.histogram(list(zip(BIN_LABELS, counts, strict=True)), title=c, limit_after=4))
    out.append("</div>")
    out.append('<h3 id="pairwise">Pairwise: every two implementations on the same cases</h3>')
    if not pairs:
        return "\n".join(out) + "<p>Fewer than two implementations produced outputs.</p>"
    agg: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for p in pairs:
        agg[(p.a, p.b)].append(p)
    out.append(
        "<table><tr><th>A</th><th>B</th><th>cases</th><th>bit-identical</th><th>max ULP</th>"
        "<th>median ULP</th><th>max abs</th><th>worst case</th></tr>"
    )
    for (a, b), ps in sorted(agg.items()):
        worst = max(ps, key=lambda p: (p.max_ulp, p.max_abs))
        same = sum(p.max_ulp == 0 for p in ps)
        out.append(
            f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td>{len(ps)}</td><td>{same}</td>"
            f"<td>{worst.max_ulp:g}</td><td>{statistics.median(p.max_ulp for p in ps):g}</td>"
            f"<td>{max(p.max_abs for p in ps):g}</td>"
            f"<td><code>{escape(worst.case) if worst.max_ulp or worst.max_abs else '–'}</code></td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _ratio_to(med: Mapping[tuple[str, str], float], col: str, peer: str) -> str:
    """Geometric mean over the common cases of col's time / peer's time."""
    common = [case for (case, c) in med if c == col and (case, peer) in med]
    if not common or peer == col:
        return ""
    logs = [math.log(max(med[(k, col)], 1e-3) / max(med[(k, peer)], 1e-3)) for k in common]
    return f"{math.exp(statistics.fmean(logs)):.2f}"


def _latency(results: Sequence[Result], columns: Sequence[str]) -> str:
    timed = [r for r in results if r.timings.get("median_ms") is not None and r.status in (res.PASS, res.FAIL)]
    out = [
        '<h2 id="latency">Latency</h2>',
        '<p class="small">Median of the timed runs after the first (write inputs, dispatch, read outputs in '
        "browsers; executor.run in CPython). Ratios compare the same cases measured in this run.</p>",
    ]
    if not timed:
        return "\n".join(out) + "<p>No timings.</p>"
    med = {(r.case, r.column): float(r.timings["median_ms"]) for r in timed}
    cols = [c for c in columns if any(k[1] == c for k in med)]
    out.append(
        "<table><tr><th>implementation</th><th>cases</th><th>geomean ms</th>"
        "<th>× reference (same cases)</th><th>× polyfill, same browser</th></tr>"
    )
    for c in cols:
        mine = {case: v for (case, col), v in med.items() if col == c}
        gm = math.exp(statistics.fmean(math.log(max(v, 1e-3)) for v in mine.values()))
        target = c.split("@", 1)[1] if "@" in c else ""
        out.append(
            f"<tr><td>{escape(c)}</td><td>{len(mine)}</td><td>{gm:.3g}</td>"
            f"<td>{_ratio_to(med, c, 'reference')}</td>"
            f"<td>{_ratio_to(med, c, 'polyfill@' + target) if target else ''}</td></tr>"
        )
    out.append("</table>")
    models = sorted({r.model for r in timed if r.model})
    if models:
        out.append('<h3>Per model</h3><div class="charts">')
        for m in models:
            of_model = [r for r in timed if r.model == m]
            several = len({r.case for r in of_model}) > 1
            rows = [
                (
                    r.column + (f" [{r.case.split('/', 1)[-1]}]" if several else ""),
                    float(r.timings["median_ms"]),
                    svg.color(cols.index(r.column)),
                )
                for r in of_model
            ]
            out.append(svg.hbars(rows, title=f"{m}: median ms per run"))
        out.append("</div>")
    out.append("<h3>Per case</h3>")
    by_op: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in timed:
        by_op[r.op][r.case][r.column] = float(r.timings["median_ms"])
    for op in sorted(by_op):
        dots = [(case.split("/", 1)[-1], vals) for case, vals in by_op[op].items()]
        out.append(f"<details><summary><code>{escape(op)}</code> ({len(dots)} cases)</summary>")
        out.append(svg.dotplot(dots, cols, title=f"{op}: median ms per run"))
        out.append("</details>")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- render


def render(
    run_dir: Path, meta: Mapping[str, Any], probes: Sequence[Mapping[str, Any]], results: Sequence[Result]
) -> str:
    """The report's HTML for a run's probes and results."""
    columns = _columns(results)
    counts = res.counts(list(results))
    badges = "".join(f'<span class="badge">{escape(v)} {escape(k)}</span>' for k, v in counts.items() if v)
    pairs = _pairs(run_dir, results)
    nav = " · ".join(
        f'<a href="#{a}">{t}</a>'
        for a, t in (
            ("matrix", "pass matrix"),
            ("failures", "failures"),
            ("accuracy", "accuracy"),
            ("latency", "latency"),
            ("environment", "environment"),
        )
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>pyodide-webnn bench {escape(meta.get("id", ""))}</title><style>{CSS}</style></head><body>
<h1>WebNN comparison bench: run {escape(meta.get("id", ""))}</h1>
<p>{escape(meta.get("started", ""))} → {escape(meta.get("finished", ""))} ·
{escape(meta.get("cases", 0))} cases · {len(results)} results · {badges}</p><p>{nav}</p>
{_matrix(results, columns)}
{_failures(results)}
{_accuracy(results, columns, pairs)}
{_latency(results, columns)}
{_environment(meta, probes)}
<p class="small">Machine-readable: results.jsonl (one line per case × implementation × browser) and
run.json next to this file. Generated by bench/report/comparison.py.</p>
</body></html>"""


def write_report(run_dir: str | Path, meta: Mapping[str, Any] | None = None) -> Path:
    """Update run.json (counts, targets, environment) and write report.html; returns its path."""
    run_dir = Path(run_dir)
    res.merge(run_dir)
    probes, results = res.load(run_dir)
    full = {**res.read_meta(run_dir), **(meta or {})}
    full.update(
        {
            "id": run_dir.name,
            "counts": res.counts(results),
            "cases": len({r.case for r in results}),
            "targets": sorted({p["target"] for p in probes} | {r.target for r in results}),
            "reference": environment(),
            "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
        }
    )
    res.write_meta(run_dir, full)
    path = run_dir / res.REPORT
    path.write_text(render(run_dir, full, probes, results), encoding="utf-8")
    if any(r.metrics.get("fuzz") for r in results if r.metrics):
        fuzz.write(run_dir, results, fuzz.write_reproducers(run_dir, results))
    return path
