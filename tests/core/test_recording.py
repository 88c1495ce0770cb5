"""RecordingBuilder: a recorded program replays to the same graph (bit-identical outputs), survives JSON,
and encodes every value kind the loader emits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from py_core.errors import WebNNTypeError
from py_core.loaders import GraphBuilderAdapter, run_model
from py_core.loaders.recording import Program, RecordingBuilder, record_tflite, replay
from py_core.runtime.executor import prepare
from web import mediapipe_models as models


def _run(program: Program, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = prepare(replay(program, GraphBuilderAdapter())).run(feeds)
    return out


@pytest.mark.parametrize("name", ["selfie_segmentation", "face_detection_short_range"])
def test_recorded_model_replays_bit_identically(name: str) -> None:
    pytest.importorskip("tflite")
    try:
        path = models.model_path(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    program = record_tflite(path)
    program = Program(json.loads(program.dumps()), program.weights)  # through JSON text, as the page gets it
    assert program.json["format"] == "webnn-program" and program.json["version"] == 1
    (input_name, desc), = program.json["inputs"].items()
    x = np.random.default_rng(0).random((1, *models.MODELS[name].size, 3), dtype=np.float32)
    assert desc == {"dataType": "float32", "shape": list(x.shape)}
    ours = _run(program, {input_name: x})
    for (out_name, out), ref in zip(program.json["outputs"].items(), run_model(path, x), strict=True):
        assert ours[out_name].shape == tuple(out["shape"])
        np.testing.assert_array_equal(ours[out_name], ref)
    for step in program.json["steps"]:
        if "constant" in step:
            assert step["constant"]["offset"] % 16 == 0


def test_values_operand_lists_multiple_outputs_and_non_finite_numbers() -> None:
    rb = RecordingBuilder("unit")
    x = rb.input("x", {"dataType": "float32", "shape": [2, 6]})
    w = rb.constant({"dataType": "float32", "shape": [2, 6]}, np.arange(12, dtype=np.float32).reshape(2, 6))
    a, b, c = rb.op("split", rb.op("add", x, w), 3, axis=1)
    cat = rb.op("concat", [c, a], 1)
    y = rb.op("clamp", cat, minValue=float("-inf"), maxValue=np.float32(4.0), label="y")
    program = rb.build({"y": y, "b": rb.op("identity", b)})
    steps = program.json["steps"]
    assert steps[3]["out"] == [3, 4, 5] and steps[3]["args"] == [{"operand": 2}, 3]
    assert steps[4]["args"] == [[{"operand": 5}, {"operand": 3}], 1]
    assert steps[5]["options"] == {"minValue": {"number": "-Infinity"}, "maxValue": 4.0, "label": "y"}
    assert program.json["outputs"]["y"] == {"operand": 7, "dataType": "float32", "shape": [2, 4]}
    text = program.dumps()
    assert "Infinity\"" in text and "-Infinity," not in text  # strict JSON: no bare Infinity
    xv = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    out = _run(Program(json.loads(text), program.weights), {"x": xv})
    s = xv + np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(out["y"], np.minimum(np.concatenate([s[:, 4:], s[:, :2]], 1), 4))
    np.testing.assert_array_equal(out["b"], s[:, 2:4])


def test_invalid_calls_fail_at_record_time() -> None:
    rb = RecordingBuilder()
    x = rb.input("x", {"dataType": "float32", "shape": [2, 3]})
    with pytest.raises(WebNNTypeError, match="matmul"):
        rb.op("matmul", x, x)
    assert [s.get("input") for s in rb.steps] == ["x"]  # nothing recorded for the failed call
