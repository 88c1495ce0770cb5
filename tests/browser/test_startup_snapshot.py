"""Startup from a Pyodide memory snapshot (polyfill/src/boot/snapshot.js): on the first visit the worker's Pyodide
restores the build's NumPy snapshot (scripts/make_snapshot.mjs: NumPy imported, its extension modules relinked by
polyfill/src/boot/relink.js) and stores it, and the page's restores the build's bare one and stores it; the next visit
restores both from the Origin Private File System (Cache Storage with the switch: polyfill/src/boot/snapstore.js).
Without the NumPy snapshot (?numpysnapshot=0, or a damaged one) the worker restores the bare one and hands it to
the page; without any build snapshot the worker makes one.  A damaged stored snapshot is dropped (and replaced), a
damaged build asset is not used."""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

import pytest
from fault_cases import every_case
from pages import open_page
from stored_snapshots import page_function

from web.browsers import launch_args
from web.settings import Settings

pytestmark = pytest.mark.browser

BOOT_MS = 240_000

VISIT_JS = """async () => {
  const STORED = STORED_JS;
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
  const numpy = webnnPolyfill.bootTimings.numpySnapshot;
  // the snapshots new to the cache are stored in the background: wait for them before the next visit looks
  const want = [];
  if (['made', 'prebuilt'].includes(snapshot.page) || (!numpy && ['made', 'prebuilt'].includes(snapshot.worker))) {
    want.push('webnn-snapshot-v');
  }
  if (numpy && snapshot.worker === 'prebuilt') want.push('webnn-snapshot-numpy-');
  for (let i = 0; i < 200; i++) {
    const names = await STORED();
    if (want.every((w) => names.some((u) => u.includes(w)))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {y, snapshot: {...snapshot, numpy, wasm: webnnPolyfill.bootTimings.wasm,
    numpyWhy: webnnPolyfill.bootTimings.numpySnapshotWhy || null},
    imported: webnnPolyfill.bootTimings.imported};
}"""

# The snapshots' entries in either store (polyfill/src/boot/snapstore.js): OPFS file names (the keys, URI-encoded;
# writes under way left out) and Cache Storage keys.
STORED_JS = """async () => {
  const names = [];
  try {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('webnn-polyfill-pyodide-snapshot');
    for await (const name of dir.keys()) if (!name.includes('.part-')) names.push(decodeURIComponent(name));
  } catch (e) {}
  const cache = await caches.open('webnn-polyfill-pyodide-snapshot');
  return names.concat((await cache.keys()).map((r) => r.url));
}"""

# Damages the stored snapshot whose key holds `which` in ways its checks at read time do not see (it is stored again
# as a whole, consistent entry: stored_snapshots.py): the snapshot's magic number, Pyodide's build id, its length;
# 'torn': an OPFS file cut short, trailer and all, as a write cut off would leave it.  Resolves to the store it
# damaged.
DAMAGE = page_function("""
  const [mode, which] = arg;
  const [entry] = await snapshotEntries(which);
  if (mode === 'torn') {
    await putSnapshotFile(entry.store, entry.name, entry.file.slice(0, entry.file.length - 65536 - 8));
    return entry.store;
  }
  let bytes = snapshotBytes(entry);
  if (mode === 'magic') bytes[0] ^= 0xff;
  if (mode === 'build-id') bytes[20] ^= 0xff;
  if (mode === 'truncated') bytes = bytes.slice(0, bytes.length - 4096);
  await sealSnapshot(entry.store, entry.name, entry.key, bytes);
  return entry.store;
""")


VISIT = VISIT_JS.replace("STORED_JS", STORED_JS, 1)

# the page's switch, for its Pyodide and the worker's (a worker's own: its URL's ?prebuilt=0)
PREBUILT_OFF = "window.WEBNN_POLYFILL_CONFIG = {prebuiltSnapshot: false};"


def _visit(context: Any, url: str, expected_error: str = "", imported: Any = None, wasm: str = "handed",
           numpy_why: str = "") -> dict[str, Any]:
    """One visit's snapshots ({page, worker, numpy}); `numpy_why`: words bootTimings.numpySnapshotWhy must hold."""
    page, errors = open_page(context, url, BOOT_MS)
    result = page.evaluate(VISIT)
    page.close()
    if imported is not None:
        assert result["imported"] == imported, result
    # (Firefox reports a refused integrity check as a page error of its own)
    assert not [e for e in errors if not (expected_error and expected_error in e)], errors
    assert result["y"] == [11, 22, 33, 44]
    snapshot: dict[str, Any] = result["snapshot"]
    # the page's pyodide.asm.wasm: the worker's compiled module, in every browser (runtime.js handOverWhat)
    assert snapshot.pop("wasm") == wasm, result
    why = snapshot.pop("numpyWhy")
    assert (numpy_why in why if numpy_why else not snapshot["numpy"] or why is None), result
    return snapshot


# the stores a test runs with (polyfill/src/boot/snapstore.js): the Origin Private File System, and Cache Storage (the
# page's WEBNN_POLYFILL_CONFIG.opfs = false, the worker's ?opfs=0)
STORES = ("opfs", "cache")


@pytest.mark.fault
@pytest.mark.parametrize("store", STORES)
def test_second_visit_restores_the_snapshot_and_a_damaged_one_is_replaced(browser: Any, browser_name: str,
                                                                          dev_server: str, store: str) -> None:
    # the page's Pyodide instantiates the worker's compiled pyodide.asm.wasm and restores its snapshot; Firefox's
    # page, on a return visit, reads the stored one itself (runtime.js handOverWhat)
    chromium = browser_name == "chromium"
    again = "handed" if chromium else "loaded"
    context = browser.new_context()
    if store == "opfs":
        context.add_init_script(PREBUILT_OFF)  # a first visit that makes its snapshot
    else:
        context.add_init_script("window.WEBNN_POLYFILL_CONFIG = {prebuiltSnapshot: false, opfs: false, "
                                f"workerURL: '{dev_server}/polyfill/webnn-worker.js?opfs=0'}};")
    try:
        url = f"{dev_server}/test/smoke.html"
        bare = {"numpy": False}
        assert _visit(context, url) == {"page": "handed", "worker": "made", **bare}
        assert _visit(context, url) == {"page": again, "worker": "loaded", **bare}
        # 'torn': a file cut short with its trailer (OPFS only: a cached response is stored whole or not at all);
        # make test damages it one way, the whole fault suite (python -m bench faults) every way
        modes = ("magic", "build-id", "truncated") + (("torn",) if store == "opfs" else ())
        for mode in modes if every_case() else ("truncated",):
            assert _damage(context, url, mode, "webnn-snapshot-v") == store, mode
            assert _visit(context, url) == {"page": "handed", "worker": "made", **bare}, mode
            assert _visit(context, url) == {"page": again, "worker": "loaded", **bare}, mode
    finally:
        context.close()


def _damage(context: Any, url: str, mode: str, which: str) -> str:
    """Damages context's stored snapshot whose key holds `which` ('webnn-snapshot-v': the bare one,
    'webnn-snapshot-numpy-': the worker's NumPy snapshot); returns the store it was in ('opfs' or 'cache')."""
    page = context.new_page()
    page.goto(url)
    where: str = page.evaluate(DAMAGE, [mode, which])
    page.close()
    return where


def _asset(name: str = "pyodide-snapshot") -> tuple[dict[str, Any], bytes]:
    """A build snapshot as the dev server announces it, and its gzipped bytes (make snapshot builds it)."""
    settings = Settings.from_env()
    asset = settings.snapshot_asset(name)
    assert asset is not None, f"no {name} in polyfill/dist: run make snapshot"
    return asset, (settings.polyfill_dist / asset["url"].rsplit("/", 1)[1]).read_bytes()


def _worker_url(context: Any, dev_server: str, query: str) -> None:
    context.add_init_script(f"window.WEBNN_POLYFILL_CONFIG = {{workerURL: '{dev_server}/polyfill/webnn-worker.js?{query}'}};")


def test_first_visit_restores_the_build_snapshots(browser: Any, browser_name: str, dev_server: str) -> None:
    chromium = browser_name == "chromium"
    url = f"{dev_server}/test/smoke.html"
    _asset()
    _asset("pyodide-snapshot-numpy")
    context = browser.new_context()
    try:
        # the worker's NumPy snapshot, the page's bare one: each restores the build's and stores it; both come
        # with the core imported (the dev server's core wheel is the one `make snapshot` imported)
        core = {"page": ["py_core"], "worker": ["py_core"]}
        assert _visit(context, url, imported=core) == {"page": "prebuilt", "worker": "prebuilt", "numpy": True}
        assert _visit(context, url, imported=core) == {"page": "loaded", "worker": "loaded", "numpy": True}
        # a damaged cached NumPy snapshot is dropped: one that fails its checks before the restore gives way to
        # the build's again, one that fails in the restore (another build's) to the bare snapshot
        assert _damage(context, url, "magic", "webnn-snapshot-numpy-") == "opfs"
        assert _visit(context, url) == {"page": "loaded", "worker": "prebuilt", "numpy": True}
        # (the page's Pyodide started as the worker's module was compiled, before the worker fell back: it reads
        # its own)
        assert _damage(context, url, "build-id", "webnn-snapshot-numpy-") == "opfs"
        assert _visit(context, url) == {"page": "loaded", "worker": "loaded", "numpy": False}
        assert _visit(context, url) == {"page": "loaded", "worker": "prebuilt", "numpy": True}
    finally:
        context.close()
    # ?numpysnapshot=0: the worker restores the bare one and hands it to the page
    context = browser.new_context()
    _worker_url(context, dev_server, "numpysnapshot=0")
    try:
        # (the bare snapshot holds the page's part of the core: the worker imports the rest)
        assert _visit(context, url, imported=core) == {"page": "handed", "worker": "prebuilt", "numpy": False}
        assert _visit(context, url) == {"page": "handed" if chromium else "loaded", "worker": "loaded",
                                               "numpy": False}
    finally:
        context.close()
    # a worker that boots without snapshots (a switch in its environment) hands nothing over: the page restores the
    # build's itself
    context = browser.new_context()
    _worker_url(context, dev_server, "compiler=0")
    try:
        assert _visit(context, url, wasm="compiled", imported={"page": ["py_core"], "worker": []}) == {
            "page": "prebuilt", "worker": "none", "numpy": False}
    finally:
        context.close()
    # ?coresnapshot=0 (worker) and coreSnapshot: false (page): the snapshots' core dropped, imported from its files
    context = browser.new_context()
    _worker_url(context, dev_server, "coresnapshot=0")
    context.add_init_script("window.WEBNN_POLYFILL_CONFIG.coreSnapshot = false;")
    try:
        assert _visit(context, url, imported={"page": [], "worker": []}) == {
            "page": "prebuilt", "worker": "prebuilt", "numpy": True}
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


def _serve_damaged(context: Any, mode: str, asset: dict[str, Any], gz: bytes, key: str = "snapshot") -> list[str]:
    """Routes context's snapshot asset (the manifest's `key`) to a damaged copy (the manifest names its sha256 where
    the mode says; 'relink': the asset as built, its relink record off by one table slot); returns the list of URLs
    served from it."""
    body = _damaged(mode, gz) if mode not in ("missing", "relink") else gz if mode == "relink" else b""
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
        assert m[key]["sha256"] == asset["sha256"]
        if mode in ("truncated", "build-id"):
            m[key]["sha256"] = hashlib.sha256(body).hexdigest()
        if mode == "relink":
            m[key]["relink"]["tableBefore"] += 1
        route.fulfill(response=response, body=json.dumps(m))

    context.route(f"**/{asset['url'].rsplit('/', 1)[1]}", snapshot)
    context.route("**/core/manifest.json", manifest)
    return served


def test_a_damaged_build_snapshot_boots_as_without_it(browser: Any, dev_server: str) -> None:
    asset, gz = _asset()
    for mode in ("flipped", "truncated", "build-id", "missing"):
        context = browser.new_context()
        served = _serve_damaged(context, mode, asset, gz)
        try:
            # the worker boots as without it and makes one, which the page stores
            refused = "integrity" if mode in ("flipped", "missing") else ""
            visit = _visit(context, f"{dev_server}/test/smoke.html", refused)
            # the worker restores the NumPy snapshot; the page, refused the bare one, starts CPython and stores it
            assert visit == {"page": "made", "worker": "prebuilt", "numpy": True}, mode
            assert served, mode
        finally:
            context.unroute_all(behavior="ignoreErrors")
            context.close()


# what bootTimings.numpySnapshotWhy says for each damage mode
NUMPY_WHY = {"flipped": "did not restore", "truncated": "did not restore", "build-id": "did not restore",
             "missing": "did not restore", "relink": "function table"}


def test_a_damaged_numpy_snapshot_boots_from_the_bare_one(browser: Any, browser_name: str, dev_server: str) -> None:
    asset, gz = _asset("pyodide-snapshot-numpy")
    # A browser of its own: each mode leaves a refused Pyodide (up to a 30 MB WebAssembly memory) to the garbage
    # collector, which the browser shared by the whole run would accumulate.
    own = browser.browser_type.launch(**launch_args(browser_name))
    try:
        # 'relink': a record whose table does not match this Pyodide's is refused before anything runs (relink.js)
        for mode in ("flipped", "truncated", "build-id", "missing", "relink"):
            context = own.new_context()
            served = _serve_damaged(context, mode, asset, gz, "numpySnapshot")
            try:
                refused = "integrity" if mode in ("flipped", "missing") else ""
                visit = _visit(context, f"{dev_server}/test/smoke.html", refused, numpy_why=NUMPY_WHY[mode])
                # the worker restores the bare one; the page's Pyodide, started as the worker's module was compiled
                # (it was to restore the NumPy snapshot), the bare one itself, and stores it: a worker that falls back
                # after that store restores the page's copy (`loaded`), before it the build's
                worker = visit.pop("worker")
                assert visit == {"page": "prebuilt", "numpy": False} and worker in ("prebuilt", "loaded"), (mode, worker)
                assert served, mode
            finally:
                context.unroute_all(behavior="ignoreErrors")
                context.close()
    finally:
        own.close()
