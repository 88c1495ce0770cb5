"""Reductions, argMin/argMax and cumulativeSum against torch (float64 / exact int64) and the spec's examples.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reduce"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from helpers import assert_type_error, wpt_dir, wpt_json

from py_core.bridge.limits import op_support_limits
from py_core.builder import GraphBuilder, graph_from_json
from py_core.runtime.executor import prepare

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
FLOATS = [F32, F16]
SUM_TYPES = FLOATS + [np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64)]
ALL = FLOATS + [np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64, np.int8, np.uint8)]
EPS32 = 2.0**-23
SEEDS = range(4)


def run(op: str, x: np.ndarray, *args, label: str = "", **options):
    """Build input -> op -> output, run it through the executor (which checks dtype and shape)."""
    b = GraphBuilder()
    inp = b.input("x", {"dataType": x.dtype.name, "shape": list(x.shape)})
    out = getattr(b, op)(inp, *args, label=label, **options)
    return prepare(b.build({"y": out})).run({"x": x})["y"]


def random_shape(rng: np.random.Generator, min_rank: int = 0) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, 6, size=int(rng.integers(min_rank, 5))))


def full_range(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


# ------------------------------------------------------------------------------------------ reduce oracles
# Every oracle reduces a float64 (floats) or int64 (ints, wrapping mod 2^64 like the 32-bit result mod 2^32)
# torch tensor over `dims` with keepdim.  An extra trailing size-1 axis is always reduced as well, so empty
# axes apply the reduction function to each value individually, as the spec says.

def _prod(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    for d in dims:
        t = torch.prod(t, dim=d, keepdim=True)
    return t


ORACLES = {
    "reduceL1": lambda t, d: torch.sum(torch.abs(t), dim=d, keepdim=True),
    "reduceL2": lambda t, d: torch.linalg.vector_norm(t, ord=2, dim=d, keepdim=True),
    "reduceLogSum": lambda t, d: torch.log(torch.sum(t, dim=d, keepdim=True)),
    "reduceLogSumExp": lambda t, d: torch.logsumexp(t, dim=d, keepdim=True),
    "reduceMax": lambda t, d: torch.amax(t, dim=d, keepdim=True),
    "reduceMean": lambda t, d: torch.mean(t, dim=d, keepdim=True),
    "reduceMin": lambda t, d: torch.amin(t, dim=d, keepdim=True),
    "reduceProduct": _prod,
    "reduceSum": lambda t, d: torch.sum(t, dim=d, keepdim=True),
    "reduceSumSquare": lambda t, d: torch.sum(t * t, dim=d, keepdim=True),
}
# Ops whose rounding error scales with the same reduction of |x| (cancellation), the rest are relative.
MAGNITUDE = {"reduceL1", "reduceMean", "reduceSum", "reduceSumSquare"}
TYPES = {op: FLOATS for op in ("reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMean")}
TYPES.update({op: SUM_TYPES for op in ("reduceL1", "reduceProduct", "reduceSum", "reduceSumSquare")})
TYPES.update({"reduceMax": ALL, "reduceMin": ALL})
ORDERED_U64 = np.uint64(1 << 63)  # x ^ 2^63 viewed as int64 keeps the order of uint64 values


def to_torch(x: np.ndarray, op: str) -> torch.Tensor:
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return torch.from_numpy(x.astype(np.float64))
    if x.dtype == np.uint64:
        return torch.from_numpy((x ^ ORDERED_U64).view(np.int64))
    return torch.from_numpy(x.astype(np.int64))


def from_torch(t: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    a = t.numpy()
    if dtype == np.uint64:
        return a.view(np.uint64) ^ ORDERED_U64
    return a if dtype.kind == "f" else a.astype(dtype)  # int64 -> int32/uint32 wraps modulo 2^32


def reduce_oracle(op: str, x: np.ndarray, axes: list[int] | None, keep: bool, shape_out: tuple[int, ...]):
    dims = tuple(range(x.ndim)) if axes is None else tuple(axes)
    t = to_torch(x, op).unsqueeze(-1)
    r = ORACLES[op](t, dims + (x.ndim,))
    return from_torch(r, x.dtype).reshape(shape_out)


INT_ORACLES = {
    "reduceL1": lambda v: sum(abs(a) for a in v),
    "reduceMax": max,
    "reduceMin": min,
    "reduceProduct": math.prod,
    "reduceSum": sum,
    "reduceSumSquare": lambda v: sum(a * a for a in v),
}


def int_oracle(op: str, x: np.ndarray, axes: list[int] | None, shape_out: tuple[int, ...]) -> np.ndarray:
    """Integer reductions in Python ints (exact at any width), wrapped once into the input type."""
    dims = list(range(x.ndim)) if axes is None else list(axes)
    n = math.prod(x.shape[d] for d in dims)
    rows = np.moveaxis(x, dims, list(range(x.ndim - len(dims), x.ndim))).reshape(-1, n)
    bits = x.dtype.itemsize * 8
    signed = x.dtype.kind == "i"

    def wrap(v: int) -> int:
        v %= 1 << bits
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    return np.array([wrap(INT_ORACLES[op](row.tolist())) for row in rows], x.dtype).reshape(shape_out)


def expected_shape(shape: tuple[int, ...], axes: list[int] | None, keep: bool) -> tuple[int, ...]:
    axes = list(range(len(shape))) if axes is None else axes
    return tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


def float_data(op: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    if op == "reduceLogSum":
        return rng.uniform(0.1, 10.0, shape)
    if op == "reduceProduct":
        return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.standard_normal(shape) * 10.0


def assert_close(op: str, got: np.ndarray, ref: np.ndarray, x: np.ndarray, axes, keep, n: int) -> None:
    """Error bound: a few float32 ULPs per accumulated term, plus one final float16 rounding."""
    eps_out = 2.0**-11 if got.dtype == F16 else EPS32
    k = 4.0 * (n + 2) * EPS32
    atol = 1e-6
    if op in MAGNITUDE:
        atol += k * np.abs(reduce_oracle(op, np.abs(x), axes, keep, ref.shape))
    elif op in ("reduceLogSum", "reduceLogSumExp"):
        atol += k * (1.0 + float(np.max(np.abs(x))))
    within(got, ref, eps_out + k, atol)


def within(got: np.ndarray, ref: np.ndarray, rtol: float, atol) -> None:
    """|got - ref| <= rtol |ref| + atol elementwise (atol may be an array); NaN and inf must match exactly."""
    g = got.astype(np.float64)
    same = (g == ref) | (np.isnan(g) & np.isnan(ref))
    ok = same | (np.abs(g - ref) <= rtol * np.abs(ref) + atol)
    bound = np.broadcast_to(atol, g.shape)
    assert ok.all(), f"got {g[~ok]} expected {ref[~ok]} (rtol {rtol}, atol {bound[~ok]})"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op,dtype", [(op, t) for op, ts in TYPES.items() for t in ts],
                         ids=lambda v: getattr(v, "name", v))
def test_reduce_random(op: str, dtype: np.dtype, seed: int) -> None:
    rng = np.random.default_rng([seed, sum(map(ord, op)), dtype.num])
    shape = random_shape(rng)
    mode = rng.integers(0, 3)
    axes = None if mode == 0 else [] if mode == 1 else \
        [int(a) for a in rng.permutation(len(shape))[: rng.integers(1, len(shape) + 1)]] if shape else []
    keep = bool(rng.integers(0, 2))
    x = np.asarray(float_data(op, rng, shape) if dtype.kind == "f" else full_range(rng, dtype, shape), dtype)
    # even seeds leave keepDimensions absent when false, to exercise the default
    got = run(op, x, axes=axes, keepDimensions=keep if seed % 2 else (keep or None))
    shape_out = expected_shape(shape, axes, keep)
    assert got.dtype == dtype and got.shape == shape_out
    if dtype.kind == "f":
        ref = reduce_oracle(op, x, axes, keep, shape_out)
        n = int(np.prod([shape[a] for a in (range(len(shape)) if axes is None else axes)]))
        assert_close(op, got, ref, x.astype(np.float64), axes, keep, n)
    else:
        # integers: exact, wrapping in the input type, against Python ints (no float64 round trip)
        np.testing.assert_array_equal(got, int_oracle(op, x, axes, shape_out))


def test_reduce_empty_axes_is_elementwise() -> None:
    x = np.array([[1.0, -4.0], [0.25, 9.0]], np.float32)
    same = lambda v: v  # noqa: E731
    cases = [("reduceL1", np.abs), ("reduceL2", np.abs), ("reduceSumSquare", np.square), ("reduceMax", same),
             ("reduceLogSumExp", same), ("reduceMean", same), ("reduceProduct", same)]
    for op, f in cases:
        np.testing.assert_allclose(run(op, x, axes=[]), f(x), rtol=1e-6)
    np.testing.assert_allclose(run("reduceLogSum", np.abs(x), axes=[]), np.log(np.abs(x)), rtol=1e-6)
    s = np.array(2.5, np.float16)  # a scalar with absent axes stays a scalar
    assert run("reduceSum", s).shape == () and run("reduceMax", s, keepDimensions=True) == s


def test_reduce_integer_wraparound_and_64bit_exact() -> None:
    i32 = np.array([2**31 - 1, 1, 5], np.int32)
    assert run("reduceSum", i32) == np.int32(-(2**31) + 5)
    assert run("reduceL1", np.array([-(2**31), 0], np.int32)) == np.int32(-(2**31))  # |INT_MIN| wraps
    assert run("reduceSum", np.array([2**32 - 1, 2], np.uint32)) == np.uint32(1)
    assert run("reduceProduct", np.array([65536, 65536, 3], np.int32)) == 0
    assert run("reduceSumSquare", np.array([46341], np.int32)) == np.int32((46341**2) - 2**32)
    # 64-bit values float64 cannot tell apart stay exact in max/min
    i64 = np.array([2**63 - 2, 2**63 - 1, -(2**63)], np.int64)
    assert run("reduceMax", i64) == 2**63 - 1 and run("reduceMin", i64) == -(2**63)
    u64 = np.array([2**64 - 1, 2**64 - 2, 0], np.uint64)
    assert run("reduceMax", u64) == np.uint64(2**64 - 1) and run("reduceMin", u64[:2]) == np.uint64(2**64 - 2)


@pytest.mark.parametrize("op", ["reduceL1", "reduceProduct", "reduceSum", "reduceSumSquare"])
def test_sum_like_reductions_are_exact_past_2_to_53_in_64_bits(op: str) -> None:
    """int64 / uint64 sums and products stay integers: 2^53 + 1 (which float64 rounds to 2^53) and values near
    2^63 and 2^64 come out exact, wrapping modulo 2^64."""
    cases = [np.array([[2**53, 1], [2**62, 2**62 - 1], [-(2**63), -1]], np.int64),
             np.array([[2**53, 1], [2**63, 2**63 - 1], [2**64 - 1, 2]], np.uint64),
             np.array([[3037000499, 3037000499], [2**31 + 1, 2**32 - 1], [1, 2**53 + 1]], np.uint64)]
    for x in cases:
        got = run(op, x, axes=[1])
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, int_oracle(op, x, [1], (3,)))
    assert run("reduceSum", np.array([2**53, 1], np.int64)) == 2**53 + 1
    assert {"int64", "uint64"} <= set(op_support_limits()[op]["input"]["dataTypes"])
    assert run("reduceProduct", np.array([2**32 + 1, 2**32 - 1], np.uint64)) == np.uint64(2**64 - 1)


def test_reduce_nan_inf() -> None:
    nan, inf = np.nan, np.inf
    x = np.array([[1.0, nan, 3.0], [inf, -inf, 2.0], [-inf, -inf, -inf]], np.float32)
    np.testing.assert_array_equal(run("reduceMax", x, axes=[1]), [nan, inf, -inf])
    np.testing.assert_array_equal(run("reduceMin", x, axes=[1]), [nan, -inf, -inf])
    np.testing.assert_array_equal(run("reduceSum", x, axes=[1]), [nan, nan, -inf])
    np.testing.assert_array_equal(run("reduceLogSumExp", x, axes=[1]), [nan, inf, -inf])
    np.testing.assert_array_equal(run("reduceL2", x[1:], axes=[1]), [inf, inf])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_reduce_log_sum_exp_is_stable(dtype: np.dtype) -> None:
    big = 60000.0 if dtype == F16 else 1e30
    x = np.array([[big, big, big - 1], [-big, -big, -big]], dtype)
    ref = torch.logsumexp(torch.from_numpy(x.astype(np.float64)), dim=1).numpy()
    np.testing.assert_allclose(run("reduceLogSumExp", x, axes=[1]).astype(np.float64), ref, rtol=1e-3)


def test_reduce_l2_float32_does_not_overflow() -> None:
    x = np.full((4,), 1e20, np.float32)
    np.testing.assert_allclose(run("reduceL2", x), np.float32(2e20), rtol=1e-6)


# ------------------------------------------------------------------------------------------ argMin / argMax

def arg_data(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Few distinct values so ties are common; 64-bit types spread them beyond float64's exact range."""
    v = rng.integers(0, 7, size=shape)
    if dtype == np.uint64:
        return v.astype(np.uint64) * np.uint64(2**61) + np.uint64(1)
    if dtype == np.int64:
        return (v - 3) * (2**60) + 1
    return (v if dtype.kind == "u" else v - 3).astype(dtype)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", ["argMin", "argMax"])
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_arg_min_max_random(op: str, dtype: np.dtype, seed: int) -> None:
    rng = np.random.default_rng([seed, dtype.num, op == "argMax"])
    shape = random_shape(rng, min_rank=1)
    axis = int(rng.integers(0, len(shape)))
    keep = bool(seed % 2)
    out_type = [None, "int32", "int64", "int64"][seed]
    x = arg_data(rng, dtype, shape).astype(dtype)
    got = run(op, x, axis, keepDimensions=keep, outputDataType=out_type)
    fn = torch.argmin if op == "argMin" else torch.argmax
    ref = fn(to_torch(x, op), dim=axis, keepdim=keep).numpy()  # torch: the first index among ties
    assert got.dtype == np.dtype(out_type or "int32") and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_arg_min_max_ties_and_nan() -> None:
    x = np.array([[3.0, 3.0, 1.0, 1.0], [0.0, np.nan, 5.0, np.nan]], np.float16)
    np.testing.assert_array_equal(run("argMax", x, 1), [0, 1])  # first of tied maxima; NaN is the extreme
    np.testing.assert_array_equal(run("argMin", x, 1, keepDimensions=True), [[2], [1]])


# ------------------------------------------------------------------------------------------ cumulativeSum

def cumsum_oracle(x: np.ndarray, axis: int, exclusive: bool, reversed: bool) -> np.ndarray:
    """The spec's definition: inclusive/exclusive prefix sums, forward or from the high coordinate."""
    t = torch.from_numpy(x.astype(np.float64) if x.dtype.kind == "f" else x.view(np.int64) if
                         x.dtype == np.uint64 else x.astype(np.int64))
    if reversed:
        t = torch.flip(t, [axis])
    c = torch.cumsum(t, dim=axis)
    if exclusive:
        c = c - t
    if reversed:
        c = torch.flip(c, [axis])
    a = c.numpy()
    return a.view(np.uint64) if x.dtype == np.uint64 else a if x.dtype.kind == "f" else a.astype(x.dtype)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("exclusive,reversed", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cumulative_sum_random(dtype: np.dtype, exclusive: bool, reversed: bool, seed: int) -> None:
    rng = np.random.default_rng([seed, dtype.num, exclusive, reversed])
    shape = random_shape(rng, min_rank=1)
    axis = int(rng.integers(0, len(shape)))
    data = rng.standard_normal(shape) * 10 if dtype.kind == "f" else full_range(rng, dtype, shape)
    x = np.asarray(data, dtype)
    got = run("cumulativeSum", x, axis, exclusive=exclusive, reversed=reversed)
    ref = cumsum_oracle(x, axis, exclusive, reversed)
    assert got.dtype == dtype and got.shape == x.shape
    if dtype.kind == "f":
        # float16 accumulates in float32 and rounds once; bound by the prefix sums of |x|
        mag = cumsum_oracle(np.abs(x), axis, exclusive, reversed)
        eps_out = 2.0**-11 if dtype == F16 else EPS32
        within(got, ref, eps_out, 8 * EPS32 * mag + 1e-6)
    else:
        np.testing.assert_array_equal(got, ref)  # integers wrap in their own type, 64-bit stays exact


def test_cumulative_sum_spec_examples() -> None:
    x = np.array([1, 2, 3, 4], np.float32)
    assert run("cumulativeSum", x, 0).tolist() == [1, 3, 6, 10]
    assert run("cumulativeSum", x, 0, exclusive=True).tolist() == [0, 1, 3, 6]
    assert run("cumulativeSum", x, 0, reversed=True).tolist() == [10, 9, 7, 4]
    assert run("cumulativeSum", x, 0, exclusive=True, reversed=True).tolist() == [9, 7, 4, 0]
    big = np.array([2**62, 2**62, 1], np.int64)
    assert run("cumulativeSum", big, 0).tolist() == [2**62, 2**63 - 2**64, 2**63 - 2**64 + 1]


# ------------------------------------------------------------------------------------------ WPT spot check

def test_wpt_vectors_spot_check() -> None:
    """Every converted WPT reduction case, with a loose tolerance (the official runner owns the real one)."""
    count = 0
    for path in sorted(wpt_dir().glob("reduce_*.json")):
        for case in wpt_json(path.stem):
            g = case["graph"]
            (name, inp), = g["inputs"].items()
            (op,) = g["operators"]
            options = next((a["options"] for a in op["arguments"] if "options" in a), {})
            desc = inp["descriptor"]
            x = np.array(inp["data"], desc["dataType"]).reshape(desc["shape"])
            got = run(op["name"], x, **options)
            (exp,) = g["expectedOutputs"].values()
            ref = np.array(exp["data"], np.float64).reshape(exp["descriptor"]["shape"])
            rtol = 2e-3 if x.dtype == F16 else 1e-5
            np.testing.assert_allclose(got.astype(np.float64), ref, rtol, 1e-5, err_msg=case["name"])
            count += 1
    assert count > 300


def test_json_round_trip_revalidates() -> None:
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    y = b.argMax(x, 1, outputDataType="int64")
    z = b.reduceSum(x, keepDimensions=True)
    g = b.build({"y": y, "z": z})
    g2 = graph_from_json(json.loads(json.dumps(g.to_json())))
    out = prepare(g2).run({"x": np.arange(6, dtype=np.float32).reshape(2, 3)})
    assert out["y"].dtype == np.int64 and out["y"].tolist() == [2, 2] and out["z"].tolist() == [[15.0]]


# ------------------------------------------------------------------------------------------ validation

def build_error(op: str, dtype: str, shape: list[int], *args, **options) -> str:
    b = GraphBuilder()
    x = b.input("x", {"dataType": dtype, "shape": shape})
    return assert_type_error(lambda: getattr(b, op)(x, *args, label="lbl", **options), "lbl", op)


@pytest.mark.parametrize("op", list(ORACLES))
def test_reduce_validation(op: str) -> None:
    assert "out of range" in build_error(op, "float32", [1, 2, 5, 5], axes=[4])
    assert "duplicate" in build_error(op, "float32", [1, 2, 5, 5], axes=[0, 1, 1])
    assert "unsigned long" in build_error(op, "float32", [2, 3], axes=[-1])
    assert "sequence" in build_error(op, "float32", [2, 3], axes=1)
    assert "boolean" in build_error(op, "float32", [2, 3], keepDimensions=1)
    assert "out of range for rank 0" in build_error(op, "float32", [], axes=[0])
    for bad in {"int64", "uint64", "int8", "uint8"} - {t.name for t in TYPES[op]}:
        assert f"data type {bad}" in build_error(op, bad, [2])


@pytest.mark.parametrize("op", ["reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMean"])
def test_float_only_reductions_reject_int32(op: str) -> None:
    assert "data type int32" in build_error(op, "int32", [2, 3])


@pytest.mark.parametrize("op", ["argMin", "argMax"])
def test_arg_min_max_validation(op: str) -> None:
    assert "axis 4 is out of range" in build_error(op, "float32", [1, 2, 3, 4], 4)
    assert "rank 0" in build_error(op, "float32", [], 0)
    assert "float32 is not supported" in build_error(op, "float32", [2, 3], 1, outputDataType="float32")
    assert "uint32 is not supported" in build_error(op, "float32", [2, 3], 1, outputDataType="uint32")
    assert "not a valid MLOperandDataType" in build_error(op, "float32", [2, 3], 1, outputDataType="int31")
    assert "missing required argument 'axis'" in build_error(op, "float32", [2, 3])
    assert "unsigned long" in build_error(op, "float32", [2, 3], -1)


def test_cumulative_sum_validation() -> None:
    assert "rank 0" in build_error("cumulativeSum", "float32", [], 0)
    assert "axis 3 is out of range" in build_error("cumulativeSum", "float32", [1, 2, 3], 3)
    assert "boolean" in build_error("cumulativeSum", "int32", [1, 2, 3], 0, exclusive="yes")
    assert "boolean" in build_error("cumulativeSum", "int32", [1, 2, 3], 0, reversed=0)
