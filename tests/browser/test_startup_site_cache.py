"""Site-packages kept in Cache Storage (polyfill/src/boot/sitecache.js): the first visit unzips the wheels and stores
one entry per wheel and Pyodide with the .pyc CPython wrote while importing (the worker's: NumPy's, stored right
after `import numpy`, and the core's; the page's: the core's); the next visit restores them instead of installing
the wheels, also when the first closed as soon as its graph had run (the bench's visits), and where the worker's
snapshot brings NumPy imported (relink.js) under a scope of their own (no .pyc of NumPy); a damaged entry (its
bytes no longer match its sha256, or they do but do not parse) is dropped, that wheel is installed again and a
fresh entry is stored; ?sitecache=0 neither reads nor stores one.  The core's entries also hold the standard
library's code compiled during the imports (polyfill/src/boot/stdlibpyc.js), which the next visit's Pyodides use;
?stdlibcode=0 stores the entries without it, under keys of their own."""

from __future__ import annotations

from typing import Any

import pytest
from pages import open_page

pytestmark = pytest.mark.browser

BOOT_MS = 240_000
CACHE = "webnn-polyfill-site"
STDLIB_CODE = "_webnn_stdlib_code.marshal"

# (want: wait, with the page open, until that many entries are stored: each is stored in the background, and a
# page closed at once ends the worker with it)
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
  return {y, numpy: t.numpy, wheels: t.wheels, stdlibCode: t.stdlibCode, numpySnapshot: t.numpySnapshot};
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
  // (its other headers kept: the key it names is its own)
  await cache.put(key, new Response(bytes, {headers: {...Object.fromEntries(response.headers), 'x-site-sha256': sha256}}));
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
    # NumPy and the core imported after the bare snapshot's restore (?numpysnapshot=0, ?coresnapshot=0), as where
    # the build's snapshots are not there or not usable: what those imports compile goes into the entries
    url = f"{dev_server}/perf/?numpysnapshot=0&coresnapshot=0"
    context = browser.new_context()
    try:
        # closed as soon as its graph has run, as the bench's cold visit is: NumPy's entry, the big one, is
        # stored from right after `import numpy`
        first = _visit(context, url)
        assert first["numpy"] == "unzipped"
        assert first["wheels"] == {"page": "unzipped", "worker": "unzipped"}
        again = _visit(context, url)
        assert again["numpy"] == "cached"
        assert again["wheels"] == {"page": "cached", "worker": "cached"}

        entries = _entries(context, url, 3)
        assert len(entries) == 3 and all(e["intact"] for e in entries.values())
        numpy_key = next(k for k, e in entries.items() if "numpy/__init__.pyc" in e["paths"])
        core_key = next(k for k in entries if "-worker-" in k and k != numpy_key)
        page_key = next(k for k in entries if "-page-" in k)
        numpy, core, page = (entries[k]["paths"] for k in (numpy_key, core_key, page_key))
        # the bytecode of what each imported, beside every file of its wheel but those no import reads (NumPy's
        # wheel is bytecode already: make pyodide)
        assert "numpy/_core/numeric.pyc" in numpy and not any("__pycache__" in p for p in numpy)
        assert "numpy/polynomial/chebyshev.pyc" in numpy  # not imported, still there
        assert not any(p.endswith((".pyi", ".h")) for p in numpy)  # type stubs, C headers
        assert any(p.startswith("numpy-") and p.endswith(".dist-info/METADATA") for p in numpy)
        assert any(p.startswith("py_core/bridge/__pycache__/pyodide_glue.") for p in core)
        assert any(p.startswith("py_core/bridge/__pycache__/builder_host.") for p in page)
        assert not any(p.startswith("numpy") for p in core + page)
        # the standard library's code compiled during NumPy's and the core's imports, in the core's entries, and
        # what the second visit's Pyodides took from them instead of compiling (page: its core's imports)
        assert STDLIB_CODE in core and STDLIB_CODE in page and STDLIB_CODE not in numpy
        assert again["stdlibCode"]["worker"] >= 20 and again["stdlibCode"]["page"] >= 10, again["stdlibCode"]
        assert first["stdlibCode"] == {"page": 0, "worker": 0}

        # bytes that no longer match its sha256; bytes that match a recomputed one but do not parse
        for mode in ("flipped", "unparsable"):
            damage, _ = open_page(context, _plain(url), BOOT_MS)
            damage.evaluate(DAMAGE, {"key": numpy_key, "mode": mode})
            damage.close()
            after = _visit(context, url, 3)
            assert after["numpy"] == "unzipped", mode  # dropped, installed from the wheel
            assert after["wheels"] == {"page": "cached", "worker": "cached"}, mode  # the core's entries kept
            assert after["stdlibCode"]["worker"] >= 20, mode  # with the standard library's code
            stored = _entries(context, url, 3)
            assert numpy_key in stored and stored[numpy_key]["intact"], mode  # stored afresh
            assert STDLIB_CODE not in stored[numpy_key]["paths"] and STDLIB_CODE in stored[core_key]["paths"], mode
        assert _visit(context, url)["numpy"] == "cached"
    finally:
        context.close()


def test_with_the_numpy_snapshot_the_entries_are_kept_apart(browser: Any, dev_server: str) -> None:
    """Where the worker's snapshot brings NumPy imported (the default), nothing compiles NumPy's .pyc: its entries
    are stored and restored under a scope of their own, never given to a boot that imports NumPy."""
    url = f"{dev_server}/perf/"
    context = browser.new_context()
    try:
        first = _visit(context, url, 3)
        assert first["numpySnapshot"] is True and first["numpy"] == "unzipped"
        again = _visit(context, url)
        assert again["numpySnapshot"] is True and again["numpy"] == "cached"
        assert again["wheels"] == {"page": "cached", "worker": "cached"}
        entries = _entries(context, url, 3)
        worker = [k for k in entries if "-worker-" in k]
        assert len(worker) == 2 and all("-worker-numpysnap-" in k for k in worker), list(entries)
        numpy = next(e["paths"] for k, e in entries.items() if "numpy/__init__.pyc" in e["paths"])
        assert not any("__pycache__" in p for p in numpy)
        assert "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so" in numpy
        # a boot that imports NumPy does not take that entry: it installs NumPy and stores its own
        assert _visit(context, f"{url}?numpysnapshot=0", 5)["numpy"] == "unzipped"
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
        assert _visit(context, url, 3)["numpy"] == "unzipped"
        entries = _entries(context, url, 3)
        assert len(entries) == 3 and not any(STDLIB_CODE in e["paths"] for e in entries.values())
        again = _visit(context, url)
        assert again["numpy"] == "cached" and again["stdlibCode"] == {"page": 0, "worker": 0}
        # a default visit after them stores entries of its own (with the code) rather than restoring those
        default = _visit(context, f"{dev_server}/perf/", 6)
        assert default["numpy"] == "unzipped" and default["stdlibCode"] == {"page": 0, "worker": 0}
        entries = _entries(context, url, 6)
        assert len(entries) == 6 and sum(STDLIB_CODE in e["paths"] for e in entries.values()) == 2
    finally:
        context.close()


def test_numpy_files_come_after_the_init_reply_or_before_it(browser: Any, dev_server: str) -> None:
    """Where NumPy comes imported with the worker's snapshot and its files are not cached, they are written after
    the worker's init reply (every request waits for them: lazy imports read them) and their entry is stored;
    ?defernumpy=0 writes them before the reply (Firefox's default), =1 after it.  Both ways the next visit restores
    the entry."""
    for query in ("?defernumpy=1", "?defernumpy=0"):
        url = f"{dev_server}/perf/{query}"
        context = browser.new_context()
        try:
            first = _visit(context, url, 3)
            assert first["numpySnapshot"] is True and first["numpy"] == "unzipped", query
            again = _visit(context, url)
            assert again["numpySnapshot"] is True and again["numpy"] == "cached", query
        finally:
            context.close()


FAILED_START = """async () => {
  try {
    await navigator.ml.createContext();
    return {created: true};
  } catch (e) {
    return {created: false, error: `${e.name}: ${e.message}`};
  }
}"""


def test_numpy_files_that_cannot_be_installed_fail_the_first_request_clearly(browser: Any, dev_server: str) -> None:
    """NumPy's wheel missing after the worker's init reply: createContext() rejects with the reason (it never hands
    out a context whose engine runs without NumPy's files; no hang, no Python text)."""
    context = browser.new_context()
    context.route("**/numpy-*.whl", lambda route: route.fulfill(status=404, body="gone"))
    try:
        page, _ = open_page(context, f"{dev_server}/perf/?defernumpy=1", BOOT_MS)
        got = page.evaluate(FAILED_START)
        assert not got["created"], got
        assert got["error"].startswith("NotSupportedError"), got
        assert "numpy-" in got["error"] and "404" in got["error"], got
        assert "Traceback" not in got["error"], got
        page.close()
    finally:
        context.close()
