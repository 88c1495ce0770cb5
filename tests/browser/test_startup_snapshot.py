"""Startup from a Pyodide memory snapshot (polyfill/src/snapshot.js): on the first visit the worker's Pyodide
restores the build's (scripts/make_snapshot.mjs) or, without it, makes one; either is stored in Cache Storage and
handed to the page's Pyodide; the next visit restores it in the worker, which hands it over again; a damaged one is
dropped (the worker boots normally and stores a fresh one), and so is a damaged build asset."""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

import pytest
from pages import open_page

from web.settings import Settings

pytestmark = pytest.mark.browser

BOOT_MS = 240_000

VISIT = """async () => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [4]};
  const x = b.input('x', desc);
  const graph = await b.build({y: b.add(x, b.constant(desc, new Float32Array([1, 2, 3, 4])))});
  const xt = await ctx.createTensor({...desc, writable: true});
  const yt = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(xt, new Float32Array([10, 20, 30, 40]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  const y = Array.from(new Float32Array(await ctx.readTensor(yt)));
  const snapshot = webnnPolyfill.bootTimings.snapshot;
  // the worker stores its snapshot in the background: wait for it before the next visit looks
  const cache = await caches.open('webnn-polyfill-pyodide-snapshot');
  for (let i = 0; ['made', 'prebuilt'].includes(snapshot.worker) && i < 200 && !(await cache.keys()).length; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return {y, snapshot: {...snapshot, wasm: webnnPolyfill.bootTimings.wasm}};
}"""

DAMAGE = """async (mode) => {
  const cache = await caches.open('webnn-polyfill-pyodide-snapshot');
  const [key] = await cache.keys();
  let bytes = new Uint8Array(await (await cache.match(key)).arrayBuffer());
  if (mode === 'magic') bytes[0] ^= 0xff;
  if (mode === 'build-id') bytes[20] ^= 0xff;
  if (mode === 'truncated') bytes = bytes.slice(0, bytes.length - 4096);
  await cache.put(key, new Response(bytes, {headers: {'x-snapshot-length': String(bytes.length)}}));
}"""


# the page's switch, for its Pyodide and the worker's (a worker's own: its URL's ?prebuilt=0)
PREBUILT_OFF = "window.WEBNN_POLYFILL_CONFIG = {prebuiltSnapshot: false};"


def _visit(context: Any, url: str, wasms: set[str], expected_error: str = "") -> dict[str, Any]:
    page, errors = open_page(context, url, BOOT_MS)
    result = page.evaluate(VISIT)
    page.close()
    # (Firefox reports a refused integrity check as a page error of its own)
    assert not [e for e in errors if not (expected_error and expected_error in e)], errors
    assert result["y"] == [11, 22, 33, 44]
    snapshot: dict[str, Any] = result["snapshot"]
    assert snapshot.pop("wasm") in wasms, result
    return snapshot


def test_second_visit_restores_the_snapshot_and_a_damaged_one_is_replaced(browser: Any, browser_name: str,
                                                                          dev_server: str) -> None:
    # the page's Pyodide instantiates the worker's compiled pyodide.asm.wasm and restores its snapshot; Firefox's
    # page compiles its own and, on a return visit, reads the cache itself (runtime.js handOverWhat)
    chromium = browser_name == "chromium"
    wasms = {"handed"} if chromium else {"compiled"}
    again = "handed" if chromium else "loaded"
    context = browser.new_context()
    context.add_init_script(PREBUILT_OFF)  # a first visit that makes its snapshot
    try:
        url = f"{dev_server}/test/smoke.html"
        assert _visit(context, url, wasms) == {"page": "handed", "worker": "made"}
        assert _visit(context, url, wasms) == {"page": again, "worker": "loaded"}
        for mode in ("magic", "build-id", "truncated"):
            page = context.new_page()
            page.goto(url)
            page.evaluate(DAMAGE, mode)
            page.close()
            assert _visit(context, url, wasms) == {"page": "handed", "worker": "made"}, mode
            assert _visit(context, url, wasms) == {"page": again, "worker": "loaded"}, mode
    finally:
        context.close()


def _asset() -> tuple[dict[str, Any], bytes]:
    """The build's snapshot as the dev server announces it, and its gzipped bytes (make snapshot builds it)."""
    settings = Settings.from_env()
    asset = settings.snapshot_asset()
    assert asset is not None, "no Pyodide snapshot in polyfill/dist: run make snapshot"
    return asset, (settings.polyfill_dist / asset["url"].rsplit("/", 1)[1]).read_bytes()


def test_first_visit_restores_the_build_snapshot(browser: Any, browser_name: str, dev_server: str) -> None:
    chromium = browser_name == "chromium"
    wasms = {"handed"} if chromium else {"compiled"}
    url = f"{dev_server}/test/smoke.html"
    _asset()
    context = browser.new_context()
    try:
        assert _visit(context, url, wasms) == {"page": "handed", "worker": "prebuilt"}
        # stored like a snapshot made on the first visit
        assert _visit(context, url, wasms) == {"page": "handed" if chromium else "loaded", "worker": "loaded"}
    finally:
        context.close()
    # a worker that boots without snapshots (a switch in its environment) hands nothing over: the page restores the
    # build's itself
    context = browser.new_context()
    context.add_init_script(f"window.WEBNN_POLYFILL_CONFIG = {{workerURL: '{dev_server}/polyfill/webnn-worker.js?compiler=0'}};")
    try:
        assert _visit(context, url, {"compiled"}) == {"page": "prebuilt", "worker": "none"}
    finally:
        context.close()


def _damaged(mode: str, gz: bytes) -> bytes:
    if mode == "flipped":  # its sha256 no longer matches: the fetch's integrity check refuses it
        return gz[:len(gz) // 2] + bytes([gz[len(gz) // 2] ^ 0x40]) + gz[len(gz) // 2 + 1:]
    if mode == "truncated":  # served with its own sha256: the inflate finds it short
        return gz[:-4096]
    raw = bytearray(gzip.decompress(gz))
    raw[20] ^= 0xFF  # (with its own sha256) another Pyodide build's: Pyodide's build-id check refuses it
    return gzip.compress(bytes(raw), compresslevel=1)


def _serve_damaged(context: Any, mode: str, asset: dict[str, Any], gz: bytes) -> list[str]:
    """Routes context's snapshot asset to a damaged copy (the manifest names its sha256 where the mode says);
    returns the list of URLs served from it."""
    body = _damaged(mode, gz) if mode != "missing" else b""
    served: list[str] = []

    def snapshot(route: Any) -> None:
        served.append(route.request.url)
        if body:
            route.fulfill(status=200, body=body, headers={"content-type": "application/gzip"})
        else:
            route.fulfill(status=404, body="not built")

    def manifest(route: Any) -> None:
        response = route.fetch()
        m = json.loads(response.text())
        assert m["snapshot"]["sha256"] == asset["sha256"]
        if mode in ("truncated", "build-id"):
            m["snapshot"]["sha256"] = hashlib.sha256(body).hexdigest()
        route.fulfill(response=response, body=json.dumps(m))

    context.route("**/pyodide-snapshot.bin.gz", snapshot)
    context.route("**/core/manifest.json", manifest)
    return served


def test_a_damaged_build_snapshot_boots_as_without_it(browser: Any, browser_name: str, dev_server: str) -> None:
    wasms = {"handed"} if browser_name == "chromium" else {"compiled"}
    asset, gz = _asset()
    for mode in ("flipped", "truncated", "build-id", "missing"):
        context = browser.new_context()
        served = _serve_damaged(context, mode, asset, gz)
        try:
            # the worker boots as without it and makes one, which the page stores
            refused = "integrity" if mode in ("flipped", "missing") else ""
            visit = _visit(context, f"{dev_server}/test/smoke.html", wasms, refused)
            assert visit == {"page": "handed", "worker": "made"}, mode
            assert served, mode
        finally:
            context.unroute_all(behavior="ignoreErrors")
            context.close()
