"""Startup from a Pyodide memory snapshot (polyfill/src/snapshot.js): on the first visit the worker's Pyodide
makes one, stores it in Cache Storage and hands it to the page's Pyodide; the next visit restores it in the
worker, which hands it over again; a damaged one is dropped (the worker boots normally and stores a fresh
one)."""

from __future__ import annotations

from typing import Any

import pytest
from pages import open_page

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
  for (let i = 0; snapshot.worker === 'made' && i < 200 && !(await cache.keys()).length; i++) {
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


def _visit(context: Any, url: str, wasms: set[str]) -> dict[str, Any]:
    page, errors = open_page(context, url, BOOT_MS)
    result = page.evaluate(VISIT)
    page.close()
    assert not errors
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
