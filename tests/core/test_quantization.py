"""quantizeLinear and dequantizeLinear against a float64 formula written from the spec text (its own
repeat-based blockwise expansion and round-half-even) and onnxruntime QuantizeLinear/DequantizeLinear
(opset 21: per-tensor, per-axis and single-axis blocked).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-quantizelinear"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from py_core.builder import GraphBuilder
from py_core.errors import WebNNTypeError
from py_core.runtime.executor import prepare

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
QTYPES = [np.dtype(t) for t in (np.uint8, np.int8, np.uint32, np.int32)]
ONNX_TYPE = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.float16): 10,
             np.dtype(np.int32): 6}


def run(op: str, x: np.ndarray, scale: np.ndarray, zero: np.ndarray, label: str = "") -> np.ndarray:
    """input/scale/zeroPoint as graph inputs -> op -> output, through the executor (checks dtype/shape)."""
    b = GraphBuilder()
    arrays = {"input": x, "scale": scale, "zeroPoint": zero}
    ops = {k: b.input(k, {"dataType": a.dtype.name, "shape": list(a.shape)}) for k, a in arrays.items()}
    out = getattr(b, op)(label=label, **ops)
    return prepare(b.build({"y": out})).run(arrays)["y"]


def expand(p: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Blockwise broadcast: repeat every element shape[i] / p.shape[i] times along each axis."""
    for axis, size in enumerate(shape):
        p = np.repeat(p, size // p.shape[axis], axis=axis)
    return p


def round_half_even(v: np.ndarray) -> np.ndarray:
    """Nearest integer, ties to even (infinities and NaN pass through)."""
    fl = np.floor(v)
    frac = v - fl
    r = np.where(frac > 0.5, fl + 1, np.where(frac < 0.5, fl, fl + np.mod(fl, 2)))
    return np.where(np.isfinite(v), r, v)


def quantize_ref(x, scale, zero):
    """clamp(roundEven(x / scale) + zeroPoint) in float64; NaN -> 0 as the spec's cast to an integer type."""
    info = np.iinfo(zero.dtype)
    with np.errstate(all="ignore"):
        q = round_half_even(x.astype(np.float64) / expand(scale, x.shape).astype(np.float64))
        q = np.clip(q + expand(zero, x.shape).astype(np.float64), info.min, info.max)
    return np.nan_to_num(q, nan=0.0).astype(zero.dtype)


def dequantize_ref(x, scale, zero):
    """(x - zeroPoint) * scale in float64 (both integers are exact in float64), rounded to scale's type."""
    d = x.astype(np.float64) - expand(zero, x.shape).astype(np.float64)
    return d * expand(scale, x.shape).astype(np.float64)


def onnx_run(op: str, x, scale, zero, axis: int | None = None, block: int | None = None):
    """onnxruntime QuantizeLinear/DequantizeLinear, opset 21."""
    attrs = {} if axis is None else {"axis": axis}
    if block:
        attrs["block_size"] = block
    out_type = ONNX_TYPE[zero.dtype] if op == "QuantizeLinear" else ONNX_TYPE[scale.dtype]
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", ONNX_TYPE[x.dtype], x.shape)],
        [helper.make_tensor_value_info("y", out_type, x.shape)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def quant_params(rng, shape, qtype, fdtype):
    """Random scales (both signs, spread magnitudes) and zero points (the type's full 8-bit range)."""
    scale = (rng.choice([-1, 1], shape) * 2.0 ** rng.uniform(-4, 3, shape)).astype(fdtype)
    info = np.iinfo(qtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return scale, rng.integers(lo, hi, shape, endpoint=True).astype(qtype)


GRANULARITY = {  # input shape -> scale shape
    "scalar": ((), ()), "per-tensor": ((2, 3, 4), (1, 1, 1)), "per-axis": ((2, 3, 4), (1, 3, 1)),
    "blockwise": ((6, 4, 5), (2, 2, 1)), "full": ((3, 2, 5), (3, 2, 5)),
    "rank5": ((2, 1, 2, 4, 3), (1, 1, 2, 2, 3)),
}


@pytest.mark.parametrize("granularity", list(GRANULARITY))
@pytest.mark.parametrize("fdtype", [F32, F16])
@pytest.mark.parametrize("qtype", QTYPES)
def test_quantize_vs_formula(granularity, fdtype, qtype):
    rng = np.random.default_rng(len(granularity) * 7 + qtype.itemsize)
    shape, pshape = GRANULARITY[granularity]
    scale, zero = quant_params(rng, pshape, qtype, fdtype)
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-1, 3.5, shape)).astype(fdtype)
    got = run("quantizeLinear", x, scale, zero, label="q")
    assert got.dtype == qtype and got.shape == shape
    np.testing.assert_array_equal(got, quantize_ref(x, scale, zero))


@pytest.mark.parametrize("qtype", QTYPES)
def test_quantize_special_values(qtype):
    info = np.iinfo(qtype)
    # exact ties at scale 0.5 (2.5 / 0.5 ... ): half-even; +-inf and huge values saturate; NaN and 0/0 give 0
    x = np.array([0.25, 0.75, 1.25, -0.25, -0.75, np.inf, -np.inf, np.nan, 3e38, -3e38, 0.0, 1.0], F32)
    scale = np.full_like(x, 0.5)
    scale[-2:] = 0.0  # 0 / 0 -> NaN -> 0; 1 / 0 -> +inf -> max
    zero = np.zeros(x.shape, qtype)
    got = run("quantizeLinear", x, scale, zero)
    want = [0, 2, 2, 0, -2, info.max, info.min, 0, info.max, info.min, 0, info.max]
    np.testing.assert_array_equal(got, np.clip(want, info.min, info.max).astype(qtype))
    np.testing.assert_array_equal(got, quantize_ref(x, scale, zero))


@pytest.mark.parametrize("fdtype", [F32, F16])
@pytest.mark.parametrize("qtype", [np.dtype(np.uint8), np.dtype(np.int8)])
@pytest.mark.parametrize("kind", ["per-tensor", "per-axis", "blocked"])
def test_quantize_vs_onnxruntime(fdtype, qtype, kind):
    rng = np.random.default_rng(3)
    shape = (4, 6, 5)
    pshape = {"per-tensor": (1, 1, 1), "per-axis": (1, 6, 1), "blocked": (4, 3, 5)}[kind]
    scale, zero = quant_params(rng, pshape, qtype, fdtype)
    x = (rng.standard_normal(shape) * 50).astype(fdtype)
    got = run("quantizeLinear", x, scale, zero)
    if kind == "per-tensor":
        want = onnx_run("QuantizeLinear", x, scale.reshape(()), zero.reshape(()))
    elif kind == "per-axis":
        want = onnx_run("QuantizeLinear", x, scale.reshape(-1), zero.reshape(-1), axis=1)
    else:
        want = onnx_run("QuantizeLinear", x, scale, zero, axis=1, block=2)
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    # onnxruntime divides in float32 (float16 inputs too): ties may round differently, never by more than 1
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.97


@pytest.mark.parametrize("granularity", list(GRANULARITY))
@pytest.mark.parametrize("fdtype", [F32, F16])
@pytest.mark.parametrize("qtype", QTYPES)
def test_dequantize_vs_formula(granularity, fdtype, qtype):
    rng = np.random.default_rng(len(granularity) + qtype.itemsize)
    shape, pshape = GRANULARITY[granularity]
    scale, _ = quant_params(rng, pshape, qtype, fdtype)
    info = np.iinfo(qtype)  # inputs and zero points over the type's full range (extremes included)
    x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=qtype)
    zero = rng.integers(info.min, info.max, pshape, endpoint=True, dtype=qtype)
    x.reshape(-1)[:2] = [info.min, info.max][: x.size]
    got = run("dequantizeLinear", x, scale, zero, label="dq")
    assert got.dtype == fdtype and got.shape == shape
    want = dequantize_ref(x, scale, zero)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, want.astype(fdtype))  # float64 result rounded once


def test_dequantize_nan_inf_scale():
    x = np.array([[1, 2, 3]], np.int8)
    scale = np.array([[np.nan, np.inf, -np.inf]], F32)
    zero = np.array([[0, 2, 0]], np.int8)
    got = run("dequantizeLinear", x, scale, zero)
    assert np.isnan(got[0, 0]) and np.isnan(got[0, 1]) and got[0, 2] == -np.inf  # 0 * inf is NaN


@pytest.mark.parametrize("fdtype", [F32, F16])
@pytest.mark.parametrize("qtype", [np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int32)])
@pytest.mark.parametrize("kind", ["per-tensor", "per-axis", "blocked"])
def test_dequantize_vs_onnxruntime(fdtype, qtype, kind):
    rng = np.random.default_rng(4)
    shape = (3, 4, 6)
    pshape = {"per-tensor": (1, 1, 1), "per-axis": (1, 1, 6), "blocked": (3, 2, 6)}[kind]
    scale, zero = quant_params(rng, pshape, qtype, fdtype)
    if qtype == np.int32:
        zero[...] = 0  # ONNX: int32 dequantization has no zero point
    info = np.iinfo(qtype)
    x = rng.integers(max(info.min, -2**20), min(info.max, 2**20), shape, endpoint=True, dtype=qtype)
    got = run("dequantizeLinear", x, scale, zero)
    if kind == "per-tensor":
        want = onnx_run("DequantizeLinear", x, scale.reshape(()), zero.reshape(()))
    elif kind == "per-axis":
        want = onnx_run("DequantizeLinear", x, scale.reshape(-1), zero.reshape(-1), axis=2)
    else:
        want = onnx_run("DequantizeLinear", x, scale, zero, axis=1, block=2)
    assert want.dtype == fdtype
    # within 1 ULP of onnxruntime (which rounds the float32 product; ours rounds the exact one)
    finite = np.isfinite(want)  # float16 overflows to +-inf for large int32 inputs, in both
    np.testing.assert_array_equal(got[~finite], want[~finite])
    tol = np.spacing(np.abs(want[finite])).astype(np.float64)
    assert np.all(np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64)) <= tol)


# ---------------------------------------------------------------------------------------- validation

BAD = [  # (op, input, scale, zeroPoint, words the message must contain)
    ("quantizeLinear", ("float32", [3, 2, 5]), ("float32", [5]), ("int8", [5]), "rank"),
    ("quantizeLinear", ("float32", [3, 2, 5]), ("float32", [1, 1, 5]), ("int8", [1, 2, 5]), "shape"),
    ("quantizeLinear", ("float32", [3, 2, 5]), ("float32", [2, 1, 5]), ("int8", [2, 1, 5]), "blockwise"),
    ("quantizeLinear", ("float32", [6, 4]), ("float32", [4, 4]), ("uint8", [4, 4]), "4 does not divide 6"),
    ("quantizeLinear", ("float32", [3, 2, 5]), ("float16", [3, 1, 5]), ("int8", [3, 1, 5]), "scale data"),
    ("quantizeLinear", ("int32", [3, 2, 5]), ("float32", [1, 1, 5]), ("int8", [1, 1, 5]), "input data type"),
    ("quantizeLinear", ("float32", [3]), ("float32", [1]), ("float16", [1]), "zeroPoint data type"),
    ("quantizeLinear", ("float32", [3]), ("float32", [1]), ("int64", [1]), "zeroPoint data type"),
    ("quantizeLinear", ("float16", []), ("float16", []), ("uint64", []), "zeroPoint data type"),
    ("dequantizeLinear", ("float32", [3, 2]), ("float32", [1, 1]), ("int8", [1, 1]), "input data type"),
    ("dequantizeLinear", ("int8", [3, 2]), ("float32", [1, 1]), ("uint8", [1, 1]), "zeroPoint data type"),
    ("dequantizeLinear", ("int8", [3, 2]), ("int32", [1, 1]), ("int8", [1, 1]), "scale data type"),
    ("dequantizeLinear", ("uint8", [3, 2]), ("float32", [3, 2, 1]), ("uint8", [3, 2, 1]), "rank"),
    ("dequantizeLinear", ("uint8", [4, 2]), ("float32", [3, 2]), ("uint8", [3, 2]), "3 does not divide 4"),
    ("dequantizeLinear", ("int32", [4, 2]), ("float32", [2, 2]), ("int32", [2, 1]), "shape"),
]


@pytest.mark.parametrize("op,x,scale,zero,words", BAD)
def test_validation_errors(op, x, scale, zero, words):
    b = GraphBuilder()
    ops = [b.input(n, d) for n, d in (("x", x), ("s", scale), ("z", zero))]
    with pytest.raises(WebNNTypeError, match=rf"\[qdq_7\] {op}: .*{words}"):
        getattr(b, op)(*ops, label="qdq_7")


@pytest.mark.parametrize("op,x,scale,zero,out", [
    ("quantizeLinear", ("float32", [6, 4, 5]), ("float32", [2, 2, 1]), ("int8", [2, 2, 1]), "int8"),
    ("quantizeLinear", ("float16", [3, 2, 5]), ("float16", [1, 1, 1]), ("uint32", [1, 1, 1]), "uint32"),
    ("dequantizeLinear", ("uint8", [6, 4, 5]), ("float16", [3, 4, 1]), ("uint8", [3, 4, 1]), "float16"),
    ("dequantizeLinear", ("int32", []), ("float32", []), ("int32", []), "float32"),
])
def test_output_descriptor(op, x, scale, zero, out):
    b = GraphBuilder()
    y = getattr(b, op)(b.input("x", x), b.input("s", scale), b.input("z", zero))
    assert y.data_type.value == out and y.shape == x[1]
