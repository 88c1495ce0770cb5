"""The page side of hardening: no WebNN on insecure origins, and no wheel installed whose bytes
do not match their sha256.

An insecure origin needs a host name that is not loopback (http://127.0.0.1 and http://localhost are secure
contexts): the browser resolves `insecure.test` to 127.0.0.1 (Chromium's --host-resolver-rules, Firefox's
network.dns.localDomains), so the page comes from the real dev server on an origin the browser does not trust.
The tampered wheel is the dev server's real core wheel with one byte flipped on its way to the browser
(a Playwright route), for the page's and the worker's fetches alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import POLYFILL_BOOT, booted_page, open_page

pytestmark = pytest.mark.browser

BOOT_MS = 240_000
INSECURE_HOST = "insecure.test"

PROBE_JS = r"""
async () => {
  const P = webnnPolyfill;
  let error = null;
  try { await P.ml.createContext(); } catch (e) { error = {name: e.name, message: e.message}; }
  let bootError = null;
  try { await P.boot(); } catch (e) { bootError = e.name; }
  return {secure: isSecureContext, origin: location.origin, ml: 'ml' in navigator,
          globals: ['ML', 'MLContext', 'MLGraph', 'MLGraphBuilder', 'MLOperand', 'MLTensor']
            .filter((n) => n in globalThis && globalThis[n] === P[n]),
          installed: P.installed, reason: P.unavailableReason, error, bootError};
}
"""


def _insecure_launch_args(base: dict[str, Any], browser_name: str) -> dict[str, Any]:
    """The offline launch arguments plus a name for 127.0.0.1 that is not loopback to the browser."""
    kw = dict(base)
    if browser_name == "chromium":
        kw["args"] = [f"--host-resolver-rules=MAP {INSECURE_HOST} 127.0.0.1, MAP * ~NOTFOUND, "
                      "EXCLUDE localhost, EXCLUDE 127.0.0.1" if a.startswith("--host-resolver-rules=") else a
                      for a in kw.get("args", [])]
    else:
        kw["firefox_user_prefs"] = {**kw.get("firefox_user_prefs", {}), "network.dns.localDomains": INSECURE_HOST}
    return kw


@pytest.fixture(scope="module")
def insecure_browser(browser_type: Any, browser_type_launch_args: dict[str, Any], browser_name: str
                     ) -> Iterator[Any]:
    browser = browser_type.launch(**_insecure_launch_args(browser_type_launch_args, browser_name))
    yield browser
    browser.close()


def test_insecure_context_gets_no_webnn(insecure_browser: Any, dev_server: str) -> None:
    port = dev_server.rsplit(":", 1)[1]
    context = insecure_browser.new_context()
    try:
        page, errors = open_page(context, f"http://{INSECURE_HOST}:{port}/test/smoke.html", BOOT_MS)
        insecure = page.evaluate(PROBE_JS)
        # the same browser on the same server by its loopback address: secure, installed (no boot needed)
        page.goto(f"{dev_server}/test/smoke.html")
        secure = page.evaluate("() => ({secure: isSecureContext, installed: webnnPolyfill.installed, "
                               "reason: webnnPolyfill.unavailableReason, ml: navigator.ml === webnnPolyfill.ml})")
    finally:
        context.close()
    assert not errors
    assert insecure["secure"] is False and insecure["origin"] == f"http://{INSECURE_HOST}:{port}"
    assert insecure["ml"] is False and insecure["globals"] == [] and insecure["installed"] is False
    assert "secure context" in insecure["reason"] and INSECURE_HOST in insecure["reason"]
    assert insecure["error"] == {"name": "SecurityError", "message": insecure["reason"]}
    assert insecure["bootError"] == "SecurityError"
    assert secure == {"secure": True, "installed": True, "reason": None, "ml": True}


def test_tampered_core_wheel_is_an_error(browser: Any, dev_server: str) -> None:
    context = browser.new_context()
    tampered: list[str] = []

    def flip_one_byte(route: Any) -> None:
        response = route.fetch()
        body = bytearray(response.body())
        body[len(body) // 2] ^= 0x40
        tampered.append(route.request.url)
        route.fulfill(response=response, body=bytes(body))

    context.route("**/core/*/*.whl", flip_one_byte)
    try:
        page, errors = open_page(context, f"{dev_server}/test/smoke.html", BOOT_MS)
        out = page.evaluate(r"""async () => {
          try { await navigator.ml.createContext(); return null; } catch (e) { return {name: e.name, message: e.message}; }
        }""")
    finally:
        context.unroute_all(behavior="ignoreErrors")
        context.close()
    assert not errors
    assert tampered, "the core wheel was never fetched"
    wheel = tampered[0].rsplit("/", 1)[1]
    assert out is not None, "createContext() resolved with a tampered core wheel"
    assert out["name"] == "NotSupportedError"
    assert "integrity check failed" in out["message"] and wheel in out["message"], out["message"]
    assert "was not installed" in out["message"]


@pytest.fixture(scope="module")
def quiet_page(browser: Any, dev_server: str) -> Iterator[Any]:
    """A booted page of its own: on the shared one, objects earlier tests left to the garbage collector are released
    in the worker at any time, moving the figures this module compares."""
    with booted_page(browser, f"{dev_server}/test/smoke.html", POLYFILL_BOOT) as page:
        yield page


def test_worker_stats_report_memory_that_a_destroyed_tensor_gives_back(quiet_page: Any) -> None:
    """workerStats()'s memory figures (what `python -m bench soak` watches) move with a 16 MiB tensor's life."""
    out = quiet_page.evaluate(r"""async () => {
      const ctx = window.__ctx, P = webnnPolyfill;
      const desc = {dataType: 'float32', shape: [1024, 4096], readable: true, writable: true};
      const before = await P.workerStats();
      const t = await ctx.createTensor(desc);
      ctx.writeTensor(t, new Float32Array(1024 * 4096).fill(1));
      await ctx.readTensor(t);
      const during = await P.workerStats();
      t.destroy();
      const after = await P.workerStats();
      return {before, during, after};
    }""")
    before, during, after = out["before"], out["during"], out["after"]
    for stats in (before, during, after):
        assert stats["wasmBytes"] >= stats["mallocArena"] > stats["mallocInUse"] > 0, stats
        assert stats["pyObjects"] > 1000, stats
    mib = 1 << 20
    assert during["mallocInUse"] - before["mallocInUse"] >= 16 * mib, out
    assert during["tensors"] == before["tensors"] + 1 == after["tensors"] + 1
    assert abs(after["mallocInUse"] - before["mallocInUse"]) < mib, out


def test_worker_stats_break_the_engine_bytes_down_and_give_a_graph_s_weights_back(quiet_page: Any) -> None:
    """workerStats()'s breakdown: a graph with a 4 MiB constant filter holds it (packed or as given) while it lives,
    a destroyed graph gives every byte back; the wasm memory holds what the engine holds; the page's Pyodide runs."""
    out = quiet_page.evaluate(r"""async () => {
      const ctx = window.__ctx, P = webnnPolyfill;
      const before = await P.workerStats();
      const b = new MLGraphBuilder(ctx);
      const x = b.input('x', {dataType: 'float32', shape: [1, 64, 8, 8]});
      // 256 x 64 x 8 x 8 float32: 4 MiB of weights
      const w = b.constant({dataType: 'float32', shape: [256, 64, 8, 8]}, new Float32Array(256 * 64 * 64).fill(0.5));
      const graph = await b.build({y: b.conv2d(x, w)});
      const during = await P.workerStats();
      graph.destroy();
      const after = await P.workerStats();
      return {before, during, after};
    }""")
    before, during, after = out["before"], out["during"], out["after"]
    mib = 1 << 20
    keys = ("constantBytes", "weightBytes", "planBytes", "tensorBytes")
    for stats in (before, during, after):
        assert stats["engineBytes"] == sum(stats[k] for k in keys), stats
        assert stats["wasmBytes"] > stats["engineBytes"], stats
        assert stats["pageHeapBytes"] > 0, stats
    held = lambda s: s["constantBytes"] + s["weightBytes"]  # noqa: E731
    assert held(during) - held(before) >= 4 * mib, out
    assert during["graphs"] == before["graphs"] + 1 == after["graphs"] + 1
    assert after["engineBytes"] == before["engineBytes"], out
