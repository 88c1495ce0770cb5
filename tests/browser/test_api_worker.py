"""navigator.ml inside dedicated Web Workers that load the polyfill: a classic worker (importScripts of the
bundle) and a module worker (import of the bundle), each booting its own runtime and nested execution worker.
https://www.w3.org/TR/webnn/#api-navigator-ml (Exposed=(Window, Worker))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import open_page

pytestmark = pytest.mark.browser

WORKER_BOOT_MS = 240_000


@pytest.fixture(scope="module")
def worker_reports(browser: Any, dev_server: str) -> Iterator[dict[str, Any]]:
    """Both kinds of worker, run side by side in one page; their reports by kind."""
    context = browser.new_context()
    page, errors = open_page(context, f"{dev_server}/test/worker.html", WORKER_BOOT_MS)
    reports = page.evaluate("() => Promise.all([runWorker('classic'), runWorker('module')])")
    yield {r["kind"]: r for r in reports} | {"pageErrors": errors}
    context.close()


@pytest.mark.parametrize("kind", ["classic", "module"])
def test_navigator_ml_works_inside_a_dedicated_worker(worker_reports: dict[str, Any], kind: str) -> None:
    r = worker_reports[kind]
    assert "error" not in r, r.get("error")
    assert r["hasML"] and r["installed"] and r["mlIsPolyfill"] and r["globals"]
    assert r["fib40"] == 102334155
    assert r["compute"] == [0, 0, 1, 2]
    assert r["readDestroyed"] == "InvalidStateError" and r["builderAfterBuild"] == "InvalidStateError"
    assert r["limitsOps"] == 100
    assert r["lost"]
    assert not worker_reports["pageErrors"]
    print(f"{kind} worker: createContext (boot) {r['bootMs']} ms")
