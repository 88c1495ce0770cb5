"""py_core.bridge.model_loader: what the execution worker's `loadModel` gives the gallery, in CPython.

The engine (polyfill/src/engine/model.js) passes the model as a JS Uint8Array proxy, of which the loader uses only
`to_bytes()`, and takes [error json or None, (graph file JSON, weights)] back."""

from __future__ import annotations

import json

import pytest

from py_core.bridge import model_loader
from py_core.loaders.recording import record_tflite
from web import mediapipe_models as models


class Uint8ArrayProxy:
    """The one member of Pyodide's JsProxy for a Uint8Array that the loader calls."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def to_bytes(self) -> bytes:
        return self.data


def test_a_model_comes_back_as_its_graph_file_and_weights() -> None:
    pytest.importorskip("tflite")
    try:
        path = models.model_path("selfie_segmentation")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    err, (text, weights) = model_loader.record_tflite(Uint8ArrayProxy(path.read_bytes()), "selfie.tflite")
    assert err is None
    direct = record_tflite(path, "selfie.tflite")
    assert json.loads(text) == direct.to_json() and bytes(weights) == bytes(direct.weights)
    assert json.loads(text)["format"] == "webnn-graph"
    assert memoryview(weights).nbytes == direct.to_json()["weights"]["byteLength"]


def test_a_file_that_is_not_a_model_is_a_data_error_naming_it() -> None:
    pytest.importorskip("tflite")
    err, result = model_loader.record_tflite(Uint8ArrayProxy(b"not a flatbuffer at all, 40 bytes long..."), "x.tflite")
    assert result is None
    error = json.loads(err)
    assert error["name"] == "DataError" and error["message"].startswith("x.tflite: not a TFLite model"), error
