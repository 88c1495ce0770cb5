"""Caches that can be wrong (polyfill/src/boot/snapstore.js, snapshot.js, sitecache.js, cachelog.js): a stored
snapshot altered from outside between two visits (cut short, one bit or 1024 bits flipped, a py_core constant
changed, another entry's file under its name, an older polyfill's format) is dropped before it is restored, with a
console note and `bootTimings.cache.dropped` saying which and why; the visit boots the clean path and gives the
right values, and it stores a good snapshot again, which the next visit restores.  Storage that refuses to open or
is full costs speed only, with `bootTimings.cache.refused` saying why.  In WebKitGTK over WebDriver the pages are
windows of its session (pages.fresh_profile), the snapshots live in Cache Storage (it has no `navigator.storage`),
and the worker restores the bare snapshot too (the NumPy one does not apply there: NO_NUMPY_SNAPSHOT), so the
NumPy snapshot's cases do not run there.  `make test` runs a subset of the cases (fault_cases.selected),
`python -m bench faults` all of them."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from fault_cases import selected, whole_suite_only
from pages import Profile, fresh_profile
from stored_snapshots import page_function

from web.fault_injection import Faults

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
  // the page's warnings of the polyfill (WebDriver reads no console)
  const warnings = [];
  const warn = console.warn;
  console.warn = (...a) => {
    if (String(a[0]).startsWith('WebNN polyfill:')) warnings.push(a.join(' '));
    warn.apply(console, a);
  };
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
  console.warn = warn;
  return {y, snapshot: {...t.snapshot, numpy: t.numpySnapshot}, cache: JSON.parse(JSON.stringify(t.cache)),
    imported: t.imported, numpyWhy: t.numpySnapshotWhy || null, warnings,
    opfs: !!(navigator.storage && navigator.storage.getDirectory)};
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


# The engines whose worker does not start from the build's NumPy snapshot, and words of the reason it gives
# (bootTimings.numpySnapshotWhy; docs/startup.md): there the worker restores the bare snapshot, as the page does
NO_NUMPY_SNAPSHOT = {"webkit": "function table"}


def _visit(profile: Profile, url: str, want: tuple[str, ...] = (), refused: bool = False) -> dict[str, Any]:
    page = profile.open(url)
    try:
        result: dict[str, Any] = page.evaluate(VISIT, {"x": X, "want": list(want), "refused": refused})
        errors = page.webnn_errors
    finally:
        page.close()
    assert not errors, errors
    return result


def _right(result: dict[str, Any]) -> bool:
    return all(abs(a - b) <= ERF_TOL for a, b in zip(result["y"], ERF, strict=True))


def _alter(profile: Profile, url: str, which: str, mode: str, **extra: Any) -> int:
    page = profile.open(url.split("/test/")[0] + "/api/health")  # same origin, no polyfill
    try:
        n: int = page.evaluate(ALTER, {"which": which, "mode": mode, **extra})
    finally:
        page.close()
    return n


def _dropped(result: dict[str, Any], where: str) -> list[dict[str, str]]:
    cache = result["cache"].get(where) or {}
    dropped: list[dict[str, str]] = cache.get("dropped", [])
    return dropped


def _numpy_snapshot(browser_name: str) -> bool:
    """Whether the worker starts from the NumPy snapshot in this browser."""
    return browser_name not in NO_NUMPY_SNAPSHOT


def _first_stores(browser_name: str) -> list[str]:
    """The snapshot entries a first visit stores in this browser."""
    return [NUMPY, BARE] if _numpy_snapshot(browser_name) else [BARE]


def _first_visits(profile: Profile, url: str, browser_name: str) -> None:
    """The first visit restores the build's snapshots and stores them; the second restores the stored ones."""
    numpy = _numpy_snapshot(browser_name)
    first = _visit(profile, url, tuple(_first_stores(browser_name)))
    # (where the worker restores the bare snapshot too, it may find the one the page has just stored)
    workers = ("prebuilt",) if numpy else ("prebuilt", "loaded")
    assert _right(first) and first["snapshot"]["page"] == "prebuilt", first
    assert first["snapshot"]["worker"] in workers and first["snapshot"]["numpy"] == numpy, first
    assert numpy or NO_NUMPY_SNAPSHOT[browser_name] in first["numpyWhy"], first
    again = _visit(profile, url)
    assert _right(again) and again["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": numpy}, again
    store = "opfs" if again["opfs"] else "cache"
    assert again["cache"]["page"]["store"] == store and not again["cache"]["page"]["dropped"], again["cache"]
    # the worker's snapshot's sha256 was checked
    assert again["cache"]["worker"]["checkMs"]["snapshot"] > 0, again["cache"]


def _dropped_then_clean(profile: Profile, url: str, which: str, where: str, why: str, browser_name: str) -> None:
    """After `which` was altered: the visit drops it (warning, bootTimings), boots the clean path with the right
    values and stores a good one again; the next visit restores that one and drops nothing.  `where`: the side
    that reads it ('page' or 'worker'); where the worker restores the bare snapshot too, either side or both may
    read the altered bare one first."""
    numpy = _numpy_snapshot(browser_name)
    after = _visit(profile, url, (which,))
    assert _right(after), after
    if numpy:
        fallback = {"page": "loaded", "worker": "prebuilt", "numpy": True} if where == "worker" else \
            {"page": "prebuilt", "worker": "loaded", "numpy": True}
        assert after["snapshot"] == fallback, after
        sides = [where]
    else:
        # (a worker that reads the entry after the page stored a good one again restores that one)
        assert after["snapshot"]["page"] == "prebuilt" and after["snapshot"]["worker"] in ("prebuilt", "loaded"), after
        sides = [side for side in ("page", "worker") if _dropped(after, side)]
    dropped = [d for side in sides for d in _dropped(after, side)]
    assert sides and all(len(_dropped(after, side)) == 1 for side in sides), after["cache"]
    assert all(d["entry"].startswith(which) and why in d["why"] for d in dropped), after["cache"]
    if "page" in sides:  # (a worker's console does not reach the page)
        assert any("dropped the cached" in w and why in w for w in after["warnings"]), after["warnings"]
    clean = _visit(profile, url)
    assert _right(clean) and clean["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": numpy}, clean
    assert not _dropped(clean, "page") and not _dropped(clean, "worker"), clean["cache"]


def _modes(*pairs: tuple[str, str], subset: tuple[str, ...]) -> list[Any]:
    """The (mode, why) cases, by mode: all of them in the whole fault suite, `subset` in make test."""
    return selected([pytest.param(mode, why, id=mode) for mode, why in pairs], subset)


def _needs_numpy_snapshot(browser_name: str) -> None:
    if not _numpy_snapshot(browser_name):
        pytest.skip(f"the worker does not start from the NumPy snapshot in {browser_name} (docs/startup.md), so "
                    "none is stored there")


@pytest.mark.parametrize("mode,why", _modes(
    ("flip1", "sha256"), ("flip1024", "sha256"), ("truncated", "sha256"), ("constant", "sha256"),
    ("older", "older polyfill"), ("swapped", "another entry"), subset=("constant",)))
def test_an_altered_numpy_snapshot_is_dropped_and_replaced(request: Any, browser_name: str, dev_server: str,
                                                           mode: str, why: str) -> None:
    _needs_numpy_snapshot(browser_name)
    url = f"{dev_server}/test/smoke.html"
    with fresh_profile(request, browser_name, dev_server, BOOT_MS) as profile:
        _first_visits(profile, url, browser_name)
        extra = {"constant": CHEB0} if mode == "constant" else {"other": BARE} if mode == "swapped" else {}
        assert _alter(profile, url, NUMPY, mode, **extra) > 0
        _dropped_then_clean(profile, url, NUMPY, "worker", why, browser_name)


@pytest.mark.parametrize("mode,why", _modes(
    ("truncated", "sha256"), ("flip1", "sha256"), ("older", "older polyfill"), ("swapped", "another entry"),
    subset=()))
def test_an_altered_bare_snapshot_is_dropped_and_replaced(request: Any, browser_name: str, dev_server: str,
                                                          mode: str, why: str) -> None:
    if mode == "swapped":  # the NumPy snapshot's entry is the other one
        _needs_numpy_snapshot(browser_name)
    url = f"{dev_server}/test/smoke.html"
    with fresh_profile(request, browser_name, dev_server, BOOT_MS) as profile:
        _first_visits(profile, url, browser_name)
        assert _alter(profile, url, BARE, mode, **({"other": NUMPY} if mode == "swapped" else {})) > 0
        _dropped_then_clean(profile, url, BARE, "page", why, browser_name)


def test_the_changed_constant_matters(request: Any, browser_name: str, dev_server: str) -> None:
    """The control of the 'constant' case above: the same change stored as a whole, consistent entry (its own
    sha256, as only a program writing the polyfill's format could) is restored, and erf's values change; so the
    right values after the unsealed change come from the entry being dropped."""
    _needs_numpy_snapshot(browser_name)
    url = f"{dev_server}/test/smoke.html"
    with fresh_profile(request, browser_name, dev_server, BOOT_MS) as profile:
        _first_visits(profile, url, browser_name)
        assert _alter(profile, url, NUMPY, "constant-sealed", constant=CHEB0) > 0
        sealed = _visit(profile, url)
        assert sealed["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}, sealed
        # the constant lives in the snapshot's py_core modules, used only beside the core wheel it was made with
        assert "py_core" in sealed["imported"]["worker"], (
            "the NumPy snapshot was made with another core wheel, so py_core is imported from its files: make snapshot")
        assert not _right(sealed), sealed


# Storage as the browser fails it, in the page and in the worker (the fault server serves both scripts with these
# lines in front: web/fault_injection.py's `prefix`): 'refused' throws on opening either store (a private mode, a
# blocked origin); 'full' opens them and throws QuotaExceededError on every write.
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
def test_storage_that_throws_costs_speed_only(request: Any, browser_name: str, fault_server: tuple[str, Faults],
                                              fault: str, why: str) -> None:
    base, faults = fault_server
    url = f"{base}{faults.run_prefix()}/test/faults.html"
    served = [faults.inject(script, "prefix", text=REFUSE[fault])
              for script in ("/polyfill/webnn-polyfill.js", "/polyfill/webnn-worker.js")]
    numpy = _numpy_snapshot(browser_name)
    try:
        with fresh_profile(request, browser_name, base, BOOT_MS) as profile:
            for _ in range(2):  # nothing kept: the second visit starts as the first did
                visit = _visit(profile, url, refused=True)
                assert _right(visit), visit
                assert visit["snapshot"] == {"page": "prebuilt", "worker": "prebuilt", "numpy": numpy}, visit
                page = visit["cache"]["page"]
                assert page["store"] == (None if fault == "refused" else "opfs" if visit["opfs"] else "cache"), page
                assert any(why in r for r in page["refused"]), page
                assert any("storage refused" in w and why in w for w in visit["warnings"]), visit["warnings"]
                if fault == "refused":  # (a full store's writes fail after the worker's reply, which carries its record)
                    assert any(why in r for r in visit["cache"]["worker"]["refused"]), visit["cache"]
            assert all(f.hits for f in served), served
    finally:
        faults.clear()


@whole_suite_only
def test_two_tabs_first_visits_at_once_keep_good_caches(request: Any, browser_name: str, dev_server: str) -> None:
    """Two tabs of one origin boot side by side on a first visit: both give the right values and store their
    snapshots (each write replaces the whole entry), and a later visit restores them, dropping nothing."""
    url = f"{dev_server}/test/smoke.html"
    numpy = _numpy_snapshot(browser_name)
    with fresh_profile(request, browser_name, dev_server, BOOT_MS) as profile:
        tabs = [profile.open(url) for _ in range(2)]
        try:
            for tab in tabs:  # both boots under way before either is awaited
                tab.evaluate("() => { window.__booting = navigator.ml.createContext(); }")
            for tab in tabs:
                tab.evaluate("() => window.__booting.then(() => true)")
            want = _first_stores(browser_name)
            results = [tab.evaluate(VISIT, {"x": X, "want": want, "refused": False}) for tab in tabs]
            assert not [e for tab in tabs for e in tab.webnn_errors], [tab.webnn_errors for tab in tabs]
        finally:
            for tab in tabs:
                tab.close()
        assert all(_right(r) for r in results), results
        later = _visit(profile, url)
        assert _right(later) and later["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": numpy}, later
        assert not _dropped(later, "page") and not _dropped(later, "worker"), later["cache"]


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
def test_a_new_wheels_site_entries_replace_the_older_ones(request: Any, browser_name: str, dev_server: str) -> None:
    url = f"{dev_server}/test/smoke.html"
    plain = f"{dev_server}/api/health"
    with fresh_profile(request, browser_name, dev_server, BOOT_MS) as profile:
        _first_visits(profile, url, browser_name)
        page = profile.open(plain)
        try:
            older = page.evaluate(OLDER_SITE)
        finally:
            page.close()
        assert len(older) == 4, older  # the page's core entry and the worker's, each twice
        # the core's entries are stored again; the older wheel's and the older format's are then deleted
        visit = _visit(profile, url)
        assert _right(visit), visit
        page = profile.open(plain)
        try:
            for _ in range(400):
                keys = page.evaluate(SITE_KEYS)
                if not set(older) & set(keys) and len(keys) >= 3:
                    break
                time.sleep(0.05)
        finally:
            page.close()
        assert not set(older) & set(keys), keys
        assert len(keys) == 3, keys  # NumPy's (the worker's), and the core's of the page and of the worker
