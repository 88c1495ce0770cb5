"""The built package (scripts/make_dist.py) from anywhere: its files on a plain static host that adds only
`Access-Control-Allow-Origin: *` (http://127.0.0.1:P2, a CDN's stand-in), included by one script tag, by
`data-base`, or imported as an ES module from a page on ANOTHER origin (http://localhost:P1) that is not
cross-origin isolated. Two real loopback servers: Chromium refuses route-fulfilled pages to loopback."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pages import open_page
from scriptfiles import load_script

from web.static_host import StaticHost

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
BOOT_MS = 240_000
EXAMPLE = ROOT / "examples" / "webnn-app"
EXAMPLE_BUILDS = ROOT / "build" / "example-app"

# a graph through the public API; also what the page knows about where it runs
RUN = """async () => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [2, 2]};
  const x = b.input('x', desc);
  const graph = await b.build({y: b.relu(b.add(x, b.constant(desc, new Float32Array([1, 1, 1, 1]))))});
  const [xt, yt] = await Promise.all([ctx.createTensor({...desc, writable: true}),
    ctx.createTensor({...desc, readable: true})]);
  ctx.writeTensor(xt, new Float32Array([-3, 2, -1, 4]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  const y = Array.from(new Float32Array(await ctx.readTensor(yt)));
  const snapshot = {...webnnPolyfill.bootTimings.snapshot, numpy: webnnPolyfill.bootTimings.numpySnapshot};
  // new snapshots are stored in the background (the package's two, or the one the worker made): wait for them
  // (in the Origin Private File System, else Cache Storage: polyfill/src/boot/snapstore.js; writes under way left out)
  const stored = async () => {
    let n = 0;
    try {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('webnn-polyfill-pyodide-snapshot');
      for await (const name of dir.keys()) n += name.includes('.part-') ? 0 : 1;
    } catch (e) {}
    return n + (await (await caches.open('webnn-polyfill-pyodide-snapshot')).keys()).length;
  };
  const want = snapshot.page === 'prebuilt' ? 2 : snapshot.worker === 'made' ? 1 : 0;
  for (let i = 0; i < 200 && await stored() < want; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return {y, snapshot, wasm: webnnPolyfill.bootTimings.wasm, isolated: self.crossOriginIsolated, config: webnnPolyfill.config,
    stats: await webnnPolyfill.workerStats()};
}"""

ONE_TAG = """<!doctype html><meta charset="utf-8"><title>one tag</title>
<script src="{assets}webnn-polyfill.js"></script>
"""
# the entry script served by the page's own origin, the assets from the CDN through data-base
DATA_BASE = """<!doctype html><meta charset="utf-8"><title>data-base</title>
<script src="/webnn-polyfill.js" data-base="{assets}"></script>
"""
MODULE = """<!doctype html><meta charset="utf-8"><title>module</title>
<script type="module">
  import webnn, {{MLGraphBuilder}} from '{assets}webnn-polyfill.mjs';
  window.moduleOK = webnn === globalThis.webnnPolyfill && MLGraphBuilder === webnn.MLGraphBuilder;
</script>
"""


def _make_dist() -> Any:
    """scripts/make_dist.py (not a package), loaded once."""
    return load_script("make_dist")


@pytest.fixture(scope="session")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """make dist's package, built without the precompressed siblings (the plain host would not send them)."""
    out = tmp_path_factory.mktemp("dist") / "dist"
    _make_dist().build(out, compress=False)
    return out


@pytest.fixture(scope="session")
def snapshots_dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make_dist.py --snapshots`: the package with the build's Pyodide snapshots."""
    out = tmp_path_factory.mktemp("dist-snapshots") / "dist"
    _make_dist().build(out, compress=False, snapshots=True)
    return out


@pytest.fixture(scope="session")
def cdn(dist_dir: Path) -> Iterator[StaticHost]:
    """The package on a plain static host at http://127.0.0.1:<port>/."""
    with StaticHost(dist_dir) as host:
        yield host


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, cdn: StaticHost, dist_dir: Path) -> Iterator[str]:
    """The pages, on another origin: http://localhost:<port>/; no COOP/COEP."""
    pages = tmp_path_factory.mktemp("site")
    (pages / "one-tag.html").write_text(ONE_TAG.format(assets=cdn.url))
    (pages / "data-base.html").write_text(DATA_BASE.format(assets=cdn.url))
    (pages / "module.html").write_text(MODULE.format(assets=cdn.url))
    (pages / "webnn-polyfill.js").write_bytes((dist_dir / "webnn-polyfill.js").read_bytes())
    with StaticHost(pages, host="localhost") as host:
        yield host.url


def _visit(context: Any, url: str) -> dict[str, Any]:
    page, errors = open_page(context, url, BOOT_MS)
    try:
        result = page.evaluate(RUN)
        if url.endswith("module.html"):
            assert page.evaluate("window.moduleOK") is True
    finally:
        page.close()
    assert not errors
    assert result["y"] == [0, 3, 0, 5]
    assert result["isolated"] is False
    return result


def test_package_layout(dist_dir: Path) -> None:
    pkg = json.loads((dist_dir / "package.json").read_text())
    assert pkg["name"] == "pyodide-webnn" and pkg["license"] == "Apache-2.0"
    assert pkg["exports"]["."] == {"import": "./webnn-polyfill.mjs", "default": "./webnn-polyfill.js"}
    lock = json.loads(next((dist_dir / "assets").glob("pyodide-lock.*.json")).read_text())
    assert set(lock["packages"]) == {"numpy", "py-core"}
    index = next((dist_dir / "assets").glob("pyodide-*/"))
    for entry in lock["packages"].values():
        wheel = (index / entry["file_name"]).resolve()
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == entry["sha256"]
    # every file but the entries and the package's own files has a content hash in its path
    for path in dist_dir.rglob("*"):
        if path.is_file() and path.parent == dist_dir:
            assert path.name in {"webnn-polyfill.js", "webnn-polyfill.mjs", "package.json", "README.md"}
        elif path.is_file():
            assert re.search(r"[-.][0-9a-f]{16}[./]", path.relative_to(dist_dir).as_posix()), path
    # and the hash follows the content: the worker's name is its sha256
    (worker,) = (dist_dir / "assets").glob("webnn-worker.*.js")
    assert worker.name == f"webnn-worker.{hashlib.sha256(worker.read_bytes()).hexdigest()[:16]}.js"
    # no memory snapshot by default: a first visit makes its own
    assert not list((dist_dir / "assets").glob("pyodide-snapshot*"))
    # the npm package carries the assets (its "files" leave the precompressed *.gz / *.br siblings out)
    packed = subprocess.run(["npm", "pack", "--dry-run", "--json"], cwd=dist_dir, capture_output=True, text=True,
                            timeout=120)
    assert packed.returncode == 0, packed.stderr[-2000:]
    listed = {f["path"] for f in json.loads(packed.stdout)[0]["files"]}
    assert {f"assets/{worker.name}", "webnn-polyfill.js"} <= listed
    assert not any(p.endswith((".gz", ".br")) for p in listed)


def test_package_with_snapshots(snapshots_dist_dir: Path) -> None:
    # the build's Pyodide snapshots (make snapshot), named in the entry script with their sha256
    (snapshot,) = (snapshots_dist_dir / "assets").glob("pyodide-snapshot.*.bin-gz")
    (numpy_snapshot,) = (snapshots_dist_dir / "assets").glob("pyodide-snapshot-numpy.*.bin-gz")
    for path, name in ((snapshot, "pyodide-snapshot"), (numpy_snapshot, "pyodide-snapshot-numpy")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert path.name == f"{name}.{digest[:16]}.bin-gz"
        assert digest in (snapshots_dist_dir / "webnn-polyfill.js").read_text()


def test_one_script_tag_from_another_origin_and_the_snapshot(browser: Any, cdn: StaticHost,
                                                              site: str) -> None:
    context = browser.new_context()
    try:
        first = _visit(context, f"{site}one-tag.html")
        assert first["config"]["workerURL"].startswith(cdn.url)
        assert first["config"]["pyodideURL"].startswith(cdn.url)
        assert first["stats"]["native"] == 1  # the wasm C kernels came with the package's core wheel
        # the worker starts CPython and snapshots it, the page restores that snapshot; the page's origin keeps it
        # (the worker, from a blob URL, has the page's origin), and the next visit starts from it
        assert first["snapshot"] == {"page": "handed", "worker": "made", "numpy": False}
        # the worker's compiled pyodide.asm.wasm, not compiled again (runtime.js handOverWhat)
        assert first["wasm"] == "handed"
        second = _visit(context, f"{site}one-tag.html")
        # (the page takes the worker's restored snapshot, or in Firefox reads the stored one itself)
        assert second["snapshot"]["worker"] == "loaded" and second["snapshot"]["page"] in ("handed", "loaded")
        assert second["snapshot"]["numpy"] is False
    finally:
        context.close()


def test_the_package_snapshots_restore(browser: Any, snapshots_dist_dir: Path,
                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    pages = tmp_path_factory.mktemp("site-snapshots")
    with StaticHost(snapshots_dist_dir) as cdn:
        (pages / "one-tag.html").write_text(ONE_TAG.format(assets=cdn.url))
        with StaticHost(pages, host="localhost") as site:
            context = browser.new_context()
            try:
                # the worker restores the package's NumPy snapshot and the page its bare one (from the CDN, their
                # sha256 checked); the next visit starts from the stored copies
                first = _visit(context, f"{site.url}one-tag.html")
                assert first["snapshot"] == {"page": "prebuilt", "worker": "prebuilt", "numpy": True}
                second = _visit(context, f"{site.url}one-tag.html")
                assert second["snapshot"] == {"page": "loaded", "worker": "loaded", "numpy": True}
            finally:
                context.close()


def test_data_base_and_the_module_entry(browser: Any, cdn: StaticHost, site: str) -> None:
    context = browser.new_context()
    try:
        result = _visit(context, f"{site}data-base.html")
        assert result["config"]["scriptURL"] == f"{site}webnn-polyfill.js"
        assert result["config"]["workerURL"].startswith(cdn.url)
        result = _visit(context, f"{site}module.html")
        assert result["config"]["scriptURL"] == f"{cdn.url}webnn-polyfill.mjs"
    finally:
        context.close()


def test_the_dev_server_plays_the_cdn(browser: Any, dev_server: str, tmp_path: Path) -> None:
    """The dev build from the dev server's /polyfill/, on a page of another origin (its manifest, Pyodide and core
    wheel go out with CORS and CORP cross-origin)."""
    (tmp_path / "index.html").write_text(ONE_TAG.format(assets=f"{dev_server}/polyfill/"))
    with StaticHost(tmp_path, host="localhost") as site:
        context = browser.new_context()
        try:
            result = _visit(context, f"{site.url}index.html")
        finally:
            context.close()
    assert result["config"]["coreManifestURL"] == f"{dev_server}/core/manifest.json"


def _npm(*args: str, cwd: Path) -> None:
    subprocess.run(["npm", *args, "--no-audit", "--no-fund"], cwd=cwd, check=True, capture_output=True, timeout=600)


def _example_sources() -> list[Path]:
    skip = {"node_modules", "dist"}
    return sorted(p for p in EXAMPLE.rglob("*") if p.is_file() and not skip & set(p.relative_to(EXAMPLE).parts))


@pytest.fixture(scope="session")
def example_build(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/webnn-app built with Vite against the packed tarball (npm pack of the package); the build is
    kept under build/example-app/<hash of the tarball and the example's sources> and reused while they stay."""
    packed = tmp_path_factory.mktemp("packed")
    _npm("pack", str(dist_dir), "--pack-destination", str(packed), cwd=packed)
    (tarball,) = packed.glob("pyodide-webnn-*.tgz")
    key = hashlib.sha256(tarball.read_bytes())
    for path in _example_sources():
        key.update(path.relative_to(EXAMPLE).as_posix().encode() + b"\0" + path.read_bytes())
    out = EXAMPLE_BUILDS / key.hexdigest()[:16]
    EXAMPLE_BUILDS.mkdir(parents=True, exist_ok=True)
    with open(EXAMPLE_BUILDS / ".lock", "w") as lock:  # pytest-xdist workers share the work folder
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "index.html").is_file():
            _build_example(tarball, out)
    return out


def _build_example(tarball: Path, out: Path) -> None:
    work = EXAMPLE_BUILDS / "work"
    for path in _example_sources():
        target = work / path.relative_to(EXAMPLE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    lock = hashlib.sha256((EXAMPLE / "package-lock.json").read_bytes()).hexdigest()
    stamp = work / "node_modules" / ".example-lock-sha256"
    if not stamp.is_file() or stamp.read_text() != lock:
        _npm("ci", cwd=work)  # Vite, as the example's lock file pins it
        stamp.write_text(lock)
    _npm("install", "--no-save", str(tarball), cwd=work)  # the package, as a user installs it
    tmp_out = out.with_name(out.name + ".part")
    shutil.rmtree(tmp_out, ignore_errors=True)
    subprocess.run([str(work / "node_modules" / ".bin" / "vite"), "build", "--outDir", str(tmp_out), "--emptyOutDir"],
                   cwd=work, check=True, capture_output=True, timeout=600)
    tmp_out.replace(out)


def test_example_app_runs_a_small_model(browser: Any, example_build: Path) -> None:
    with StaticHost(example_build) as host:
        context = browser.new_context()
        try:
            page, errors = open_page(context, f"{host.url}index.html", BOOT_MS)
            result = page.evaluate("() => window.exampleResult")
            assert page.text_content("#status") == "ok"
        finally:
            context.close()
    assert not errors
    assert result["maxError"] < 1e-5  # against the page's own JavaScript reference
    # and against an independent one: the example's model (src/model.js) in NumPy, float64
    assert result["probabilities"] == pytest.approx(_example_model_numpy().ravel().tolist(), abs=1e-5)


def _example_model_numpy(batch: int = 5) -> Any:
    import numpy as np

    def weights(count: int, seed: int) -> Any:  # src/model.js's LCG, rounded to float32 as the page does
        out, s = [], seed
        for _ in range(count):
            s = (s * 1664525 + 1013904223) % 2**32
            out.append(s / 2**31 - 1)
        return np.float32(out).astype(np.float64)

    w1, b1 = weights(4 * 8, 1).reshape(4, 8), weights(8, 2)
    w2, b2 = weights(8 * 3, 3).reshape(8, 3), weights(3, 4)
    x = (np.sin(np.arange(1, batch * 4 + 1)) * 2).astype(np.float32).astype(np.float64).reshape(batch, 4)
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
