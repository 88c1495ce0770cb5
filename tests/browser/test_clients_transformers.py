"""transformers.js (npm `@huggingface/transformers`, pinned in package.json; it bundles its own onnxruntime-web)
on the polyfill through `device: 'webnn'`, against its own WASM path in the same page, with the tiny models of
bench/cases/transformers_models.py: a BERT-like encoder with and without `free_dimension_overrides`, its float16
variant, a ViT classifier and a GPT-2-like generator with its KV cache.

The page is bench/pages/clients/transformers.html; Chromium runs without its native WebNN feature, so the polyfill
holds navigator.ml in every browser.  Where the browser has no `GPUDevice` (Firefox, WebKit) onnxruntime-web's
WebNN EP throws a ReferenceError before it reaches navigator.ml; there the pipelines get the one line
docs/compatibility.md gives: an MLContext in `session_options.executionProviders`.

Graphs a client drops are released in the worker: explicitly when the page destroys the context it gave
onnxruntime-web, and through the polyfill's FinalizationRegistry once the engine collects what onnxruntime-web
dropped (Chromium, whose `--js-flags=--expose-gc` lets the test collect now).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pages import open_page, open_window

from web.browsers import launch_args

pytestmark = pytest.mark.browser

BOOT_MS = 180_000
# max |webnn - wasm| / max |wasm|: float32 kernels in another order; float16 rounds each operator's result
TOLERANCE = {"fp32": 1e-5, "fp16": 1e-2}
TEXTS = ["the cat sees a small dog", "hello world"]


def image(seed: int) -> dict[str, Any]:
    """A 32x32 RGB test image: stripes plus noise, the same in every browser."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:32, 0:32]
    rgb = np.stack([(x * 8) % 256, (y * 8) % 256, ((x + y) * 4) % 256], -1) + rng.integers(0, 32, (32, 32, 3))
    return {"width": 32, "height": 32, "data": (rgb % 256).astype(np.uint8).ravel().tolist()}


# the models whose shapes the overrides make static: onnxruntime-web's WebNN EP takes all their nodes
WHOLE_ON_WEBNN = ("bert-tiny-static", "bert-tiny-fp16", "vit-tiny")
CASES: dict[str, dict[str, Any]] = {
    "bert-tiny": {"task": "feature-extraction", "model": "bert-tiny", "input": TEXTS},
    # its config.json fixes batch 1 and sequence 16 for WebNN: the input is padded to 16
    "bert-tiny-static": {"task": "feature-extraction", "model": "bert-tiny-static", "input": TEXTS[:1], "padTo": 16},
    "bert-tiny-fp16": {"task": "feature-extraction", "model": "bert-tiny-fp16", "dtype": "fp16", "input": TEXTS[1:],
                       "padTo": 16},
    "vit-tiny": {"task": "image-classification", "model": "vit-tiny", "input": [image(1)]},
    "gpt2-tiny": {"task": "text-generation", "model": "gpt2-tiny", "input": "hello", "maxNewTokens": 8},
}

STATS_JS = "async () => { const s = await webnnPolyfill.workerStats(); return [s.graphs, s.tensors]; }"
RUN_JS = "async (c) => { try { return await tfjs.run(c); } catch (e) { return {error: `${e.name}: ${e.message}`}; } }"


@pytest.fixture(scope="session")
def transformers_models() -> None:
    """The model folders (bench/cases/transformers_models.py), written into build/transformers-models once."""
    pytest.importorskip("onnx")
    from bench.cases import transformers_models as files

    files.generate()


def _ready(page: Any) -> Any:
    page.wait_for_function("window.tfjsReady === true")
    page.has_gpu_device = page.evaluate("typeof GPUDevice !== 'undefined'")
    return page


@pytest.fixture(scope="module")
def tfjs_page(request: pytest.FixtureRequest, browser_name: str, dev_server: str, transformers_models: None
              ) -> Iterator[Any]:
    """bench/pages/clients/transformers.html in this browser, the polyfill holding navigator.ml."""
    with open_window(request, browser_name, f"{dev_server}/clients/transformers.html", BOOT_MS) as page:
        yield _ready(page)


def run(page: Any, case: dict[str, Any], device: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(RUN_JS, {**case, "device": device, **extra})
    assert "error" not in result, f"{case['model']} on {device}: {result['error']}"
    return result


def relative_error(ours: dict[str, Any], ref: dict[str, Any]) -> float:
    assert ours["dims"] == ref["dims"]
    a, b = np.asarray(ours["data"], np.float64), np.asarray(ref["data"], np.float64)
    return float(np.abs(a - b).max() / (np.abs(b).max() or 1.0))


@pytest.mark.parametrize("name", CASES)
def test_pipeline_on_the_polyfill_matches_its_wasm_path(name: str, tfjs_page: Any) -> None:
    """`device: 'webnn'` builds its graphs on the polyfill and gives the WASM path's outputs (greedy token ids
    identical); browsers without GPUDevice with the documented context line."""
    case = CASES[name]
    ref = run(tfjs_page, case, "wasm")
    ours = run(tfjs_page, case, "webnn", context=not tfjs_page.has_gpu_device)
    split = ours["partitions"]
    assert ours["graphsOpen"] >= 1 and split and split["partitions"] >= 1, f"{name}: no graph on the polyfill: {ours}"
    if name in WHOLE_ON_WEBNN:
        assert split["supported"] == split["nodes"], split
    print(f"transformers.js {name}: WebNN EP took {split['supported']} of {split['nodes']} nodes")
    if case["task"] == "text-generation":
        assert ours["ids"] == ref["ids"], (ours["text"], ref["text"])
        assert len(ref["ids"]) == len(case["input"]) + case["maxNewTokens"], ref  # one token per byte
        return
    error = max(relative_error(o, r) for o, r in zip(ours["outputs"], ref["outputs"], strict=True))
    print(f"transformers.js {name}: max relative error vs wasm {error:.2e}")
    assert error <= TOLERANCE[case.get("dtype", "fp32")], f"{name}: {error:.3g} away from the WASM path"


def test_without_gpudevice_the_unchanged_call_throws(request: pytest.FixtureRequest, browser_name: str,
                                                     dev_server: str, transformers_models: None) -> None:
    """What the documented line is for: onnxruntime-web's WebNN EP tests `options instanceof GPUDevice` when it
    creates its own MLContext, a ReferenceError where the browser has no WebGPU (its own page: transformers.js
    keeps a failed session's rejection for every later session of the page)."""
    with open_window(request, browser_name, f"{dev_server}/clients/transformers.html", BOOT_MS) as page:
        if _ready(page).has_gpu_device:
            pytest.skip(f"{browser_name} has GPUDevice: device 'webnn' needs no line here")
        result = page.evaluate(RUN_JS, {**CASES["bert-tiny"], "device": "webnn"})
    assert "ReferenceError" in result.get("error", "") and "GPUDevice" in result["error"], result


def test_disposed_pipelines_release_their_graphs(request: pytest.FixtureRequest, browser_name: str,
                                                 dev_server: str, transformers_models: None) -> None:
    """Every pipeline on a context the page gave onnxruntime-web: after dispose() and that context's destroy(),
    workerStats() is back at its level, however many pipelines ran (a fresh page: nothing else of it is live)."""
    with open_window(request, browser_name, f"{dev_server}/clients/transformers.html", BOOT_MS) as page:
        _ready(page)
        level = page.evaluate(STATS_JS)
        for _ in range(2):
            for name in ("bert-tiny", "gpt2-tiny"):
                result = run(page, CASES[name], "webnn", context=True)
                assert result["graphsOpen"] >= 1 and result["graphsReleased"] == level[0], (name, level, result)
        after = page.evaluate(STATS_JS)
    assert after == level


def test_graphs_onnxruntime_drops_are_collected(playwright: Any, browser_name: str, dev_server: str,
                                               transformers_models: None) -> None:
    """`device: 'webnn'` unchanged: onnxruntime-web creates its own MLContext and, on dispose(), drops it and its
    graphs without destroy(); once the engine collects them the polyfill's FinalizationRegistry frees them in
    the worker (Chromium: `gc()` under --expose-gc is the engine's own collection, run now)."""
    if browser_name != "chromium":
        pytest.skip("only Chromium lets a page run a collection (--js-flags=--expose-gc)")
    kw = launch_args("chromium")
    kw["args"] = [*kw["args"], "--js-flags=--expose-gc"]
    browser = playwright.chromium.launch(**kw)
    try:
        page, errors = open_page(browser.new_context(), f"{dev_server}/clients/transformers.html", BOOT_MS)
        _ready(page)
        level = page.evaluate(STATS_JS)
        opened = [run(page, CASES[name], "webnn")["graphsOpen"] for name in ("bert-tiny", "gpt2-tiny", "bert-tiny")]
        assert min(opened) >= 1, opened
        deadline, now = time.monotonic() + 60, level
        while time.monotonic() < deadline:
            # FinalizationRegistry callbacks run in a later task; a context goes after its graphs' registrations
            page.evaluate("async () => { gc(); await new Promise((r) => setTimeout(r, 100)); }")
            now = page.evaluate(STATS_JS)
            if now == level:
                break
        assert now == level, f"graphs and tensors {now} after collection, {level} before the pipelines"
        assert not errors
    finally:
        browser.close()
