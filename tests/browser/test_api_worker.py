"""navigator.ml inside every kind of worker that loads the polyfill (the draft exposes WebNN to Window and
Worker): dedicated workers (classic through importScripts, module through import), shared workers (classic and
module) and service workers (classic, and module importing Pyodide's scripts statically). Each builds and
dispatches graphs and reads their values. Where the scope has no nested `Worker` (service workers in both
browsers, shared workers in Chromium) the engine runs in the worker's own thread; elsewhere in a nested
execution worker. https://www.w3.org/TR/webnn/#api-navigator-ml (Exposed=(Window, Worker))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import open_window

pytestmark = pytest.mark.browser

WORKER_BOOT_MS = 360_000
# one case (boot + graphs) takes 3-50 s here; past this it reports an error instead of hanging the run
CASE_DEADLINE_S = 300

SCOPES = {"dedicated": "runWorker", "shared": "runShared", "service": "runService"}
CASES = [(scope, kind) for scope in SCOPES for kind in ("classic", "module")]


@pytest.fixture(scope="module")
def worker_reports(request: pytest.FixtureRequest, browser_name: str, dev_server: str) -> Iterator[dict[Any, Any]]:
    """Every (scope, kind) case run in one page, one after the other (each boots two Pyodides); their reports by
    (scope, kind). Each case has a deadline, so a worker that never reports is a failure with a message, and
    cases run one at a time (two dedicated workers booting side by side in one Firefox page can hang)."""
    with open_window(request, browser_name, f"{dev_server}/test/worker.html", WORKER_BOOT_MS) as page:
        reports: dict[Any, Any] = {}
        for scope, run in SCOPES.items():
            for kind in ("classic", "module"):
                reports[(scope, kind)] = page.evaluate(
                    f"() => withDeadline({run}('{kind}'), '{kind}', {CASE_DEADLINE_S})")
        yield reports | {"pageErrors": page.webnn_errors}


@pytest.mark.parametrize(("scope", "kind"), CASES)
def test_navigator_ml_works_inside_a_worker(worker_reports: dict[Any, Any], browser_name: str, scope: str,
                                           kind: str) -> None:
    r = worker_reports[(scope, kind)]
    assert "error" not in r, r.get("error")
    assert r["hasML"] and r["installed"] and r["mlIsPolyfill"] and r["globals"]
    assert r["fib40"] == 102334155
    assert r["compute"] == [0, 0, 1, 2]
    assert r["readDestroyed"] == "InvalidStateError" and r["builderAfterBuild"] == "InvalidStateError"
    assert r["limitsOps"] == 100
    assert r["lost"]
    # a nested execution worker wherever the scope can start one, else the engine in the worker's own thread;
    # Firefox: never a nested worker from a worker (its `new Worker()` there can block the thread for good)
    nested = r["nestedWorker"] and browser_name != "firefox"
    assert r["engine"] == ("worker" if nested else "in-thread")
    if scope == "dedicated":
        assert r["engine"] == ("in-thread" if browser_name == "firefox" else "worker")
    if scope == "service":
        assert r["engine"] == "in-thread"  # no browser starts workers from a service worker
    assert not worker_reports["pageErrors"]
    print(f"{scope} {kind} worker: engine {r['engine']}, createContext (boot) {r['bootMs']} ms")
