"""Dev-server routes for past bench runs: /reports/ lists them, /reports/<run>/ shows a run's report.
Reads run.json files only (no NumPy), so the dev server stays light."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
NO_STORE = {"cache-control": "no-store"}


def list_runs(reports_dir: Path) -> list[dict[str, Any]]:
    """Runs under `reports_dir`, newest first: id, times, counts, browsers, whether a report exists."""
    runs: list[dict[str, Any]] = []
    if not reports_dir.is_dir():
        return runs
    for d in reports_dir.iterdir():
        if not d.is_dir() or not _RUN_ID.match(d.name) or not (d / "run.json").is_file():
            continue
        try:
            meta = json.loads((d / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        runs.append(
            {
                "id": d.name,
                "started": meta.get("started", ""),
                "finished": meta.get("finished", ""),
                "counts": meta.get("counts", {}),
                "targets": meta.get("targets", []),
                "cases": meta.get("cases", 0),
                "command": meta.get("command", ""),
                "report": (d / "report.html").is_file(),
            }
        )
    return sorted(runs, key=lambda r: (r["started"], r["id"]), reverse=True)


def _index_html(runs: list[dict[str, Any]], reports_dir: Path) -> str:
    rows = []
    for r in runs:
        c = r["counts"]
        link = (
            f'<a href="/reports/{html.escape(r["id"])}/">{html.escape(r["id"])}</a>'
            if r["report"]
            else html.escape(r["id"]) + " (no report yet)"
        )
        summary = ", ".join(f"{v} {k}" for k, v in c.items() if v)
        rows.append(
            f"<tr><td>{link}</td><td>{html.escape(r['started'])}</td><td>{r['cases']}</td>"
            f"<td>{html.escape(', '.join(r['targets']))}</td><td>{html.escape(summary)}</td>"
            f'<td><a href="/reports/{html.escape(r["id"])}/results.jsonl">results.jsonl</a></td></tr>'
        )
    body = (
        "\n".join(rows)
        or '<tr><td colspan="6">No runs yet: <code>python -m web.bench run</code> or '
        "<code>pytest tests/bench</code> writes one.</td></tr>"
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>pyodide-webnn bench runs</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;margin:2rem}}table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #ddd;padding:.3rem .8rem;text-align:left}}</style></head><body>
<h1>Comparison bench runs</h1><p>From <code>{html.escape(str(reports_dir))}</code>, newest first.</p>
<table><tr><th>run</th><th>started</th><th>cases</th><th>browsers</th><th>results</th><th>data</th></tr>
{body}</table></body></html>"""


def add_report_routes(app: FastAPI, reports_dir: Path) -> None:
    """/reports/ (HTML list), /api/reports (JSON list), /reports/<run>/ (that run's report.html)."""

    @app.get("/reports/")
    @app.get("/reports")
    def reports_index() -> Response:
        """The HTML list of runs."""
        return HTMLResponse(_index_html(list_runs(reports_dir), reports_dir), headers=NO_STORE)

    @app.get("/api/reports")
    def reports_json() -> Response:
        """The list of runs as JSON."""
        return JSONResponse(list_runs(reports_dir), headers=NO_STORE)

    @app.get("/reports/{run_id}/")
    def report(run_id: str) -> Response:
        """One run's report.html."""
        path = reports_dir / run_id / "report.html"
        if not _RUN_ID.match(run_id) or not path.is_file():
            return JSONResponse({"detail": f"no report for run '{run_id}'"}, 404)
        return FileResponse(path, media_type="text/html; charset=utf-8", headers=NO_STORE)
