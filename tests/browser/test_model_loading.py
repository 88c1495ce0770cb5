"""webnnPolyfill.loadModel: the gallery's TFLite loading runs in the polyfill's execution worker (no Pyodide of
its own), installs the loader's wheels only when their sha256 matches, and reports a bad file as a WebNN error."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

LOAD = """async ({bytes, wheels, format}) => {
  const base = webnnPolyfill.config.pyodideURL;
  const files = (await (await fetch(base + 'manifest.json')).json()).files;
  const names = Object.keys(files).filter((n) => /^(tflite|flatbuffers)-.*\\.whl$/.test(n));
  const given = names.map((n) => ({url: base + n, sha256: wheels === 'damaged' ? '0'.repeat(64) : files[n].sha256}));
  try {
    const r = await webnnPolyfill.loadModel(new Uint8Array(bytes).buffer, {format, name: 'm.tflite', wheels: given});
    return {json: JSON.parse(r.json), weights: r.weights.byteLength};
  } catch (e) {
    return {error: e.name, message: e.message};
  }
}"""


def _load(page: Any, data: bytes, wheels: str = "manifest", fmt: str = "tflite") -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(LOAD, {"bytes": list(data), "wheels": wheels, "format": fmt})
    return result


def test_model_loading_checks_wheels_then_converts_in_the_execution_worker(webnn_page: Any) -> None:
    from web import mediapipe_models as models

    try:
        model = models.model_path("selfie_segmentation").read_bytes()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    damaged = _load(webnn_page, model, wheels="damaged")
    assert damaged["error"] == "SecurityError" and "integrity check failed" in damaged["message"], damaged
    assert _load(webnn_page, b"x" * 40, fmt="onnx")["error"] == "NotSupportedError"
    bad = _load(webnn_page, b"not a flatbuffer at all, 40 bytes long..")
    assert bad["error"] == "DataError" and bad["message"].startswith("m.tflite: not a TFLite model"), bad
    good = _load(webnn_page, model)
    assert good["json"]["format"] == "webnn-graph" and good["weights"] == good["json"]["weights"]["byteLength"]
    assert set(good["json"]["inputs"]) and set(good["json"]["outputs"])
