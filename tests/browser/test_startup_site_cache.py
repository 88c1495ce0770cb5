"""Site-packages kept in Cache Storage (polyfill/src/sitecache.js): the first visit unzips the wheels and stores
each Pyodide's site-packages with the .pyc CPython wrote while importing (the worker's: NumPy and the core; the
page's: the core); the next visit restores them instead of installing the wheels; a damaged entry (its bytes no
longer match its sha256, or they do but do not parse) is dropped, the wheels are installed again and a fresh entry
is stored; ?sitecache=0 neither reads nor stores one; ?stdlibcode=0 stores them without the standard library's
compiled code."""

from __future__ import annotations

from typing import Any

import pytest
from pages import open_page

pytestmark = pytest.mark.browser

BOOT_MS = 240_000
CACHE = "webnn-polyfill-site"
STDLIB_CODE = "_webnn_stdlib_code.marshal"

# (want: wait, with the page open, until that many entries are stored: the worker stores its own in the
# background after its imports, and a page closed at once ends the worker with it)
VISIT = """async (want) => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [4]};
  const x = b.input('x', desc);
  const graph = await b.build({y: b.mul(b.add(x, b.constant(desc, new Float32Array([1, 2, 3, 4]))), x)});
  const xt = await ctx.createTensor({...desc, writable: true});
  const yt = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(xt, new Float32Array([10, 20, 30, 40]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  const y = Array.from(new Float32Array(await ctx.readTensor(yt)));
  const t = webnnPolyfill.bootTimings;
  const cache = await caches.open('@CACHE@');
  for (let i = 0; i < 400 && (await cache.keys()).length < want; i++) await new Promise((r) => setTimeout(r, 50));
  return {y, numpy: t.numpy, wheels: t.wheels};
}""".replace("@CACHE@", CACHE)

# the entries stored (polled: both Pyodides store theirs in the background), each as its files' paths, and
# whether its bytes match the sha256 it carries
ENTRIES = """async (want) => {
  const cache = await caches.open('@CACHE@');
  for (let i = 0; i < 400 && (await cache.keys()).length < want; i++) await new Promise((r) => setTimeout(r, 50));
  const out = {};
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    const bytes = new Uint8Array(await response.arrayBuffer());
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)),
      (v) => v.toString(16).padStart(2, '0')).join('');
    const n = new DataView(bytes.buffer).getUint32(4, true);
    const paths = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).map(([p]) => p);
    out[request.url] = {paths, intact: digest === response.headers.get('x-site-sha256')};
  }
  return out;
}""".replace("@CACHE@", CACHE)

DAMAGE = """async ({key, mode}) => {
  const cache = await caches.open('@CACHE@');
  const response = await cache.match(key);
  let bytes = new Uint8Array(await response.arrayBuffer());
  let sha256 = response.headers.get('x-site-sha256');
  if (mode === 'flipped') bytes[bytes.length - 1000] ^= 0x01;
  if (mode === 'unparsable') {
    // consistent with its sha256, but not an entry: the parse must refuse it
    bytes = bytes.slice(0, bytes.length - 1);
    sha256 = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)),
      (v) => v.toString(16).padStart(2, '0')).join('');
  }
  await cache.put(key, new Response(bytes, {headers: {'x-site-sha256': sha256}}));
}""".replace("@CACHE@", CACHE)


def _plain(url: str) -> str:
    """A page of the same origin without the polyfill (Cache Storage is per origin)."""
    return url.split("/perf/")[0] + "/api/health"


def _visit(context: Any, url: str, want: int = 0) -> dict[str, Any]:
    page, errors = open_page(context, url, BOOT_MS)
    result = page.evaluate(VISIT, want)
    page.close()
    assert not errors
    assert result["y"] == [110, 440, 990, 1760]
    return result


def _entries(context: Any, url: str, want: int) -> dict[str, Any]:
    page, _ = open_page(context, _plain(url), BOOT_MS)
    out: dict[str, Any] = page.evaluate(ENTRIES, want)
    page.close()
    return out


def test_site_packages_come_back_from_the_cache_and_a_damaged_entry_is_replaced(browser: Any,
                                                                                dev_server: str) -> None:
    url = f"{dev_server}/perf/"
    context = browser.new_context()
    try:
        first = _visit(context, url, 2)
        assert first["numpy"] == "unzipped"
        assert first["wheels"] == {"page": "unzipped", "worker": "unzipped"}
        entries = _entries(context, url, 2)
        assert len(entries) == 2 and all(e["intact"] for e in entries.values())
        worker_key = max(entries, key=lambda k: len(entries[k]["paths"]))
        worker, page = entries[worker_key]["paths"], next(e for k, e in entries.items() if k != worker_key)["paths"]
        # the bytecode of what each imported, beside every file of its wheels
        assert "numpy/_core/__pycache__/numeric.cpython-312.pyc" in worker
        assert "numpy/random/_generator.cpython-312-wasm32-emscripten.so" in worker  # not imported, still there
        assert any(p.startswith("py_core/bridge/__pycache__/pyodide_glue.") for p in worker)
        assert any(p.startswith("py_core/bridge/__pycache__/builder_host.") for p in page)
        assert not any(p.startswith("numpy/") for p in page)
        # and the standard library's code both imported from python_stdlib.zip (polyfill/src/stdlibpyc.js)
        assert STDLIB_CODE in worker and STDLIB_CODE in page

        again = _visit(context, url)
        assert again["numpy"] == "cached"
        assert again["wheels"] == {"page": "cached", "worker": "cached"}

        # bytes that no longer match its sha256; bytes that match a recomputed one but do not parse
        for mode in ("flipped", "unparsable"):
            damage, _ = open_page(context, _plain(url), BOOT_MS)
            damage.evaluate(DAMAGE, {"key": worker_key, "mode": mode})
            damage.close()
            after = _visit(context, url, 2)
            assert after["numpy"] == "unzipped", mode  # dropped, installed from the wheels
            assert after["wheels"] == {"page": "cached", "worker": "unzipped"}, mode
            stored = _entries(context, url, 2)
            assert worker_key in stored and stored[worker_key]["intact"], mode  # stored afresh
        assert _visit(context, url)["numpy"] == "cached"
    finally:
        context.close()


def test_sitecache_0_neither_reads_nor_stores(browser: Any, dev_server: str) -> None:
    context = browser.new_context()
    try:
        url = f"{dev_server}/perf/?sitecache=0"
        for _ in range(2):
            result = _visit(context, url)
            assert result["numpy"] == "unzipped"
            assert result["wheels"] == {"page": "unzipped", "worker": "unzipped"}
        page, _ = open_page(context, _plain(url), BOOT_MS)
        assert page.evaluate(f"async () => (await (await caches.open('{CACHE}')).keys()).length") == 0
        page.close()
    finally:
        context.close()


def test_stdlibcode_0_stores_no_standard_library_code(browser: Any, dev_server: str) -> None:
    context = browser.new_context()
    try:
        url = f"{dev_server}/perf/?stdlibcode=0"
        assert _visit(context, url, 2)["numpy"] == "unzipped"
        entries = _entries(context, url, 2)
        assert len(entries) == 2 and not any(STDLIB_CODE in e["paths"] for e in entries.values())
        assert _visit(context, url)["numpy"] == "cached"
    finally:
        context.close()
