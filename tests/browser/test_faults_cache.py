"""Caches that can be wrong (polyfill/src/boot/snapstore.js, snapshot.js, sitecache.js, cachelog.js): a stored
snapshot altered from outside between two visits (cut short, one bit or 1024 bits flipped, a py_core constant
changed, another entry's file under its name, an older polyfill's format) is dropped before it is restored, with a
console note and `bootTimings.cache.dropped` saying which and why; the visit boots the clean path and gives the
right values, and it stores a good snapshot again, which the next visit restores.  Storage that refuses to open or
is full costs speed only, with `bootTimings.cache.refused` saying why.  WebKit runs these where Playwright drives
it (its own build): the WebKitGTK it reaches over WebDriver takes no init scripts or routes.  `make test` runs a
subset of the cases (fault_cases.selected), `python -m bench faults` all of them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fault_cases import selected, whole_suite_only
from pages import open_page
from stored_snapshots import page_function

pytestmark = [pytest.mark.browser, pytest.mark.fault]

BOOT_MS = 240_000

# erf in float16 runs the float64 kernel of py_core/kernels/mathfn.py (float32 has a C kernel), whose Chebyshev
# coefficients live in the NumPy snapshot's heap: a changed one changes these values
X = [0.25, 1.0, 2.0, -0.75]
ERF = [math.erf(v) for v in X]
ERF_TOL = 2e-3  # float16's rounding of values below 1, with room

# The polyfill's answer and what its caches did (bootTimings.cache); `want`: the snapshot entries to wait for
# (stored in the background: a page closed at once ends the worker with its writes)
VISIT = page_function("""
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const desc = {dataType: 'float16', shape: [4]};
  const graph = await b.build({y: b.erf(b.input('x', desc))});
  const xt = await ctx.createTensor({...desc, writable: true});
  const yt = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(xt, new Float16Array(arg.x));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  const y = Array.from(new Float16Array(await ctx.readTensor(yt)));
  const t = webnnPolyfill.bootTimings;
  for (let i = 0; i < 400; i++) {
    const keys = (await snapshotEntries().catch(() => [])).map((e) => e.key);
    if (arg.want.every((w) => keys.some((k) => k.includes(w)))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // (a write refused in the background: wait for the page's record of it)
  for (let i = 0; i < 400 && arg.refused && !t.cache.page.refused.length; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return {y, snapshot: {...t.snapshot, numpy: t.numpySnapshot}, cache: JSON.parse(JSON.stringify(t.cache)),
    imported: t.imported};
""")

NUMPY = "webnn-snapshot-numpy-"
BARE = "webnn-snapshot-v"

# Alters the stored entry whose key holds arg.which, in place, from outside the polyfill: its trailer (or headers)
# left as they were, except where the mode is about them
ALTER = page_function("""
  const [entry] = await snapshotEntries(arg.which);
  if (!entry) throw new Error(`no stored entry holds ${arg.which}`);
  const bytes = snapshotBytes(entry);
  const trailer = entry.file.subarray(bytes.length);
  const put = (snap, tail = trailer) => {
    const out = new Uint8Array(snap.length + tail.length);
    out.set(snap);
    out.set(tail, snap.length);
    return putSnapshotFile(entry.store, entry.name, entry.store === 'opfs' ? out : snap, entry.headers);
  };
  const flip = (n) => {
    for (let i = 0; i < n; i++) {
      const at = Math.floor(Math.random() * bytes.length * 8);
      bytes[at >> 3] ^= 1 << (at & 7);
    }
  };
  if (arg.mode === 'flip1') flip(1);
  if (arg.mode === 'flip1024') flip(1024);
  if (arg.mode === 'truncated') {
    // 64 KiB (one wasm page) short, the length recorded with it made to agree: only the sha256 tells
    const cut = bytes.slice(0, bytes.length - 65536);
    const tail = trailer.slice();
    if (entry.store === 'opfs') new DataView(tail.buffer).setUint32(tail.length - 12, cut.length, true);
    else entry.headers['x-snapshot-length'] = String(cut.length);
    await put(cut, tail);
    return cut.length;
  }
  if (arg.mode === 'constant' || arg.mode === 'constant-sealed') {
    // every copy of one float64 of py_core's heap (a Chebyshev coefficient of erf) changed
    const want = new Uint8Array(new Float64Array([arg.constant]).buffer);
    const other = new Uint8Array(new Float64Array([arg.constant / 2]).buffer);
    let found = 0;
    for (let i = 0; i + 8 <= bytes.length; i += 8) {
      let same = true;
      for (let j = 0; j < 8 && same; j++) same = bytes[i + j] === want[j];
      if (same) { bytes.set(other, i); found++; }
    }
    if (!found) throw new Error('the constant is not in the snapshot');
    if (arg.mode === 'constant-sealed') await sealSnapshot(entry.store, entry.name, entry.key, bytes);
    else await put(bytes);
    return found;
  }
  if (arg.mode === 'older') {
    // the snapshot with an older polyfill's trailer: its length and that polyfill's magic number only
    const tail = new Uint8Array(new Uint32Array([bytes.length, 0x534e4e57]).buffer);
    const headers = {'x-snapshot-length': String(bytes.length)};
    await (entry.store === 'opfs' ? put(bytes, tail) : putSnapshotFile(entry.store, entry.name, bytes, headers));
    return bytes.length;
  }
  if (arg.mode === 'swapped') {
    // the other snapshot's entry, whole (its own sha256 and key), under this one's name
    const [other] = await snapshotEntries(arg.other);
    await putSnapshotFile(entry.store, entry.name, other.file, other.headers);
    return other.file.length;
  }
  await put(bytes);
  return bytes.length;
""")

# erf's first Chebyshev coefficient (py_core/kernels/mathfn.py _CHEB[0])
CHEB0 = -0.78318707272406


def _visit(context: Any, url: str, want: tuple[str, ...] = (), refused: bool = False) -> dict[str, Any]:
    page, errors = open_page(context, url, BOOT_MS)
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    result: dict[str, Any] = page.evaluate(VISIT, {"x": X, "want": list(want), "refused": refused})
    page.close()
    assert not errors, errors
    result["warnings"] = [w for w in warnings if w.startswith("WebNN polyfill:")]
    return result


def _right(result: dict[str, Any]) -> bool:
    return all(abs(a - b) <= ERF_TOL for a, b in zip(result["y"], ERF, strict=True))


def _alter(context: Any, url: str, which: str, mode: str, **extra: Any) -> int:
    page, _ = open_page(context, url.split("/test/")[0] + "/api/health", BOOT_MS)  # same origin, no polyfill
    n: int = page.evaluate(ALTER, {"which": which, "mode": mode, **extra})
    page.close()
    return n


def _dropped(result: dict[str, Any], where: str) -> list[dict[str, str]]:
    cache = result["cache"].get(where) or {}
    dropped: list[dict[str, str]] = cache.get("dropped", [])
    return dropped


def _first_visits(context: Any, url: str) -> None:
    """The first visit restores the build's snapshots and stores them; the second restores the stored ones."""
    first = _visit(context, url, (NUMPY, BARE))
    assert _right(first) and first["snapshot"] == {"page": "prebuilt", "worker": "prebuilt", "numpy": True}, first
    again = _visit(context, url)
    assert _right(again) and again["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}, again
    assert again["cache"]["page"]["store"] == "opfs" and not again["cache"]["page"]["dropped"], again["cache"]
    assert again["cache"]["worker"]["checkMs"]["snapshot"] > 0, again["cache"]  # the NumPy snapshot's sha256 was checked


def _dropped_then_clean(context: Any, url: str, which: str, where: str, why: str) -> None:
    """After `which` was altered: the visit drops it (warning, bootTimings), boots the clean path with the right
    values and stores a good one again; the next visit restores that one and drops nothing."""
    fallback = {"page": "loaded", "worker": "prebuilt", "numpy": True} if where == "worker" else \
        {"page": "prebuilt", "worker": "loaded", "numpy": True}
    after = _visit(context, url, (which,))
    assert _right(after), after
    assert after["snapshot"] == fallback, after
    dropped = _dropped(after, where)
    assert len(dropped) == 1 and dropped[0]["entry"].startswith(which) and why in dropped[0]["why"], after["cache"]
    if where == "page":  # (a worker's console reaches Playwright's page events in some browsers only)
        assert any("dropped the cached" in w and why in w for w in after["warnings"]), after["warnings"]
    clean = _visit(context, url)
    assert _right(clean) and clean["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}, clean
    assert not _dropped(clean, "page") and not _dropped(clean, "worker"), clean["cache"]


def _modes(*pairs: tuple[str, str], subset: tuple[str, ...]) -> list[Any]:
    """The (mode, why) cases, by mode: all of them in the whole fault suite, `subset` in make test."""
    return selected([pytest.param(mode, why, id=mode) for mode, why in pairs], subset)


@pytest.mark.parametrize("mode,why", _modes(
    ("flip1", "sha256"), ("flip1024", "sha256"), ("truncated", "sha256"), ("constant", "sha256"),
    ("older", "older polyfill"), ("swapped", "another entry"), subset=("constant",)))
def test_an_altered_numpy_snapshot_is_dropped_and_replaced(browser: Any, dev_server: str, mode: str,
                                                           why: str) -> None:
    url = f"{dev_server}/test/smoke.html"
    context = browser.new_context()
    try:
        _first_visits(context, url)
        extra = {"constant": CHEB0} if mode == "constant" else {"other": BARE} if mode == "swapped" else {}
        assert _alter(context, url, NUMPY, mode, **extra) > 0
        _dropped_then_clean(context, url, NUMPY, "worker", why)
    finally:
        context.close()


@pytest.mark.parametrize("mode,why", _modes(
    ("truncated", "sha256"), ("flip1", "sha256"), ("older", "older polyfill"), ("swapped", "another entry"),
    subset=()))
def test_an_altered_bare_snapshot_is_dropped_and_replaced(browser: Any, dev_server: str, mode: str, why: str) -> None:
    url = f"{dev_server}/test/smoke.html"
    context = browser.new_context()
    try:
        _first_visits(context, url)
        assert _alter(context, url, BARE, mode, **({"other": NUMPY} if mode == "swapped" else {})) > 0
        _dropped_then_clean(context, url, BARE, "page", why)
    finally:
        context.close()


def test_the_changed_constant_matters(browser: Any, dev_server: str) -> None:
    """The control of the 'constant' case above: the same change stored as a whole, consistent entry (its own
    sha256, as only a program writing the polyfill's format could) is restored, and erf's values change; so the
    right values after the unsealed change come from the entry being dropped."""
    url = f"{dev_server}/test/smoke.html"
    context = browser.new_context()
    try:
        _first_visits(context, url)
        assert _alter(context, url, NUMPY, "constant-sealed", constant=CHEB0) > 0
        sealed = _visit(context, url)
        assert sealed["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}, sealed
        # the constant lives in the snapshot's py_core modules, used only beside the core wheel it was made with
        assert "py_core" in sealed["imported"]["worker"], (
            "the NumPy snapshot was made with another core wheel, so py_core is imported from its files: make snapshot")
        assert not _right(sealed), sealed
    finally:
        context.close()


# Storage as the browser fails it, in the page and in the worker (whose script the route prefixes with the same
# lines): 'refused' throws on opening either store (a private mode, a blocked origin); 'full' opens them and
# throws QuotaExceededError on every write.  (The interfaces exist in secure contexts only: not in the blank
# document a new page starts with.)
REFUSE = {
    "refused": """(() => {
  const no = () => Promise.reject(new DOMException('storage is not allowed here', 'SecurityError'));
  if (globalThis.StorageManager) StorageManager.prototype.getDirectory = no;
  if (globalThis.CacheStorage) CacheStorage.prototype.open = no;
})();
""",
    "full": """(() => {
  const full = () => new DOMException('the quota is used up', 'QuotaExceededError');
  if (globalThis.Cache) Cache.prototype.put = () => Promise.reject(full());
  if (globalThis.FileSystemWritableFileStream) FileSystemWritableFileStream.prototype.write = () => Promise.reject(full());
  if (globalThis.FileSystemSyncAccessHandle) FileSystemSyncAccessHandle.prototype.write = () => { throw full(); };
})();
""",
}


@pytest.mark.parametrize("fault,why", selected(
    [pytest.param(f, w, id=f) for f, w in (("refused", "SecurityError"), ("full", "QuotaExceededError"))], ()))
def test_storage_that_throws_costs_speed_only(browser: Any, dev_server: str, fault: str, why: str) -> None:
    url = f"{dev_server}/test/smoke.html"
    context = browser.new_context()
    context.add_init_script(REFUSE[fault])

    def worker(route: Any) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=REFUSE[fault] + response.text())

    context.route("**/polyfill/webnn-worker.js*", worker)
    try:
        for _ in range(2):  # nothing kept: the second visit starts as the first did
            visit = _visit(context, url, refused=True)
            assert _right(visit), visit
            assert visit["snapshot"] == {"page": "prebuilt", "worker": "prebuilt", "numpy": True}, visit
            page = visit["cache"]["page"]
            assert page["store"] == (None if fault == "refused" else "opfs"), page
            assert any(why in r for r in page["refused"]), page
            assert any("storage refused" in w and why in w for w in visit["warnings"]), visit["warnings"]
            if fault == "refused":  # (a full store's writes fail after the worker's reply, which carries its record)
                assert any(why in r for r in visit["cache"]["worker"]["refused"]), visit["cache"]
    finally:
        context.unroute_all(behavior="ignoreErrors")
        context.close()


@whole_suite_only
def test_two_tabs_first_visits_at_once_keep_good_caches(browser: Any, dev_server: str) -> None:
    """Two tabs of one origin boot side by side on a first visit: both give the right values and store their
    snapshots (each write replaces the whole entry), and a later visit restores them, dropping nothing."""
    url = f"{dev_server}/test/smoke.html"
    context = browser.new_context()
    try:
        tabs = [open_page(context, url, BOOT_MS)[0] for _ in range(2)]
        for tab in tabs:  # both boots under way before either is awaited
            tab.evaluate("() => { window.__booting = navigator.ml.createContext(); }")
        for tab in tabs:
            tab.evaluate("() => window.__booting.then(() => true)")
        results = []
        for tab in tabs:
            results.append(tab.evaluate(VISIT, {"x": X, "want": [NUMPY, BARE], "refused": False}))
            tab.close()
        assert all(_right(r) for r in results), results
        later = _visit(context, url)
        assert _right(later) and later["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}, later
        assert not _dropped(later, "page") and not _dropped(later, "worker"), later["cache"]
    finally:
        context.close()


# The site-packages entries of the core wheel (polyfill/src/boot/sitecache.js): each copied under the key an older
# core wheel's would have (another sha256) and an older format's, then deleted: the state a new core wheel's first
# visit finds; resolves to the keys of the copies
OLDER_SITE = """async () => {
  const cache = await caches.open('webnn-polyfill-site');
  const made = [];
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    if (!(response.headers.get('x-site-holds') || '').endsWith(' py_core')) continue;
    const bytes = await response.arrayBuffer();
    const older = request.url.replace(/-[0-9a-f]{64}\\.bin$/, `-${'0'.repeat(64)}.bin`);
    const headers = {...Object.fromEntries(response.headers), 'x-site-key': older};
    await cache.put(older, new Response(bytes, {headers}));
    const format = request.url.replace('webnn-site-v3-', 'webnn-site-v2-');
    await cache.put(format, new Response(bytes, {headers: {'x-site-sha256': response.headers.get('x-site-sha256')}}));
    await cache.delete(request);
    made.push(older, format);
  }
  return made;
}"""

SITE_KEYS = """async () => (await (await caches.open('webnn-polyfill-site')).keys()).map((r) => r.url)"""


@whole_suite_only
def test_a_new_wheels_site_entries_replace_the_older_ones(browser: Any, dev_server: str) -> None:
    url = f"{dev_server}/test/smoke.html"
    plain = f"{dev_server}/api/health"
    context = browser.new_context()
    try:
        _first_visits(context, url)
        page, _ = open_page(context, plain, BOOT_MS)
        older = page.evaluate(OLDER_SITE)
        page.close()
        assert len(older) == 4, older  # the page's core entry and the worker's, each twice
        # the core's entries are stored again; the older wheel's and the older format's are then deleted
        visit = _visit(context, url)
        assert _right(visit), visit
        page, _ = open_page(context, plain, BOOT_MS)
        for _ in range(400):
            keys = page.evaluate(SITE_KEYS)
            if not set(older) & set(keys) and len(keys) >= 3:
                break
            page.wait_for_timeout(50)
        page.close()
        assert not set(older) & set(keys), keys
        assert len(keys) == 3, keys  # NumPy's (the worker's), and the core's of the page and of the worker
    finally:
        context.close()
