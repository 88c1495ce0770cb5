"""batchNormalization, instanceNormalization and layerNormalization against torch.nn.functional in float64,
the WPT vectors, and the validation errors.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-batchnorm"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_close_ulps, conformance_cases, decode_wpt, run_op, t64

from py_core.builder import GraphBuilder
from py_core.errors import WebNNTypeError
from py_core.runtime.executor import prepare

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
FLOATS = [F32, F16]
SEEDS = range(6)


def random_shape(rng: np.random.Generator, min_rank: int, max_rank: int) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, 5, size=int(rng.integers(min_rank, max_rank + 1))))


def rounded(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype)


# ----------------------------------------------------------------------------------------- batchNormalization
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_normalization(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 1, 5)
    axis = int(rng.integers(0, len(shape)))
    c = shape[axis]
    x = rounded(rng.standard_normal(shape) * 5, dtype)
    inputs = {"input": x, "mean": rounded(rng.standard_normal(c), dtype),
              "variance": rounded(rng.uniform(0.01, 4, c), dtype)}
    if seed % 2:
        inputs["scale"] = rounded(rng.standard_normal(c), dtype)
    if seed % 3:
        inputs["bias"] = rounded(rng.standard_normal(c), dtype)
    opts = {"axis": axis} if axis != 1 or seed % 2 else {}  # axis 1 is the default
    eps = 1e-5
    if seed >= 3:
        eps = float(rng.uniform(1e-4, 1e-1))
        opts["epsilon"] = eps
    got = run_op("batchNormalization", inputs, **opts)

    # oracle: torch batch_norm on [1, C, rest...] (the channel moved to dim 1), float64
    tx = t64(x).unsqueeze(0).movedim(axis + 1, 1)
    w, b = (t64(inputs[k]) if k in inputs else None for k in ("scale", "bias"))
    eps_cast = float(np.asarray(eps, dtype))  # the spec casts epsilon to the input type
    y = F.batch_norm(tx, t64(inputs["mean"]), t64(inputs["variance"]), w, b, training=False, eps=eps_cast)
    want = y.movedim(1, axis + 1).squeeze(0).numpy()
    # x - mean may cancel: the tolerance follows the magnitude of the terms, not of the result
    shape1 = [1] * len(shape)
    shape1[axis] = c
    s = np.abs(inputs.get("scale", np.ones(c))).astype(np.float64).reshape(shape1)
    v = inputs["variance"].astype(np.float64).reshape(shape1)
    terms = (np.abs(x) + np.abs(inputs["mean"]).reshape(shape1)) / np.sqrt(v + eps_cast) * s
    wide_eps = np.finfo(np.float32).eps
    assert_close_ulps(got, want, 4 if dtype == F32 else 1, 4 * wide_eps * terms)


# ------------------------------------------------------------------------------------ instanceNormalization
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_instance_normalization(dtype, layout, seed):
    rng = np.random.default_rng(seed)
    n, c, h, w = (int(v) for v in rng.integers(1, 5, 4))
    w = max(w, 2)  # torch refuses a single spatial element; that case is tested on its own below
    x_nchw = rounded(rng.standard_normal((n, c, h, w)) * 3 + rng.standard_normal((1, c, 1, 1)) * 10, dtype)
    x = x_nchw if layout == "nchw" else np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
    inputs = {"input": x}
    if seed % 2:
        inputs["scale"] = rounded(rng.standard_normal(c), dtype)
    if seed % 3:
        inputs["bias"] = rounded(rng.standard_normal(c), dtype)
    opts = {} if layout == "nchw" and seed < 3 else {"layout": layout}
    eps = float(rng.uniform(1e-4, 1e-1)) if seed >= 3 else 1e-5
    if seed >= 3:
        opts["epsilon"] = eps
    got = run_op("instanceNormalization", inputs, **opts)
    wt, bt = (t64(inputs[k]) if k in inputs else None for k in ("scale", "bias"))
    y = F.instance_norm(t64(x_nchw), weight=wt, bias=bt, eps=float(np.asarray(eps, dtype))).numpy()
    want = y if layout == "nchw" else y.transpose(0, 2, 3, 1)
    assert_close_ulps(got, want, 2, atol=np.finfo(dtype).eps)


def test_instance_normalization_single_spatial_element():
    """A 1x1 instance is its own mean: (x - mean) is 0, so the output is the bias (or 0)."""
    x = np.array([1.5, -2.0, 7.0], np.float16).reshape(1, 1, 1, 3)
    bias = np.array([0.25, -1.0, 3.0], np.float16)
    got = run_op("instanceNormalization", {"input": x, "bias": bias}, layout="nhwc")
    np.testing.assert_array_equal(got, bias.reshape(1, 1, 1, 3))


def test_instance_normalization_nan_and_inf_stay_in_their_instance():
    x = np.arange(2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3)
    x[0, 1, 0, 0], x[1, 0, 2, 2] = np.inf, np.nan
    got = run_op("instanceNormalization", {"input": x})
    want = F.instance_norm(t64(x), eps=float(np.float32(1e-5))).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0, 1]).all() and np.isnan(got[1, 0]).all() and np.isfinite(got[[0, 1], [0, 1]]).all()


# ----------------------------------------------------------------------------------------- layerNormalization
def _layer_norm_oracle(x: np.ndarray, axes: list[int], scale, bias, eps: float) -> np.ndarray:
    """torch layer_norm normalizes trailing dims: move `axes` (in their given order) to the end first."""
    if not axes:  # nothing reduced: each value is its own mean, so the result is just the bias (or 0)
        y = torch.zeros(x.shape, dtype=torch.float64) * t64(x)  # keeps NaN/inf -> NaN like the formula
        return (y + (t64(bias) if bias is not None else 0)).numpy()
    rest = [d for d in range(x.ndim) if d not in axes]
    perm = rest + list(axes)
    y = F.layer_norm(t64(x).permute(perm), [x.shape[a] for a in axes],
                     None if scale is None else t64(scale), None if bias is None else t64(bias), eps)
    return y.permute(list(np.argsort(perm))).numpy()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_normalization(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 0, 5)
    x = rounded(rng.standard_normal(shape) * 4 + float(rng.normal(0, 20)), dtype)
    opts = {}
    if seed % 2 == 0:
        axes = list(range(1, len(shape)))  # the default
    else:
        axes = [int(a) for a in rng.permutation(len(shape))[: int(rng.integers(0, len(shape) + 1))]]
        opts["axes"] = axes
    inputs = {"input": x}
    want_shape = [shape[a] for a in axes]
    if seed % 3:
        inputs["scale"] = rounded(rng.standard_normal(want_shape), dtype)
    if seed % 4:
        inputs["bias"] = rounded(rng.standard_normal(want_shape), dtype)
    eps = 1e-5
    if seed >= 4:
        eps = float(rng.uniform(1e-4, 1e-2))
        opts["epsilon"] = eps
    got = run_op("layerNormalization", inputs, **opts)
    want = _layer_norm_oracle(x, axes, inputs.get("scale"), inputs.get("bias"), float(np.asarray(eps, dtype)))
    assert_close_ulps(got, want, 2, atol=np.finfo(dtype).eps)


# ------------------------------------------------------------------------------------------ WPT vectors
@pytest.mark.parametrize("case", conformance_cases("batch_normalization", "instance_normalization",
                                                   "layer_normalization"))
def test_wpt_vectors(case):
    g = case["graph"]
    b = GraphBuilder()
    handles, feeds = {}, {}
    for name, spec in g["inputs"].items():
        desc = spec["descriptor"]
        arr = np.array(spec["data"], dtype=desc["dataType"]).reshape(desc["shape"])
        handles[name] = b.constant(desc, arr) if spec.get("constant") else b.input(name, desc)
        if not spec.get("constant"):
            feeds[name] = arr
    (op,) = g["operators"]
    args = {}
    for arg in op["arguments"]:
        for k, v in (arg["options"].items() if "options" in arg else arg.items()):
            args[k] = handles[v] if isinstance(v, str) and v in handles else decode_wpt(v)
    got = prepare(b.build({"y": b.call(op["name"], args)})).run(feeds)["y"]
    (exp,) = g["expectedOutputs"].values()
    assert got.dtype.name == exp["descriptor"]["dataType"]
    want = np.array(exp["data"], np.float64).reshape(exp["descriptor"]["shape"])
    assert_close_ulps(got, want, 4, atol=4 * np.finfo(got.dtype).eps)


# ------------------------------------------------------------------------------------------- validation
def build(op: str, descs: dict[str, tuple[str, list[int]]], label: str = "norm/1", **options):
    b = GraphBuilder()
    args = {k: b.input(k, {"dataType": t, "shape": s}) for k, (t, s) in descs.items()}
    return b, b.call(op, {**args, **options}, label)


BN = "batchNormalization"
IN = "instanceNormalization"
LN = "layerNormalization"
X4 = ("float32", [2, 3, 4, 5])


@pytest.mark.parametrize("op, descs, options, match", [
    (BN, {"input": ("int32", [2, 3]), "mean": ("int32", [3]), "variance": ("int32", [3])}, {}, "type int32"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float32", [3])}, {"axis": 4},
     "axis 4 is out of range for rank 4"),
    (BN, {"input": ("float32", []), "mean": ("float32", [1]), "variance": ("float32", [1])}, {"axis": 0},
     r"rank 0 \(shape \[\]\) must be between 1 and 8"),
    (BN, {"input": X4, "mean": ("float32", [4]), "variance": ("float32", [3])}, {},
     r"mean shape \[4\] must be \[3\]"),
    (BN, {"input": X4, "mean": ("float32", [5]), "variance": ("float32", [5])}, {"axis": 2},
     r"mean shape \[5\] must be \[4\]"),
    (BN, {"input": X4, "mean": ("float32", [3, 1]), "variance": ("float32", [3])}, {}, "mean rank 2"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float16", [3])}, {},
     "variance data type float16 must match input"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float32", [3]), "scale": ("float32", [2])}, {},
     r"scale shape \[2\] must be \[3\]"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float32", [3]), "bias": ("int8", [3])}, {},
     "bias data type int8"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float32", [3])}, {"epsilon": float("nan")},
     "epsilon must be a finite number"),
    (BN, {"input": X4, "mean": ("float32", [3]), "variance": ("float32", [3])}, {"axis": -1},
     "axis must be an unsigned long"),
    (BN, {"input": X4, "variance": ("float32", [3])}, {}, "missing required operand 'mean'"),
    (IN, {"input": ("float32", [2, 3, 4])}, {}, "input rank 3"),
    (IN, {"input": ("float16", [2, 3, 4, 5, 6])}, {}, "input rank 5"),
    (IN, {"input": ("int8", [2, 3, 4, 5])}, {}, "data type int8"),
    (IN, {"input": X4, "scale": ("float32", [3])}, {"layout": "nhwc"}, r"scale shape \[3\] must be \[5\]"),
    (IN, {"input": X4, "bias": ("float32", [5])}, {}, r"bias shape \[5\] must be \[3\]"),
    (IN, {"input": X4, "scale": ("float16", [3])}, {}, "scale data type float16 must match input"),
    (IN, {"input": X4}, {"layout": "nwhc"}, "'nwhc' is not a valid value for layout"),
    (IN, {"input": X4}, {"epsilon": "1e-5"}, "epsilon must be a finite number"),
    (LN, {"input": ("uint8", [2, 3])}, {}, "data type uint8"),
    (LN, {"input": X4}, {"axes": [1, 1]}, "contain duplicate values"),
    (LN, {"input": X4}, {"axes": [4]}, "axes value 4 is out of range for rank 4"),
    (LN, {"input": X4, "scale": ("float32", [4, 3])}, {"axes": [1, 2]}, r"scale shape \[4, 3\] .* \[3, 4\]"),
    (LN, {"input": X4, "bias": ("float32", [3, 4])}, {}, r"bias shape \[3, 4\] must be \[3, 4, 5\]"),
    (LN, {"input": X4, "scale": ("float32", [1])}, {"axes": []}, r"scale shape \[1\] must be \[\]"),
    (LN, {"input": X4, "scale": ("int32", [3, 4, 5])}, {}, "scale data type int32"),
    (LN, {"input": X4}, {"axes": 1}, "axes must be a sequence"),
])
def test_validation_errors(op, descs, options, match):
    with pytest.raises(WebNNTypeError, match=rf"^\[norm/1\] {op}: .*{match}"):
        build(op, descs, **options)


def test_defaults_filled_and_epsilon_cast():
    b, _ = build(LN, {"input": ("float16", [2, 3, 4])})
    assert b.graph.operations[0].options == {"axes": [1, 2], "epsilon": float(np.float16(1e-5))}
    b, _ = build(LN, {"input": ("float32", [7])})
    assert b.graph.operations[0].options["axes"] == []
    b, _ = build(LN, {"input": ("float32", [])})
    assert b.graph.operations[0].options["axes"] == []
    b, _ = build(BN, {"input": ("float32", [2, 3]), "mean": ("float32", [3]), "variance": ("float32", [3])})
    assert b.graph.operations[0].options == {"axis": 1, "epsilon": float(np.float32(1e-5))}
    b, _ = build(IN, {"input": X4})
    assert b.graph.operations[0].options == {"layout": "nchw", "epsilon": float(np.float32(1e-5))}


@pytest.mark.parametrize("dtype, epsilon, want", [
    ("float32", 1e-5, float(np.float32(1e-5))), ("float16", 1e-5, float(np.float16(1e-5))),
    ("float16", 2.7, float(np.float16(2.7))), ("float16", 1e-8, 0.0),  # below half the smallest subnormal
    ("float16", 3e-8, float(np.float16(2**-24))), ("float32", 1e-46, 0.0), ("float32", 0.0, 0.0),
    ("float16", 70000.0, float("inf")),  # finite as a double, past float16's largest value: Infinity
])
def test_epsilon_is_cast_like_other_mlnumber_options(dtype, epsilon, want):
    """epsilon (a double) goes through the same cast as clamp's bounds and pad's value (py_core/spec/mlnumber.py):
    nearest value of the input type, ties to even, overflow to Infinity."""
    for op, descs in [(BN, {"input": (dtype, [2, 3]), "mean": (dtype, [3]), "variance": (dtype, [3])}),
                      (IN, {"input": (dtype, [1, 2, 2, 2])}), (LN, {"input": (dtype, [2, 3])})]:
        b, _ = build(op, descs, epsilon=epsilon)
        assert b.graph.operations[0].options["epsilon"] == want, op


@pytest.mark.parametrize("op, descs, options", [
    (BN, {"input": ("float16", [5]), "mean": ("float16", [5]), "variance": ("float16", [5])}, {"axis": 0}),
    (BN, {"input": X4, "mean": ("float32", [5]), "variance": ("float32", [5]), "scale": ("float32", [5]),
          "bias": ("float32", [5])}, {"axis": 3}),
    (IN, {"input": X4, "scale": ("float32", [5]), "bias": ("float32", [5])}, {"layout": "nhwc"}),
    (LN, {"input": X4, "scale": ("float32", [5, 3]), "bias": ("float32", [5, 3])}, {"axes": [3, 1]}),
    (LN, {"input": ("float32", []), "scale": ("float32", [])}, {}),
])
def test_valid_shapes(op, descs, options):
    _, out = build(op, descs, **options)
    assert out.shape == descs["input"][1] and out.data_type.value == descs["input"][0]
