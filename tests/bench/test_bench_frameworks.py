"""The shipped suite on framework cases: a transformer encoder through onnxruntime-web and a MediaPipe model
through LiteRT.js, each on the framework's own WASM path, on the polyfill and on native WebNN's default
context, in one bench page per browser (the npm Chromium, chromium-npm, has a usable native WebNN); the CPython
row is the framework's own native build (onnxruntime, LiteRT), which judges the others."""

from __future__ import annotations

import pytest

from bench.suite import test_webnn  # noqa: F401 - collected here with this module's cases

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert.interpreter")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.webnn_cases("onnx:encoder,litert:face_detection_short_range"),
    pytest.mark.webnn_impl("polyfill", "native:default"),
]
