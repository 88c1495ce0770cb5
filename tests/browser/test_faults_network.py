"""Fault suite: the network fails while the polyfill starts.  A file answered 404, a download that stalls after its
first bytes, a connection dropped mid-body (web.fault_injection, on a real server): `createContext()` rejects
within its bound with an error that names the file, never resolves to a context already lost, the page sees no
unhandled rejection, and once the file is back a new `createContext()` in the same page starts from scratch and
works.

`make test` runs the cases of SUBSET; `python -m bench faults` (WEBNN_FAULT_SUITE=all) runs every case.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from typing import Any

import pytest
from fault_cases import CASE_WAIT_MS, fault_page, selected, whole_suite_only

from web.fault_injection import Faults

pytestmark = [pytest.mark.browser, pytest.mark.fault]

# bounds small enough that a case proves them in seconds (the defaults: runtime/rpc.js, boot/fetches.js)
STALL_MS = 5000
BOOT_MS = 4000


@dataclass(frozen=True)
class Case:
    """A fault on the file `target` names (a key of _files), what the error must say, the bounds in force."""

    target: str
    kind: str
    says: tuple[str, ...]
    bounds: tuple[tuple[str, int], ...] = (("fetchStallMs", STALL_MS),)


CASES = {
    "wasm-404": Case("wasm", "404", ("pyodide.asm.wasm", "404")),
    "wasm-dropped": Case("wasm", "drop", ("pyodide.asm.wasm",)),
    "lock-404": Case("lock", "404", ("pyodide-lock.json", "404")),
    "numpy-404": Case("numpy", "404", ("numpy-", "404")),
    "core-wheel-stalled": Case("core", "stall", ("stalled", "py_core")),
    "manifest-404": Case("manifest", "404", ("manifest.json", "404")),
    "worker-script-404": Case("worker", "404", ("webnn-worker.js",)),
    "snapshot-dropped": Case("snapshot", "drop", ()),
    # a stall no download bound catches here (the stall bound is long): the start's own bound ends it
    "boot-bound": Case("wasm", "stall", ("did not start within 4 s",),
                       (("fetchStallMs", 600_000), ("bootTimeoutMs", BOOT_MS))),
}
# the cases `make test` runs
SUBSET = ("wasm-404",)

START_JS = r"""
async (wait) => {
  const t0 = performance.now();
  const got = await within(webnnPolyfill.ml.createContext().then((ctx) => runRelu(ctx)), wait, 'createContext');
  return {...got, ms: Math.round(performance.now() - t0)};
}
"""


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 (the local dev server)
        return json.loads(r.read())


def _files(base: str) -> dict[str, str]:
    """The path part a fault matches for each target."""
    manifest = _json(f"{base}/core/manifest.json")
    lock = _json(f"{base}/pyodide/pyodide-lock.json")
    snapshot = manifest.get("numpySnapshot") or manifest.get("snapshot") or {}
    return {"wasm": "/pyodide/pyodide.asm.wasm", "lock": "/pyodide/pyodide-lock.json",
            "numpy": "/pyodide/" + lock["packages"]["numpy"]["file_name"], "core": manifest["wheel"],
            "manifest": "/core/manifest.json", "worker": "/polyfill/webnn-worker.js",
            "snapshot": snapshot.get("url", "").rsplit("/", 1)[-1]}


def _selected() -> list[Any]:
    return selected([pytest.param(name, id=name) for name in CASES], SUBSET)


@pytest.mark.parametrize("name", _selected())
def test_a_failed_start_names_the_file_and_a_retry_works(request: pytest.FixtureRequest, browser_name: str,
                                                          fault_server: tuple[str, Faults], name: str) -> None:
    base, faults = fault_server
    case = CASES[name]
    match = _files(base)[case.target]
    if not match:
        pytest.skip(f"{name}: the build has no snapshot (make snapshot)")
    with fault_page(request, browser_name, base, faults, **dict(case.bounds)) as page:
        fault = faults.inject(match, case.kind)
        failed = page.evaluate(START_JS, CASE_WAIT_MS)
        if not fault.hits:
            pytest.skip(f"{name}: this browser never asked for {match} (answered from a cache)")
        assert not failed.get("error", "").startswith("pending"), failed
        if case.says:
            assert "error" in failed, failed
            assert failed["error"].startswith("NotSupportedError"), failed
            for text in case.says:
                assert text in failed["error"], (text, failed)
        else:
            # a file the polyfill can do without: it starts without it, or fails naming it
            assert failed.get("ok") == [1, 0, 3, 0] or match in failed.get("error", ""), failed
        faults.clear()
        if "bootTimeoutMs" in dict(case.bounds):
            # a bound that small also fails a healthy start here: back to the default (read at each start)
            page.evaluate("() => { window.WEBNN_POLYFILL_CONFIG.bootTimeoutMs = null; }")
        again = page.evaluate(START_JS, CASE_WAIT_MS)
        assert again.get("ok") == [1, 0, 3, 0], (failed, again)
        assert page.evaluate("() => window.unhandled") == [], failed


@whole_suite_only
def test_a_worker_whose_script_never_runs_is_replaced(request: pytest.FixtureRequest, browser_name: str,
                                                      fault_server: tuple[str, Faults]) -> None:
    """The first execution worker's script stalls after its first bytes, so it never runs (as Firefox sometimes
    leaves a nested worker started beside others): a second worker is started after 10 s (runtime/rpc.js), the
    context works and bootTimings counts both workers."""
    base, faults = fault_server
    with fault_page(request, browser_name, base, faults) as page:
        fault = faults.inject(_files(base)["worker"], "stall", times=1)
        got = page.evaluate(START_JS, CASE_WAIT_MS)
        assert fault.hits == 1
        assert got.get("ok") == [1, 0, 3, 0], got
        assert page.evaluate("() => webnnPolyfill.bootTimings.workerStarts") == 2
        assert page.evaluate("() => window.unhandled") == []


def test_a_download_broken_off_once_is_tried_again(request: pytest.FixtureRequest, browser_name: str,
                                                   fault_server: tuple[str, Faults]) -> None:
    """pyodide.asm.wasm's first download is cut mid-body (as a flaky link, or Firefox's cache under load with
    several workers fetching it at once, does): the start begins again once (runtime/runtime.js BOOT_RETRIES), the
    context works and bootTimings says it took a second attempt.  Cut every time, the error still names the file
    (the wasm-dropped case above)."""
    base, faults = fault_server
    with fault_page(request, browser_name, base, faults) as page:
        fault = faults.inject(_files(base)["wasm"], "drop", times=1)
        got = page.evaluate(START_JS, CASE_WAIT_MS)
        if not fault.hits:
            pytest.skip("this browser never asked for pyodide.asm.wasm (answered from a cache)")
        assert got.get("ok") == [1, 0, 3, 0], got
        assert page.evaluate("() => webnnPolyfill.bootTimings.bootRetries") == 1
        assert page.evaluate("() => window.unhandled") == []
