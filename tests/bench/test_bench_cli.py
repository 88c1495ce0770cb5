"""`python -m web.bench run` runs a comparison without pytest code, shows progress, writes a run the dev
server lists; `list` and `report` work on past runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.settings import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_cli_run_list_and_report(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "web.bench",
        "run",
        "--browser",
        "firefox",
        "--cases",
        "wpt:relu+sigmoid@1",
        "--impl",
        "polyfill",
        "--impl",
        "native",
        "--out",
        str(tmp_path),
        "--repeat",
        "2",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert "2 cases x 1 browser(s) -> 6 items" in out
    assert "not-accelerated: absent (NotFoundError" in out  # Firefox has no navigator.ml: a state
    assert "[1/6] pass        firefox-polyfill-wpt:relu/" in out  # progress, one line per item
    assert "done in" in out and "4 pass, 2 unavailable" in out
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (run_dir / "report.html").is_file() and (run_dir / "results.jsonl").is_file()

    listed = subprocess.run(
        [sys.executable, "-m", "web.bench", "list", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run_dir.name in listed.stdout and "2 cases" in listed.stdout
    (run_dir / "report.html").unlink()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "web.bench", "report", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rebuilt.returncode == 0 and (run_dir / "report.html").is_file()

    client = TestClient(create_app(Settings(cache_dir=tmp_path / "cache", reports_dir=tmp_path)))
    assert run_dir.name in client.get("/reports/").text
    page = client.get(f"/reports/{run_dir.name}/")
    assert page.status_code == 200 and "firefox" in page.text and "polyfill@firefox" in page.text
