"""Activation operators against torch.nn.functional in float64 (or exact Python ints), the WPT vectors,
and the validation errors.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_close_ulps, conformance_cases, decode_wpt, run_op, t64

from py_core.builder import GraphBuilder, graph_from_json
from py_core.errors import WebNNTypeError
from py_core.runtime.executor import prepare
from py_core.spec import OPS

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
FLOATS = [F32, F16]
SIGNED = FLOATS + [np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.int8)]
INTS = [np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64, np.int8, np.uint8)]
SEEDS = range(3)
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 100.0, -100.0, 1e4, -1e4, 1e-6, -1e-6]


def random_shape(rng: np.random.Generator, min_rank: int = 0) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, 5, size=int(rng.integers(min_rank, 5))))


def random_input(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], scale: float = 4.0,
                 specials: bool = True) -> np.ndarray:
    """Normal values plus, for floats, a sprinkling of zeros, infinities, NaN and large magnitudes."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    x = np.asarray(rng.standard_normal(shape) * scale)
    if specials and x.size:
        mask = np.asarray(rng.random(shape) < 0.3)
        x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
    return x.astype(dtype)


# -------------------------------------------------------------------------------- element-wise activations
# name -> (torch float64 oracle, option sampler, float32 ULPs)
UNARY = {
    "sigmoid": (lambda t, o: torch.sigmoid(t), lambda r: {}, 4),
    "tanh": (lambda t, o: torch.tanh(t), lambda r: {}, 4),
    "softplus": (lambda t, o: F.softplus(t), lambda r: {}, 4),
    "softsign": (lambda t, o: F.softsign(t), lambda r: {}, 2),
    "hardSwish": (lambda t, o: F.hardswish(t), lambda r: {}, 2),
    "elu": (lambda t, o: F.elu(t, o.get("alpha", 1.0)), lambda r: {"alpha": float(r.uniform(0.1, 3))}, 4),
    "leakyRelu": (lambda t, o: F.leaky_relu(t, o.get("alpha", 0.01)),
                  lambda r: {"alpha": float(r.uniform(-2, 2))}, 1),
    "hardSigmoid": (lambda t, o: torch.clamp(o.get("alpha", 0.2) * t + o.get("beta", 0.5), 0, 1),
                    lambda r: {"alpha": float(r.uniform(-1, 1)), "beta": float(r.uniform(-1, 1))}, 2),
    "linear": (lambda t, o: o.get("alpha", 1.0) * t + o.get("beta", 0.0),
               lambda r: {"alpha": float(r.uniform(-3, 3)), "beta": float(r.uniform(-3, 3))}, 2),
}


def _cast_options(opts: dict, dtype: np.dtype) -> dict:
    """The spec casts double options to the input type before computing."""
    return {k: float(np.asarray(v, dtype)) for k, v in opts.items()}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_against_torch(op, dtype, seed):
    oracle, sampler, ulps32 = UNARY[op]
    rng = np.random.default_rng(seed)
    x = random_input(rng, dtype, random_shape(rng))
    opts = sampler(rng) if seed else {}  # seed 0 exercises the spec defaults
    got = run_op(op, {"input": x}, **opts)
    expected = oracle(t64(x), _cast_options(opts, dtype)).numpy()
    atol = 0.0
    if op in ("linear", "hardSigmoid"):
        # alpha * x + beta cancels near 0: allow an error relative to the terms, not the result
        o = {"alpha": 1.0, "beta": 0.0, **_cast_options(opts, dtype)} if op == "linear" else \
            {"alpha": 0.2, "beta": 0.5, **_cast_options(opts, dtype)}
        terms = np.abs(o["alpha"] * x.astype(np.float64)) + abs(o["beta"])
        atol = np.nan_to_num(np.finfo(dtype).eps * terms, posinf=0.0)
    assert_close_ulps(got, expected, ulps32 if dtype == F32 else 1, atol)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu_against_torch(dtype, seed):
    pytest.importorskip("py_core.kernels.mathfn")
    rng = np.random.default_rng(seed)
    x = random_input(rng, dtype, random_shape(rng))
    assert_close_ulps(run_op("gelu", {"input": x}), F.gelu(t64(x)).numpy(), 4 if dtype == F32 else 1)


@pytest.mark.parametrize("dtype", SIGNED, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
def test_relu(dtype, seed):
    rng = np.random.default_rng(seed)
    x = random_input(rng, dtype, random_shape(rng))
    got = run_op("relu", {"input": x})
    if dtype.kind == "f":
        assert_close_ulps(got, torch.relu(t64(x)).numpy(), 0)
    else:  # exact, including int64 extremes
        assert got.dtype == dtype
        assert [int(v) for v in got.ravel().tolist()] == [max(int(v), 0) for v in x.ravel().tolist()]


def test_extreme_values_are_finite_and_exact():
    """Stable formulas: no overflow at the float32 range ends, and exact limits at infinity."""
    x = np.array([-np.inf, -1e30, -104.0, -88.0, 0.0, 88.0, 104.0, 1e30, np.inf], np.float32)
    want = [0, 0, 0, pytest.approx(6.05e-39, rel=1e-2), 0.5, 1, 1, 1, 1]
    assert run_op("sigmoid", {"input": x}).tolist() == want
    sp = run_op("softplus", {"input": x})
    assert sp[0] == 0 and sp[-1] == np.inf and sp[-2] == np.float32(1e30) and np.isfinite(sp[1:-1]).all()
    # softsign and hardSwish follow the spec formulas literally: inf/inf and -inf * 0 are NaN
    assert np.isnan(run_op("softsign", {"input": x})[[0, -1]]).all()
    assert run_op("softsign", {"input": x})[[1, -2]].tolist() == [-1, 1]
    assert np.isnan(run_op("hardSwish", {"input": x})[0]) and run_op("hardSwish", {"input": x})[-1] == np.inf
    assert run_op("elu", {"input": x}, alpha=2.0)[[0, -1]].tolist() == [-2, np.inf]
    assert np.isnan(run_op("sigmoid", {"input": np.array([np.nan], np.float16)})).all()


# ------------------------------------------------------------------------------------------------- clamp
def _clamp_oracle(x: np.ndarray, lo, hi) -> np.ndarray:
    if x.dtype.kind == "f":  # clamping commutes with monotone rounding, so float64 bounds are fine
        t = t64(x)
        return torch.clamp(t, -math.inf if lo is None else lo, math.inf if hi is None else hi).numpy()
    vals = [int(v) for v in x.ravel().tolist()]
    out = [min(max(v, -(2**70) if lo is None else lo), 2**70 if hi is None else hi) for v in vals]
    return np.array(out, dtype=object).reshape(x.shape)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_clamp(dtype, seed):
    rng = np.random.default_rng(seed)
    x = random_input(rng, dtype, random_shape(rng))
    if dtype.kind == "f":
        a, b = sorted(float(v) for v in rng.uniform(-5, 5, 2))
    else:
        info = np.iinfo(dtype)
        a, b = sorted(int(v) for v in rng.integers(info.min, info.max, 2, dtype=dtype, endpoint=True))
    lo, hi = [(a, b), (a, None), (None, b), (None, None)][seed % 4]
    opts = {k: v for k, v in (("minValue", lo), ("maxValue", hi)) if v is not None}
    got = run_op("clamp", {"input": x}, **opts)
    want = _clamp_oracle(x, lo, hi)
    if dtype.kind == "f":
        assert_close_ulps(got, want, 0)
    else:  # int64/uint64 exact: compare as Python ints
        assert got.dtype == dtype and [int(v) for v in got.ravel().tolist()] == list(want.ravel())


@pytest.mark.parametrize("dtype, x, opts, want", [
    # the WPT mlNumber cases: bigints saturate, floats truncate toward zero and saturate
    ("int64", [-21474836470, 21474836470, -2, 1, 0], {"minValue": 2**63 + 12}, [2**63 - 1] * 5),
    ("int64", [-21474836470, 21474836470, -2, 1, 0], {"maxValue": -(2**63) - 12}, [-(2**63)] * 5),
    ("uint64", [42949672950, 127, 5, 0], {"minValue": 184467440737095511615}, [2**64 - 1] * 4),
    ("uint64", [42949672950, 127, 5, 0], {"maxValue": -1}, [0] * 4),
    ("uint64", [129, 4294967295, 127, 1, 0], {"maxValue": 128.0}, [128, 128, 127, 1, 0]),
    ("uint8", [255, 127, 5, 0], {"minValue": 1000.0}, [255] * 4),
    ("int64", [3, 4, 5, -1, 0], {"minValue": 3.9}, [3, 4, 5, 3, 3]),
    ("int64", [-41, 2**53 + 3, -4], {"minValue": -2, "maxValue": 2**53}, [-2, 2**53, -2]),
    ("int32", [5, -5], {"minValue": float("nan")}, [5, -5]),
    # NaN bounds do not clamp; infinite bounds saturate (WPT "minValue as NaN", "minValue as Infinity")
    ("float32", [-np.inf, np.inf, -3e35, np.nan], {"minValue": math.nan}, [-np.inf, np.inf, -3e35, np.nan]),
    ("float32", [-np.inf, np.inf, -3e35, 1], {"maxValue": float("nan")}, [-np.inf, np.inf, -3e35, 1]),
    ("float32", [-np.inf, np.inf, -3e35, 1], {"minValue": math.inf}, [np.inf] * 4),
    ("float32", [-np.inf, np.inf, -3e35, 1], {"minValue": 0.5, "maxValue": 0.5}, [0.5] * 4),
    ("float16", [1e4, -1e4, 3], {"minValue": -70000, "maxValue": 1e5}, [1e4, -1e4, 3]),
    ("float16", [1, 2, 3], {"minValue": 2.0001, "maxValue": 2.0002}, [2, 2, 2]),
])
def test_clamp_bound_casting(dtype, x, opts, want):
    got = run_op("clamp", {"input": np.array(x, dtype=dtype)}, **opts)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.array(want, dtype=dtype))  # exact, NaN == NaN


# ------------------------------------------------------------------ clamp: MLNumber bounds cast to the input type
# The cast rule (py_core/spec/mlnumber.py): NaN -> 0, truncate toward zero as the WPT mlNumber vectors expect
# (the spec's ConvertToInt would round half to even), saturate to the type's range.  Each case gives the
# integer a value truncates to, written out by hand; saturation is applied per type below.
MLNUMBER_TRUNCATED = [
    (2.5, 2), (-2.5, -2), (2.7, 2), (-2.7, -2), (3.5, 3), (0.9999, 0), (-0.0, 0),
    (math.inf, 2**80), (-math.inf, -(2**80)), (1e30, 2**80), (-1e30, -(2**80)),  # 2**80: beyond every type
    (300, 300), (-129, -129), (2**32, 2**32), (-(2**31) - 1, -(2**31) - 1),
    (4294967295.9, 4294967295), (-2147483648.7, -2147483648),  # half-even rounding would give 2**32, -2**31-1
    (2**63, 2**63), (2**64 + 5, 2**64 + 5), (-(2**63) - 1, -(2**63) - 1),  # bigints
]
MLNUMBER_INT_TYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]


def _run_clamp(x: np.ndarray, **options) -> list[int]:
    from py_core.runtime.executor import prepare

    b = GraphBuilder()
    out = b.clamp(b.input("x", {"dataType": x.dtype.name, "shape": list(x.shape)}), **options)
    got = prepare(b.build({"y": out})).run({"x": x})["y"]
    assert got.dtype == x.dtype
    return [int(v) for v in got.tolist()]  # exact for int64/uint64


@pytest.mark.parametrize("dtype", MLNUMBER_INT_TYPES)
@pytest.mark.parametrize("value, truncated", MLNUMBER_TRUNCATED, ids=repr)
def test_clamp_mlnumber_cast_to_integer_types(dtype, value, truncated):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    bound = min(max(truncated, lo), hi)
    xs = sorted({lo, lo + 1, 0, 1, 2, 3, 4, 300 % (hi + 1), hi - 1, hi})
    x = np.array(xs, dtype=dtype)
    assert _run_clamp(x, minValue=value) == [max(v, bound) for v in xs]
    assert _run_clamp(x, maxValue=value) == [min(v, bound) for v in xs]
    assert _run_clamp(x, minValue=value, maxValue=value) == [bound] * len(xs)


@pytest.mark.parametrize("dtype", MLNUMBER_INT_TYPES)
def test_clamp_nan_bound_is_open_for_integer_types(dtype):
    """NaN is not cast to 0 here: clamp treats a NaN bound as absent (WPT "minValue as NaN")."""
    info = np.iinfo(dtype)
    xs = [int(info.min), 0, 3, int(info.max)]
    x = np.array(xs, dtype=dtype)
    assert _run_clamp(x, minValue=math.nan) == xs
    assert _run_clamp(x, maxValue=math.nan) == xs
    assert _run_clamp(x, minValue=math.nan, maxValue=2) == [min(v, 2) for v in xs]


@pytest.mark.parametrize("dtype, value, want", [
    ("int8", 2.7, 2), ("int8", -2.7, -2), ("uint8", -2.5, 0), ("int32", math.inf, 2**31 - 1),
    ("uint32", -math.inf, 0), ("int64", 1e300, 2**63 - 1), ("uint64", 2**64 + 5, 2**64 - 1),
    ("float16", 2.7, float(np.float16(2.7))), ("float16", 65520.0, math.inf), ("float16", -1e-8, -0.0),
    ("float32", 1e39, math.inf), ("float32", 2**60 + 2**36 + 1, float(2**60 + 2**37)),  # one rounding, not two
])
def test_clamp_records_the_cast_bounds(dtype, value, want):
    b = GraphBuilder()
    b.clamp(b.input("x", {"dataType": dtype, "shape": [1]}), minValue=value, maxValue=value)
    opts = b.graph.operations[0].options
    assert opts["minValue"] == opts["maxValue"] == want and type(opts["minValue"]) is type(want)
    assert math.copysign(1, opts["minValue"]) == math.copysign(1, want)  # -0.0 stays -0.0 for floats


# ------------------------------------------------------------------------------------------ prelu, softmax
def _broadcastable_pair(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    out = random_shape(rng)
    a = tuple(d if rng.random() < 0.7 else 1 for d in out[int(rng.integers(0, len(out) + 1)):])
    b = tuple(d if rng.random() < 0.7 else 1 for d in out[int(rng.integers(0, len(out) + 1)):])
    return (out, b) if rng.random() < 0.5 else (a, b)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", SIGNED, ids=str)
def test_prelu(dtype, seed):
    rng = np.random.default_rng(seed)
    xs, ss = _broadcastable_pair(rng)
    if dtype.kind == "f":
        x, s = random_input(rng, dtype, xs), random_input(rng, dtype, ss, specials=False)
        got = run_op("prelu", {"input": x, "slope": s})
        tx, ts = t64(x), t64(s)
        assert_close_ulps(got, torch.where(tx < 0, tx * ts, tx).numpy(), 1)
    else:  # small values: the products fit every type, so the oracle is exact integer arithmetic
        x, s = np.asarray(rng.integers(-11, 12, xs), dtype), np.asarray(rng.integers(-11, 12, ss), dtype)
        got = run_op("prelu", {"input": x, "slope": s})
        tx, ts = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(s.astype(np.int64))
        np.testing.assert_array_equal(got, torch.where(tx < 0, tx * ts, tx).numpy().astype(dtype))
        assert got.dtype == dtype


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax(dtype, seed):
    rng = np.random.default_rng(seed)
    x = random_input(rng, dtype, random_shape(rng, 1), scale=10, specials=seed % 2 == 0)
    if seed % 3 == 0:
        x = (x.astype(np.float64) + rng.choice([-1e4, 1e4, 80.0])).astype(dtype)  # shift: needs the max trick
    axis = int(rng.integers(0, x.ndim))
    got = run_op("softmax", {"input": x}, axis=axis)
    want = F.softmax(t64(x), dim=axis).numpy()
    assert_close_ulps(got, want, 8 if dtype == F32 else 2, atol=np.finfo(dtype).eps / 4)


# ------------------------------------------------------------------------------------------ WPT vectors
def _ref(handles: dict, v):
    return handles[v] if isinstance(v, str) and v in handles else decode_wpt(v)


def run_wpt_case(case: dict) -> tuple[np.ndarray, np.ndarray]:
    """Build one single-operator WPT graph (inputs, constants, operand-valued options) and run it."""
    g = case["graph"]
    b = GraphBuilder()
    handles, feeds = {}, {}
    for name, spec in g["inputs"].items():
        desc = spec["descriptor"]
        arr = np.array([decode_wpt(v) for v in spec["data"]], dtype=desc["dataType"]).reshape(desc["shape"])
        if spec.get("constant"):
            handles[name] = b.constant(desc, arr)
        else:
            handles[name] = b.input(name, desc)
            feeds[name] = arr
    (op,) = g["operators"]
    args = {}
    for arg in op["arguments"]:
        for k, v in arg.items():
            if k == "options":
                args.update({ok: _ref(handles, ov) for ok, ov in v.items()})
            else:
                args[k] = _ref(handles, v)
    out = b.call(op["name"], args)
    got = prepare(b.build({"y": out})).run(feeds)["y"]
    (exp,) = g["expectedOutputs"].values()
    want = np.array([decode_wpt(v) for v in exp["data"]], dtype=object).reshape(exp["descriptor"]["shape"])
    assert got.dtype.name == exp["descriptor"]["dataType"]
    return got, want


# the cases whose JSON lost NaN/Infinity (left out here) are re-made in the tests above
@pytest.mark.parametrize("case", conformance_cases("relu", "sigmoid", "tanh", "elu", "hard_sigmoid", "hard_swish",
                                                   "leaky_relu", "linear", "clamp", "softmax"))
def test_wpt_vectors(case):
    got, want = run_wpt_case(case)
    if got.dtype.kind in "iu":
        assert [int(v) for v in got.ravel().tolist()] == [int(v) for v in want.ravel()]
    else:
        assert_close_ulps(got, want.astype(np.float64), 4, atol=np.finfo(got.dtype).eps / 2)


# ------------------------------------------------------------------------------------------- validation
def build(op: str, descs: dict[str, tuple[str, list[int]]], label: str = "lbl", **options):
    b = GraphBuilder()
    args = {k: b.input(k, {"dataType": t, "shape": s}) for k, (t, s) in descs.items()}
    return b.call(op, {**args, **options}, label)


@pytest.mark.parametrize("op, descs, options, match", [
    ("relu", {"input": ("uint8", [2])}, {}, "data type uint8"),
    ("relu", {"input": ("uint32", [2])}, {}, "data type uint32"),
    ("sigmoid", {"input": ("int32", [2])}, {}, "data type int32"),
    ("gelu", {"input": ("int8", [2])}, {}, "data type int8"),
    ("softmax", {"input": ("int32", [2, 3])}, {"axis": 1}, "data type int32"),
    ("softmax", {"input": ("float32", [2, 3])}, {"axis": 2}, "axis 2 is out of range for rank 2"),
    ("softmax", {"input": ("float32", [])}, {"axis": 0}, r"rank 0 \(shape \[\]\) must be between 1 and 8"),
    ("softmax", {"input": ("float32", [2, 3])}, {}, "missing required argument 'axis'"),
    ("softmax", {"input": ("float32", [2, 3])}, {"axis": -1}, "axis must be an unsigned long"),
    ("clamp", {"input": ("float32", [2])}, {"minValue": 3.0, "maxValue": 1.0}, "minValue .* than maxValue"),
    ("clamp", {"input": ("int8", [2])}, {"minValue": 5, "maxValue": -5}, "greater than maxValue"),
    ("clamp", {"input": ("uint64", [2])}, {"minValue": 2**64 + 5, "maxValue": 2**63}, "than maxValue"),
    ("clamp", {"input": ("float32", [2])}, {"minValue": "1"}, "minValue must be a number"),
    ("clamp", {"input": ("float32", [2])}, {"maxValue": True}, "maxValue must be a number"),
    ("elu", {"input": ("float32", [2])}, {"alpha": float("nan")}, "alpha must be a finite number"),
    ("linear", {"input": ("float16", [2])}, {"beta": float("inf")}, "beta must be a finite number"),
    ("leakyRelu", {"input": ("float32", [2])}, {"alpha": "0.1"}, "alpha must be a finite number"),
    ("prelu", {"input": ("float32", [3, 2, 5]), "slope": ("float32", [2])}, {}, "not broadcastable"),
    ("prelu", {"input": ("float32", [3, 2, 5]), "slope": ("int32", [3, 2, 5])}, {}, "must match input"),
    ("prelu", {"input": ("uint32", [3]), "slope": ("uint32", [3])}, {}, "data type uint32"),
])
def test_validation_errors(op, descs, options, match):
    with pytest.raises(WebNNTypeError, match=rf"^\[lbl\] {op}: .*{match}"):
        build(op, descs, **options)


@pytest.mark.parametrize("op, descs, options, shape", [
    ("prelu", {"input": ("float32", [3, 2, 5]), "slope": ("float32", [2, 5])}, {}, [3, 2, 5]),
    ("prelu", {"input": ("float32", [2, 5]), "slope": ("float32", [3, 1, 1])}, {}, [3, 2, 5]),  # 2-way
    ("prelu", {"input": ("int8", [3]), "slope": ("int8", [])}, {}, [3]),
    ("clamp", {"input": ("int8", [2])}, {"minValue": 200, "maxValue": 300}, [2]),  # equal once cast to int8
    ("clamp", {"input": ("int32", [2])}, {"minValue": 1.9, "maxValue": 1.2}, [2]),  # 1 == 1 after truncation
    ("clamp", {"input": ("float16", [2])}, {"minValue": 70000, "maxValue": 1e300}, [2]),  # +inf == +inf
    ("clamp", {"input": ("float32", [2])}, {"minValue": float("nan"), "maxValue": -1}, [2]),
    ("softmax", {"input": ("float16", [1, 2, 3, 4, 5])}, {"axis": 4}, [1, 2, 3, 4, 5]),
    ("relu", {"input": ("int64", [])}, {}, []),
])
def test_valid_shapes(op, descs, options, shape):
    assert build(op, descs, **options).shape == shape


def test_options_are_cast_and_filled():
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float16", "shape": [2]})
    b.hardSigmoid(x)
    b.clamp(x, maxValue=1e-8)
    b.leakyRelu(b.input("y", {"dataType": "float32", "shape": [1]}), alpha=0.1)
    b.clamp(b.input("z", {"dataType": "uint8", "shape": [1]}))
    opts = [op.options for op in b.graph.operations]
    assert opts[0] == {"alpha": float(np.float16(0.2)), "beta": 0.5}
    assert opts[1] == {"minValue": -math.inf, "maxValue": float(np.float16(1e-8))}
    assert opts[2] == {"alpha": float(np.float32(0.1))}
    assert opts[3] == {"minValue": 0, "maxValue": 255}


def test_support_limits_rows():
    relu_types = {"float32", "float16", "int32", "int64", "int8"}
    assert {t.value for t in OPS["relu"].param("input").types} == relu_types
    assert {t.value for t in OPS["sigmoid"].param("input").types} == {"float32", "float16"}
    assert len(OPS["clamp"].param("input").types) == 8
    assert [p.name for p in OPS["softmax"].params] == ["input", "axis"]
    assert OPS["softmax"].param("axis").required
    assert OPS["elu"].param("alpha").default == 1.0 and OPS["leakyRelu"].param("alpha").default == 0.01


def test_serialized_graph_revalidates_to_the_same_options():
    """Filled-in and cast options are fixed points: the worker's re-validation reproduces them exactly."""
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float16", "shape": [2, 3]})
    u = b.input("u", {"dataType": "uint64", "shape": [2]})
    outs = {"a": b.clamp(x, maxValue=3), "b": b.clamp(u, minValue=-5.5), "c": b.softmax(x, 1),
            "d": b.hardSigmoid(x, alpha=0.3), "e": b.elu(x), "f": b.prelu(x, b.input("s", ("float16", [3])))}
    g = b.build(outs)
    g2 = graph_from_json(json.loads(json.dumps(g.to_json())))
    assert [op.options for op in g2.operations] == [op.options for op in g.operations]
