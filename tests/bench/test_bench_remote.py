"""Remote devices: a `playwright run-server` on loopback stands in for a lab machine; the bench reaches its
browser through --browser-endpoint, and the remote browser's native WebNN is probed and reported like a local
one.  The same run shows pytest-xdist (-n 2: each worker connects its own remote browser, both write into one
run directory, the controller merges and reports), -k and --tracing on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from bench import results
from bench.server import free_port
from bench.targets.playwright import remote_launch_options

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GRAPHS = REPO / "tests" / "data" / "graphs"
PLAYWRIGHT = Path(sys.executable).with_name("playwright")


@pytest.fixture(scope="module")
def run_server() -> Iterator[str]:
    """`playwright run-server --unsafe` on a free loopback port (unsafe: this machine's clients choose the
    offline executable and flags); yields its ws:// endpoint."""
    port = free_port()
    env = dict(os.environ, MOZ_DISABLE_NONLOCAL_CONNECTIONS="1")
    cmd = [str(PLAYWRIGHT), "run-server", "--port", str(port), "--host", "127.0.0.1", "--unsafe"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "Listening on ws://" in line, f"run-server did not start: {line!r}"
        yield line.split("Listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_cases_run_on_a_remote_browser_through_run_server(run_server: str, tmp_path: Path) -> None:
    # what a lab gives its device: browser type, a label, and that device's own launch options
    launch = quote(json.dumps(remote_launch_options("chromium", native_webnn=True)))
    endpoint = f"{run_server}?browser=chromium&name=loopback&launch-options={launch}"
    reports, artifacts = tmp_path / "reports", tmp_path / "artifacts"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "bench.suite",
        "-p",
        "no:cacheprovider",
        "-v",
        "--browser-endpoint",
        endpoint,
        "--webnn-cases",
        f"wpt:relu+sigmoid@1,{GRAPHS / 'dtypes.json'}",
        "--webnn-impl",
        "polyfill",
        "--webnn-impl",
        "native",
        "-k",
        "not sigmoid",
        "-n",
        "2",
        "--tracing",
        "on",
        "--output",
        str(artifacts),
        "--webnn-report",
        str(reports),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]

    (run_dir,) = reports.iterdir()
    probes, rs = results.load(run_dir)
    assert (run_dir / "report.html").is_file()
    assert "created: 2/2 workers" in proc.stdout  # pytest-xdist ran it
    assert not list(run_dir.glob("results.*.jsonl")), "the workers' files are merged into results.jsonl"
    remote = [r for r in rs if r.target == "remote-loopback-chromium"]
    assert {r.case.split("/")[0] for r in rs} == {"wpt:relu", "graph:dtypes"}, "-k deselected the sigmoid case"
    polyfill = [r for r in remote if r.implementation == "polyfill"]
    assert len(polyfill) == 4 and all(r.status == "pass" for r in polyfill), [(r.case, r.errors) for r in polyfill]
    assert all(r.browser == "chromium" and r.browser_version for r in remote)
    # the remote browser's native WebNN: probed, reported with the browser's own message, never a crash
    native = [r for r in remote if r.implementation == "native"]
    assert len(native) == 4 and all(r.status in ("pass", "unavailable") for r in native)
    probe = next(p for p in probes if p["target"] == "remote-loopback-chromium")
    state = next(s for s in probe["states"] if s["impl"] == "native" and s["variant"] == "default")
    assert state["state"] in ("usable", "unusable", "absent")
    if state["state"] == "unusable":
        assert state["error"]["name"] == "NotSupportedError" and state["error"]["message"]
    assert {r.implementation for r in rs if r.target == "cpython"} == {"reference"}
    # --tracing on: a trace per browser test, kept where pytest-playwright keeps its own
    traces = list(artifacts.rglob("trace-remote-loopback-chromium.zip"))
    assert len(traces) >= 4, proc.stdout + str(sorted(p.relative_to(artifacts) for p in artifacts.rglob("*")))
    print(f"remote run with 2 xdist workers: {took:.1f} s")
