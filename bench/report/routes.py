"""Dev-server routes for past bench runs: /reports/ lists them, /reports/<run>/ shows a run's report.
Reads run.json files only (no NumPy), so the dev server stays light.

Everything read from a run directory is data, not markup: it is escaped where it is written into HTML, a path
whose real location (symlinks resolved) lies outside the reports folder is not served, and a run.json that is
not the expected shape is skipped with a warning instead of breaking the listing."""

from __future__ import annotations

import html
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from web.paths import inside

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
NO_STORE = {"cache-control": "no-store"}
# Everything under /reports/ (the listing, report.html, any file a run directory holds) is a document without
# scripts: inline CSS and SVG only.  Should markup ever slip through, the browser still runs none of it.
REPORT_CSP = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
}
log = logging.getLogger(__name__)

# run.json fields the listing reads: name -> (type check, what the warning says was expected, default)
_FIELDS: dict[str, tuple[Any, str, Any]] = {
    "kind": (lambda v: v in ("comparison", "perf"), "'comparison' or 'perf'", "comparison"),
    "started": (lambda v: isinstance(v, str), "a string", ""),
    "finished": (lambda v: isinstance(v, str), "a string", ""),
    "command": (lambda v: isinstance(v, str), "a string", ""),
    "cases": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", 0),
    "targets": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings", []),
    "headline": (lambda v: isinstance(v, str), "a string", ""),  # a perf run's ratios in one line
    "counts": (
        lambda v: isinstance(v, dict) and all(isinstance(n, int) and not isinstance(n, bool) for n in v.values()),
        "an object of integers",
        {},
    ),
}


def _read_run(reports_dir: Path, d: Path) -> dict[str, Any]:
    """The listing entry of run directory `d`; ValueError naming the problem when its run.json is unusable."""
    try:
        meta = json.loads((d / "run.json").read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"cannot read run.json: {e.strerror or e}") from None
    except ValueError as e:  # bad JSON or bad UTF-8
        raise ValueError(f"run.json is not valid JSON: {e}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"run.json holds {json.dumps(meta)[:40]}, not an object")
    entry: dict[str, Any] = {"id": d.name}
    for name, (ok, expected, default) in _FIELDS.items():
        value = meta.get(name, default)
        if not ok(value):
            raise ValueError(f"run.json field '{name}' should be {expected}, not {json.dumps(value)[:80]}")
        entry[name] = value
    entry["report"] = (d / "report.html").is_file() and inside(reports_dir, d / "report.html")
    return entry


def scan_runs(reports_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(runs under `reports_dir` newest first, one warning per run directory skipped because its run.json is
    unusable or it lies outside `reports_dir`).  Each warning is logged too."""
    runs: list[dict[str, Any]] = []
    problems: list[str] = []
    if not reports_dir.is_dir():
        return runs, problems
    for d in sorted(reports_dir.iterdir()):
        if not d.is_dir() or not _RUN_ID.match(d.name) or not (d / "run.json").is_file():
            continue
        try:
            if not inside(reports_dir, d / "run.json"):
                raise ValueError("it (or its run.json) is a symlink out of the reports folder")
            runs.append(_read_run(reports_dir, d))
        except ValueError as e:
            problems.append(f"{d.name}: skipped: {e}")
            log.warning("bench reports: %s", problems[-1])
    return sorted(runs, key=lambda r: (r["started"], r["id"]), reverse=True), problems


def list_runs(reports_dir: Path) -> list[dict[str, Any]]:
    """Runs under `reports_dir`, newest first: id, times, counts, browsers, whether a report exists."""
    return scan_runs(reports_dir)[0]


def _index_html(runs: list[dict[str, Any]], problems: list[str], reports_dir: Path) -> str:
    e = html.escape
    rows = []
    for r in runs:
        rid = e(r["id"])
        link = f'<a href="/reports/{rid}/">{rid}</a>' if r["report"] else f"{rid} (no report yet)"
        summary = ", ".join(f"{v} {k}" for k, v in r["counts"].items() if v)
        summary += f"; {r['headline']}" if r["headline"] else ""
        rows.append(
            f"<tr><td>{link}</td><td>{e(r['kind'])}</td><td>{e(r['started'])}</td><td>{e(str(r['cases']))}</td>"
            f"<td>{e(', '.join(r['targets']))}</td><td>{e(summary)}</td>"
            f'<td><a href="/reports/{rid}/results.jsonl">results.jsonl</a></td></tr>'
        )
    body = (
        "\n".join(rows)
        or '<tr><td colspan="7">No runs yet: <code>python -m bench run</code>, <code>make bench</code> or '
        "<code>pytest tests/bench</code> writes one.</td></tr>"
    )
    skipped = "".join(f'<p class="warn">{e(p)}</p>\n' for p in problems)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>pyodide-webnn bench runs</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;margin:2rem}}table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #ddd;padding:.3rem .8rem;text-align:left}}.warn{{color:#a40}}</style></head><body>
<h1>Bench runs</h1><p>From <code>{e(str(reports_dir))}</code>, newest first: comparison runs (<code>python -m
bench run</code>, the pass matrix) and perf runs (<code>make bench</code>: ratios, kernels, startup).</p>
{skipped}<table><tr><th>run</th><th>kind</th><th>started</th><th>cases</th><th>browsers</th><th>results</th><th>data</th></tr>
{body}</table></body></html>"""


def add_report_routes(app: FastAPI, reports_dir: Path) -> None:
    """/reports/ (HTML list), /api/reports (JSON list), /reports/<run>/ (that run's report.html)."""

    @app.get("/reports/")
    @app.get("/reports")
    def reports_index() -> Response:
        """The HTML list of runs, and a line for each run directory skipped."""
        runs, problems = scan_runs(reports_dir)
        return HTMLResponse(_index_html(runs, problems, reports_dir), headers=NO_STORE)

    @app.get("/api/reports")
    def reports_json() -> Response:
        """The list of runs as JSON."""
        return JSONResponse(list_runs(reports_dir), headers=NO_STORE)

    @app.get("/reports/{run_id}/")
    def report(run_id: str) -> Response:
        """One run's report.html, when it really lies inside the reports folder."""
        path = Path(os.path.realpath(reports_dir / run_id / "report.html"))  # serve what was checked
        if not _RUN_ID.match(run_id) or not path.is_file() or not inside(reports_dir, path):
            return JSONResponse({"detail": f"no report for run '{run_id}'"}, 404)
        return FileResponse(path, media_type="text/html; charset=utf-8", headers=NO_STORE)
