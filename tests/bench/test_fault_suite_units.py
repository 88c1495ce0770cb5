"""The fault suite's pure-Python parts, no browser: the fault-injecting middleware (web/fault_injection.py) over a
small ASGI app, and the table `python -m bench faults` prints from pytest's junit XML (bench/faults.py)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bench.faults import failures, outcomes, table
from web.fault_injection import DroppedConnection, Faults

BODY = b"x" * 100_000


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    headers = [(b"content-length", str(len(BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


def _get(faults: Faults, path: str) -> tuple[list[dict[str, Any]], BaseException | None, dict[str, Any]]:
    """The messages the wrapped app sent for GET path, what it raised, and the scope the app saw."""
    sent: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(scope)
        await _app(scope, receive, send)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def run() -> BaseException | None:
        try:
            await faults.wrap(app)({"type": "http", "path": path, "raw_path": path.encode()}, None, send)
        except DroppedConnection as e:
            return e
        return None

    # a loop of its own in a thread of its own: the browser tests' Playwright may run one in this thread
    with ThreadPoolExecutor(1) as pool:
        raised = pool.submit(asyncio.run, run()).result()
    return sent, raised, seen


def test_a_run_prefix_is_stripped_and_unmatched_paths_pass_through() -> None:
    faults = Faults()
    prefix = faults.run_prefix()
    assert prefix != faults.run_prefix()
    sent, raised, seen = _get(faults, f"{prefix}/pyodide/pyodide.asm.wasm")
    assert seen["path"] == "/pyodide/pyodide.asm.wasm" and raised is None
    assert sent[0]["status"] == 200 and sent[1]["body"] == BODY


def test_a_404_fault_answers_without_the_app_and_counts_its_hits() -> None:
    faults = Faults()
    fault = faults.inject("pyodide.asm.wasm", "404")
    sent, _, seen = _get(faults, "/run-3/pyodide/pyodide.asm.wasm")
    assert sent[0]["status"] == 404 and not seen and fault.hits == 1
    faults.clear()
    sent, _, _ = _get(faults, "/pyodide/pyodide.asm.wasm")
    assert sent[0]["status"] == 200


def test_a_dropped_response_sends_its_start_and_first_bytes_only() -> None:
    faults = Faults()
    faults.inject(".whl", "drop")
    sent, raised, _ = _get(faults, "/core/abc/core.whl")
    assert isinstance(raised, DroppedConnection)
    assert sent[0]["status"] == 200
    body = b"".join(m["body"] for m in sent[1:])
    assert 0 < len(body) < len(BODY) and all(m.get("more_body") for m in sent[1:])


def test_a_prefix_fault_serves_the_text_in_front_of_the_uncompressed_body() -> None:
    faults = Faults()
    faults.inject("webnn-worker.js", "prefix", text="/* first */")
    sent: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(scope)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"6"), (b"etag", b"x")]})
        await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await send({"type": "http.response.body", "body": b"def"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/polyfill/webnn-worker.js", "raw_path": b"/polyfill/webnn-worker.js",
             "headers": [(b"accept-encoding", b"gzip, br"), (b"accept", b"*/*")]}
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, faults.wrap(app)(scope, None, send)).result()
    assert seen["headers"] == [(b"accept", b"*/*")]  # the app answers uncompressed
    headers = dict(sent[0]["headers"])
    assert sent[1]["body"] == b"/* first */abcdef" and headers[b"content-length"] == b"17"
    assert b"etag" not in headers and len(sent) == 2


def test_an_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of"):
        Faults().inject("x", "slow")


def test_the_table_reads_case_browser_outcome_and_time(tmp_path: Path) -> None:
    junit = tmp_path / "faults.xml"
    junit.write_text("""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.browser.test_faults_network" name="test_start[chromium-wasm-404]" time="3.25"/>
<testcase classname="tests.browser.test_faults_engine" name="test_death[firefox]" time="1.5">
<failure message="AssertionError: lost&#10;more">trace</failure></testcase>
<testcase classname="tests.browser.test_faults_engine" name="test_close[webkit]" time="0.0">
<skipped message="reaches into the worker"/></testcase>
</testsuite></testsuites>""")
    rows = outcomes(junit)
    assert rows == [("test_faults_network::test_start[wasm-404]", "chromium", "passed", 3.25),
                    ("test_faults_engine::test_death", "firefox", "FAILED: AssertionError: lost", 1.5),
                    ("test_faults_engine::test_close", "webkit", "skipped: reaches into the worker", 0.0)]
    text = table(rows)
    assert text.splitlines()[0].split() == ["case", "browser", "outcome", "seconds"] and "3.2" in text
    assert failures(junit) == "--- test_faults_engine::test_death[firefox]\ntrace"
