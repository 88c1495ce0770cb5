"""The graph file (py_core/graphfile.py): one value encoding, JSON and side-file round trips, the recorder,
and every kind of graph the project keeps (recorded TFLite models, the bench's model graphs, WPT cases) loading
and replaying to the same results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from py_core import graphfile as gf
from py_core.errors import WebNNTypeError
from py_core.loaders import run_model
from py_core.loaders.recording import record_tflite
from py_core.runtime.executor import prepare
from web import mediapipe_models as models


def _run(graph: gf.GraphFile, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = prepare(gf.replay(graph)).run(feeds)
    return out


@pytest.mark.parametrize(
    ("value", "tagged"),
    [
        (math.inf, {"$n": "Infinity"}),
        (-math.inf, {"$n": "-Infinity"}),
        (-0.0, {"$n": "-0.0"}),
        (gf.BigInt(5), {"$n": "5"}),
        (gf.BigInt(-(2**63)), {"$n": str(-(2**63))}),
        (2**60, {"$n": str(2**60)}),
        (gf.OperandRef("x"), {"$op": "x"}),
        ([1, 0.5, "nchw", True, None], [1, 0.5, "nchw", True, None]),
    ],
)
def test_one_encoding_for_numbers_json_cannot_hold(value: object, tagged: object) -> None:
    assert gf.encode_value(value) == tagged
    back = gf.decode_value(json.loads(json.dumps(tagged, allow_nan=False)))
    assert back == value and type(back) is (gf.BigInt if isinstance(value, int) and value > 2**53 else type(value))
    if isinstance(value, float) and value == 0:
        assert math.copysign(1, back) < 0  # -0 stays -0
    assert math.isnan(gf.decode_value({"$n": "NaN"})) and gf.encode_value(math.nan) == {"$n": "NaN"}


def test_values_operand_lists_multiple_outputs_and_non_finite_numbers(tmp_path: Path) -> None:
    rb = gf.Recorder("unit")
    x = rb.input("x", {"dataType": "float32", "shape": [2, 6]})
    w = rb.constant({"dataType": "float32", "shape": [2, 6]}, np.arange(12, dtype=np.float32).reshape(2, 6))
    a, b, c = rb.split(rb.add(x, w), 3, axis=1)  # GraphBuilder's methods, or the loader's op(name, ...)
    cat = rb.op("concat", [c, a], 1)
    y = rb.clamp(cat, minValue=float("-inf"), maxValue=np.float32(4.0), label="y")
    graph = rb.build({"y": y, "b": rb.identity(b)})
    obj = graph.to_json()
    assert obj["format"] == "webnn-graph" and obj["version"] == 1 and obj["weights"] == {"byteLength": 48}
    split, concat, clamp = obj["operations"][1:4]
    assert split["args"] == [{"$op": "t2"}, 3] and split["outputs"] == ["t3", "t4", "t5"]
    assert concat["args"] == [[{"$op": "t5"}, {"$op": "t3"}], 1]
    assert clamp["options"] == {"minValue": {"$n": "-Infinity"}, "maxValue": 4.0, "label": "y"}
    assert clamp["descriptors"] == [{"dataType": "float32", "shape": [2, 4]}]
    assert obj["outputs"] == {"y": "t7", "b": "t8"}
    text = graph.dumps()
    assert "Infinity\"" in text and "-Infinity," not in text  # strict JSON: no bare Infinity
    js, bin_ = graph.save(tmp_path / "unit")
    assert bin_ is not None and bin_.read_bytes() == graph.weights
    again = gf.load(js)
    assert again == graph
    xv = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    out = _run(again, {"x": xv})
    s = xv + np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(out["y"], np.minimum(np.concatenate([s[:, 4:], s[:, :2]], 1), 4))
    np.testing.assert_array_equal(out["b"], s[:, 2:4])


def test_data_forms_and_schema_errors() -> None:
    import base64

    one = base64.b64encode(np.float16(1.5).tobytes()).decode()
    graph = gf.from_json({
        "format": "webnn-graph", "version": 1,
        "inputs": {"x": {"dataType": "float16", "shape": [2, 3], "data": {"base64": one, "fill": True}}},
        "constants": {"k": {"dataType": "int64", "shape": [2],
                            "data": {"base64": base64.b64encode(np.array([-1, 2**62], "<i8").tobytes()).decode()}}},
        "operations": [], "outputs": {"x": "x"}})
    assert graph.array("x").dtype == np.float16 and graph.array("x").tolist() == [[1.5] * 3] * 2
    assert graph.array("k").tolist() == [-1, 2**62]
    with pytest.raises(gf.GraphFileError, match="not a webnn-graph version 1"):
        gf.from_json({"format": "webnn-program", "version": 1})
    with pytest.raises(gf.GraphFileError, match="names 8 bytes of weights, 0 were given"):
        gf.from_json({**graph.to_json(), "weights": {"byteLength": 8}})
    bad = gf.from_json({**graph.to_json(), "constants": {"k": {"dataType": "int64", "shape": [3],
                                                                "data": {"offset": 0, "byteLength": 24}}},
                        "weights": {"byteLength": 16}},
                       bytes(16), "bad.json")
    with pytest.raises(gf.GraphFileError, match=r"'k' bytes \[0, \+24\) are outside the 16-byte weights"):
        bad.array("k")


def test_generated_names_never_take_an_input_name() -> None:
    rb = gf.Recorder()
    k = rb.constant({"dataType": "float32", "shape": [2]}, np.ones(2, np.float32))  # operand 0: "t0"
    x = rb.input("t0", {"dataType": "float32", "shape": [2]})
    graph = rb.build({"y": rb.add(x, k)})
    assert list(graph.constants) == ["t0_"] and graph.operations[0].args == [gf.OperandRef("t0"), gf.OperandRef("t0_")]
    np.testing.assert_array_equal(_run(graph, {"t0": np.array([1, 2], np.float32)})["y"], [2, 3])


def test_invalid_calls_fail_at_record_time() -> None:
    rb = gf.Recorder()
    x = rb.input("x", {"dataType": "float32", "shape": [2, 3]})
    with pytest.raises(WebNNTypeError, match="matmul"):
        rb.op("matmul", x, x)
    assert rb.build({"x": rb.relu(x)}).operations[0].op == "relu"  # nothing recorded for the failed call


@pytest.mark.parametrize("name", ["selfie_segmentation", "face_detection_short_range"])
def test_recorded_model_replays_bit_identically(name: str) -> None:
    pytest.importorskip("tflite")
    try:
        path = models.model_path(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    recorded = record_tflite(path)
    graph = gf.loads(recorded.dumps(), recorded.weights)  # through JSON text, as the page gets it
    assert graph == recorded and graph.source == path.name
    (input_name, desc), = graph.inputs.items()
    x = np.random.default_rng(0).random((1, *models.MODELS[name].size, 3), dtype=np.float32)
    assert desc == {"dataType": "float32", "shape": list(x.shape)}
    ours = _run(graph, {input_name: x})
    for out_name, ref in zip(graph.outputs, run_model(path, x), strict=True):
        np.testing.assert_array_equal(ours[out_name], ref)
    assert all(c["data"]["offset"] % 16 == 0 for c in graph.constants.values())
    # the weights stay one side buffer: the JSON part is small beside them
    assert len(graph.dumps()) < len(graph.weights) / 4


def test_the_gallery_digits_file_loads_and_classifies() -> None:
    graph = gf.load(Path(__file__).resolve().parents[2] / "web" / "gallery" / "models" / "digits.json")
    assert list(graph.inputs) == ["pixels"] and list(graph.outputs) == ["probabilities"]
    examples = graph.meta["examples"]
    pixels = np.array([examples[str(d)] for d in range(10)], np.float32) / 16
    got = [int(np.argmax(_run(graph, {"pixels": p[None]})["probabilities"])) for p in pixels]
    assert got == list(range(10))
