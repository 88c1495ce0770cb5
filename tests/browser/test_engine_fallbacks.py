"""The worker's engine with and without its fast paths, in real browsers: by default NumPy and the core wheel are
unzipped in JavaScript (polyfill/src/boot/wheels.js) and the C kernels run; with ?unzip=0 both Pyodides unpack them with
CPython's zipfile; with ?unpack=0&native=0 the worker installs both with Pyodide's loadPackage and runs the NumPy
kernels; with ?early=0&prebuilt=0 the boot's steps run one after another and CPython starts on a first visit.
All give the float64 answer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pages import open_page

pytestmark = pytest.mark.browser

BOOT_MS = 240_000

RUN_JS = r"""
async ({x, w}) => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const input = b.input('x', {dataType: 'float32', shape: [1, 8, 6, 6]});
  const filter = b.constant({dataType: 'float32', shape: [4, 8, 3, 3]}, new Float32Array(w));
  const graph = await b.build({y: b.sigmoid(b.relu(b.conv2d(input, filter, {padding: [1, 1, 1, 1]})))});
  const xt = await ctx.createTensor({dataType: 'float32', shape: [1, 8, 6, 6], writable: true});
  const yt = await ctx.createTensor({dataType: 'float32', shape: [1, 4, 6, 6], readable: true});
  ctx.writeTensor(xt, new Float32Array(x));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  const y = Array.from(new Float32Array(await ctx.readTensor(yt)));
  const t = webnnPolyfill.bootTimings;
  return {y, numpy: t.numpy, wheels: t.wheels, stats: await webnnPolyfill.workerStats()};
}
"""


def _reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """conv2d (padding 1) -> relu -> sigmoid in float64, by the definition."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((1, 4, 6, 6))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j].astype(np.float64))
    return 1 / (1 + np.exp(-np.maximum(y, 0)))


@pytest.mark.parametrize("query,numpy_install,page_wheel,native", [
    ("", "unzipped", "unzipped", 1), ("?unzip=0", "unpacked", "unpacked", 1),
    ("?unpack=0&native=0", "loadPackage", "unzipped", 0)],
    ids=["fast-paths", "cpython-zipfile", "loadPackage-and-numpy-kernels"])
def test_worker_engine_paths_agree_with_float64(browser: Any, dev_server: str, query: str, numpy_install: str,
                                                page_wheel: str, native: int) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = (rng.standard_normal((4, 8, 3, 3)) * 0.3).astype(np.float32)
    context = browser.new_context()
    try:
        page, errors = open_page(context, f"{dev_server}/perf/{query}", BOOT_MS)
        out = page.evaluate(RUN_JS, {"x": x.ravel().tolist(), "w": w.ravel().tolist()})
    finally:
        context.close()
    assert not errors
    assert out["numpy"] == numpy_install
    assert out["wheels"] == {"page": page_wheel, "worker": numpy_install}  # the core wheel, as NumPy (worker)
    assert out["stats"]["native"] == native
    # the relaxed-SIMD build of the C kernels (both browsers compile relaxed SIMD)
    assert out["stats"]["nativeRelaxed"] == native
    got = np.array(out["y"], np.float32).reshape(1, 4, 6, 6)
    # 72-term float32 sums, then sigmoid (WPT allows 34 ulp for it): far inside 1e-5 of values in (0.5, 1)
    np.testing.assert_allclose(got, _reference(x, w), rtol=0, atol=1e-5)


def test_steps_one_after_another_and_no_build_snapshot(browser: Any, dev_server: str) -> None:
    """?early=0 (boot.js startEarly off: no early import, compile, snapshot or site-cache reads) with ?prebuilt=0
    (CPython starts on a first visit): the first visit makes the snapshot and stores the site entries, the second
    restores both, read only once Pyodide runs; both give the float64 answer."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    w = (rng.standard_normal((4, 8, 3, 3)) * 0.3).astype(np.float32)
    context = browser.new_context()
    visits = []
    try:
        for want in (3, 0):  # the first visit waits until its 3 site entries are stored
            page, errors = open_page(context, f"{dev_server}/perf/?early=0&prebuilt=0", BOOT_MS)
            out = page.evaluate(RUN_JS, {"x": x.ravel().tolist(), "w": w.ravel().tolist()})
            out["snapshot"] = page.evaluate("webnnPolyfill.bootTimings.snapshot")
            page.evaluate("""async (want) => {
              const cache = await caches.open('webnn-polyfill-site');
              for (let i = 0; i < 400 && (await cache.keys()).length < want; i++) await new Promise((r) => setTimeout(r, 50));
            }""", want)
            page.close()
            assert not errors
            visits.append(out)
    finally:
        context.close()
    first, second = visits
    assert first["snapshot"]["worker"] == "made" and first["numpy"] == "unzipped"
    assert second["snapshot"]["worker"] == "loaded" and second["numpy"] == "cached"
    for out in visits:
        got = np.array(out["y"], np.float32).reshape(1, 4, 6, 6)
        np.testing.assert_allclose(got, _reference(x, w), rtol=0, atol=1e-5)
