"""`python -m bench run` runs a comparison without pytest code, shows progress, and writes a run that the
dev server lists; `list` and `report` work on past runs.  Firefox has no WebNN of its own, so the run installs
tests/bench/fake_native.js (--init-script) as its "native" implementation: a usable one that must agree with
the polyfill bit for bit, and an unusable variant (npu) reported with its own message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bench import results
from bench.run.compare import pairwise
from web.app import create_app
from web.settings import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _bench(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_cli_run_list_and_report(tmp_path: Path) -> None:
    proc = _bench(
        "run",
        "--browser",
        "firefox",
        "--cases",
        "wpt:relu+sigmoid@1",
        "--impl",
        "polyfill",
        "--impl",
        "native",
        "--impl",
        "native:npu",
        "--init-script",
        str(HERE / "fake_native.js"),
        "--out",
        str(tmp_path),
        "--repeat",
        "2",
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert "2 cases x 1 browser(s) -> 8 items" in out
    assert "npu: unusable (NotSupportedError: fake native WebNN: no NPU on this device)" in out  # the probe
    assert "[1/8] pass        firefox-polyfill-wpt:relu/" in out  # progress, one line per item
    assert "done in" in out and "6 pass, 2 unavailable" in out
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (run_dir / "report.html").is_file() and (run_dir / "results.jsonl").is_file()

    _, rs = results.load(run_dir)
    native = {r.case: r for r in rs if r.label == "native:default"}
    assert len(native) == 2 and all(r.status == "pass" for r in native.values())
    for case in native:
        outs = {r.column: results.load_outputs(run_dir, r.outputs) for r in rs if r.case == case and r.outputs}
        pairs = {(p.a, p.b): p for p in pairwise(case, outs)}
        assert pairs[("native:default@firefox", "polyfill@firefox")].max_ulp == 0
    npu = [r for r in rs if r.label == "native:npu"]
    assert {r.status for r in npu} == {"unavailable"} and "no NPU on this device" in npu[0].errors[0]

    listed = _bench("list", "--out", str(tmp_path), timeout=60)
    assert run_dir.name in listed.stdout and "2 cases" in listed.stdout
    (run_dir / "report.html").unlink()
    rebuilt = _bench("report", str(run_dir), timeout=60)
    assert rebuilt.returncode == 0 and (run_dir / "report.html").is_file()

    client = TestClient(create_app(Settings(cache_dir=tmp_path / "cache", reports_dir=tmp_path)))
    assert run_dir.name in client.get("/reports/").text
    page = client.get(f"/reports/{run_dir.name}/")
    assert page.status_code == 200 and "native:default@firefox" in page.text and "no NPU on this device" in page.text
