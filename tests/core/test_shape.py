"""Shape and data-movement operators against independent oracles (torch, and spec formulas for pad and cast),
end to end through GraphBuilder and the executor; plus the validation errors and the WPT vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import DTYPES, assert_same, assert_type_error, check_wpt_case, rand, run_graph, wpt_cases

from py_core.builder import GraphBuilder

_SIGNED_VIEW = {"uint32": np.int32, "uint64": np.int64}  # torch lacks most uint32/uint64 kernels


def to_torch(a: np.ndarray) -> torch.Tensor:
    view = _SIGNED_VIEW.get(a.dtype.name)
    return torch.from_numpy(np.array(a.view(view) if view else a, order="C"))  # keeps rank 0


def from_torch(t: torch.Tensor, dtype: str) -> np.ndarray:
    return t.contiguous().numpy().view(np.dtype(dtype))


def random_shape(rng: np.random.Generator, lo: int, hi: int, max_dim: int = 4) -> list[int]:
    if lo == 0 and rng.random() < 0.25:
        return []  # scalars often enough to be covered by every dtype
    return [int(d) for d in rng.integers(1, max_dim + 1, size=int(rng.integers(lo, hi + 1)))]


CASES = [(dt, seed) for dt in DTYPES for seed in range(3)]


# ------------------------------------------------------------------------------------------ data movement

@pytest.mark.parametrize("dtype,seed", CASES)
def test_reshape(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 0, 5)
    x = rand(rng, shape, dtype)
    n, new = x.size, []
    for p in (2, 3, 5, 7):  # distribute the prime factors of n over a random number of dimensions
        while n % p == 0:
            n //= p
            new.append(p)
    new = [int(np.prod(c)) for c in np.array_split(rng.permutation(new), int(rng.integers(1, 4)))] + [1]
    new = [int(d) for d in rng.permutation(new)]
    (out,) = run_graph(lambda b, h: b.reshape(h["x"], new), x=x)
    assert_same(out, from_torch(to_torch(x).reshape(new), dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_transpose(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 0, 6), dtype)
    perm = None if seed == 0 else [int(p) for p in rng.permutation(x.ndim)]
    expected_perm = list(range(x.ndim))[::-1] if perm is None else perm  # spec default [N-1, ..., 0]
    (out,) = run_graph(lambda b, h: b.transpose(h["x"], permutation=perm), x=x)
    assert_same(out, from_torch(to_torch(x).permute(expected_perm), dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_concat(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 1, 5)
    axis = int(rng.integers(len(shape)))
    xs = {}
    for i in range(int(rng.integers(1, 5))):
        s = list(shape)
        s[axis] = int(rng.integers(1, 4))
        xs[f"x{i}"] = rand(rng, s, dtype)
    (out,) = run_graph(lambda b, h: b.concat(list(h.values()), axis), **xs)
    assert_same(out, from_torch(torch.cat([to_torch(a) for a in xs.values()], axis), dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_slice(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 0, 5, 6), dtype)
    starts = [int(rng.integers(d)) for d in x.shape]
    sizes = [int(rng.integers(1, d - s + 1)) for d, s in zip(x.shape, starts, strict=True)]
    strides = None if seed == 0 else [int(rng.integers(1, 4)) for _ in x.shape]
    (out,) = run_graph(lambda b, h: b.slice(h["x"], starts, sizes, strides=strides), x=x)
    steps = strides or [1] * x.ndim
    index = tuple(slice(b, b + n, s) for b, n, s in zip(starts, sizes, steps, strict=True))
    assert_same(out, from_torch(to_torch(x)[index] if x.ndim else to_torch(x), dtype))


def _pad_oracle(x: np.ndarray, begin, end, mode: str, value) -> np.ndarray:
    """The spec's definitions, index by index: constant fills, edge repeats, reflection mirrors the edge."""
    grids = []
    for d, b, e in zip(x.shape, begin, end, strict=True):
        j = np.arange(-b, d + e)
        if mode == "edge":
            j = np.clip(j, 0, d - 1)
        elif mode == "reflection":
            j = np.abs(j)
            j = np.where(j >= d, 2 * (d - 1) - j, j)
        grids.append(j)
    if mode != "constant":
        return x[np.ix_(*grids)]
    out = np.full([len(g) for g in grids], np.array(value, dtype=x.dtype))
    out[np.ix_(*[np.nonzero((g >= 0) & (g < d))[0] for g, d in zip(grids, x.shape, strict=True)])] = x
    return out


@pytest.mark.parametrize("mode", ["constant", "edge", "reflection"])
@pytest.mark.parametrize("dtype,seed", CASES)
def test_pad(dtype, seed, mode):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 1, 4, 5), dtype)
    limit = [d - 1 if mode == "reflection" else 3 for d in x.shape]
    begin = [int(rng.integers(0, m + 1)) for m in limit]
    end = [int(rng.integers(0, m + 1)) for m in limit]
    value = float(rng.choice([0, -1.5, np.nan, np.inf])) if np.dtype(dtype).kind == "f" else 7
    (out,) = run_graph(lambda b, h: b.pad(h["x"], begin, end, mode=mode, value=value), x=x)
    assert_same(out, _pad_oracle(x, begin, end, mode, value))
    if dtype == "float32" and mode == "constant":  # and torch's pad where it applies
        widths = [w for b, e in zip(begin[::-1], end[::-1], strict=True) for w in (b, e)]
        expected = torch.nn.functional.pad(to_torch(x), widths, mode="constant", value=value).numpy()
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflection"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_scalar(dtype, mode):
    # the draft's pad takes any rank and requires 0 to 5: a scalar has no dimension to pad and comes back as is
    x = rand(np.random.default_rng(7), (), dtype)
    (out,) = run_graph(lambda b, h: b.pad(h["x"], [], [], mode=mode, value=3), x=x)
    assert_same(out, _pad_oracle(x, [], [], mode, 3))
    assert_same(out, x)


@pytest.mark.parametrize("value,dtype,expected", [
    (2.5, "int32", 2), (3.5, "int8", 3), (-1000, "int8", -128), (1e30, "uint8", 255), (math.nan, "int32", 0),
    (-math.inf, "uint32", 0), (2**64 + 5, "uint64", 2**64 - 1), (-(2**63), "int64", -(2**63)),
    (2**63 - 1, "int64", 2**63 - 1), (1e6, "float16", math.inf), (0.1, "float32", np.float32(0.1)),
])
def test_pad_value_is_cast_to_input_type(value, dtype, expected):
    x = np.zeros([1], dtype=dtype)
    (out,) = run_graph(lambda b, h: b.pad(h["x"], [1], [0], value=value), x=x)
    assert out[0] == np.array(expected).astype(dtype) and out[1] == 0


# The pad value follows the same cast as clamp's bounds (py_core/spec/mlnumber.py): truncate toward zero (the
# WPT mlNumber vectors; the spec's ConvertToInt rounds half to even), NaN -> 0, saturate.  Expected values
# are written out per type: int8, uint8, int32, uint32, int64, uint64.
_I8, _U8, _I32, _U32, _I64, _U64 = ((-(2**(n - 1)), 2**(n - 1) - 1) for n in (8, 8, 32, 32, 64, 64))
_PAD_INT_TYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]
_PAD_INT_CASES = [
    (2.5, [2, 2, 2, 2, 2, 2]),
    (-2.5, [-2, 0, -2, 0, -2, 0]),
    (2.7, [2, 2, 2, 2, 2, 2]),
    (-2.7, [-2, 0, -2, 0, -2, 0]),
    (3.5, [3, 3, 3, 3, 3, 3]),
    (math.nan, [0, 0, 0, 0, 0, 0]),
    (math.inf, [127, 255, 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1]),
    (-math.inf, [-128, 0, -(2**31), 0, -(2**63), 0]),
    (300, [127, 255, 300, 300, 300, 300]),
    (-129.9, [-128, 0, -129, 0, -129, 0]),
    (1e10, [127, 255, 2**31 - 1, 2**32 - 1, 10**10, 10**10]),
    (-1e30, [-128, 0, -(2**31), 0, -(2**63), 0]),
    (4294967295.9, [127, 255, 2**31 - 1, 2**32 - 1, 4294967295, 4294967295]),
    (2**63, [127, 255, 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**63]),
    (-(2**63) - 1, [-128, 0, -(2**31), 0, -(2**63), 0]),
    (2**64 + 5, [127, 255, 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1]),
]


def _pad_one(value, dtype: str) -> np.ndarray:
    """pad([0], [1], [0], value) through the builder and the executor: [cast(value), 0]."""
    from py_core.runtime.executor import prepare

    b = GraphBuilder()
    out = b.pad(b.input("x", {"dataType": dtype, "shape": [1]}), [1], [0], value=value)
    got = prepare(b.build({"y": out})).run({"x": np.zeros([1], dtype=dtype)})["y"]
    assert got.dtype == np.dtype(dtype) and got.shape == (2,) and got[1] == 0
    return got


@pytest.mark.parametrize("value, wants", _PAD_INT_CASES, ids=[repr(c[0]) for c in _PAD_INT_CASES])
def test_pad_value_cast_to_integer_types(value, wants):
    for dtype, want in zip(_PAD_INT_TYPES, wants, strict=True):
        assert int(_pad_one(value, dtype)[0]) == want, (value, dtype)


@pytest.mark.parametrize("value, dtype, want", [
    (2.7, "float32", np.float32(2.7)), (2.7, "float16", np.float16(2.7)), (math.nan, "float16", np.float16("nan")),
    (math.inf, "float32", np.float32("inf")), (-math.inf, "float16", np.float16("-inf")),
    (1e39, "float32", np.float32("inf")), (-65520.0, "float16", np.float16("-inf")),  # ties past max: Infinity
    (65519.9, "float16", np.float16(65504)), (-1e-8, "float16", np.float16(-0.0)),
    (2**60 + 2**36 + 1, "float32", np.float32(2**60 + 2**37)),  # a bigint is rounded once, not via double
    (10**400, "float32", np.float32("inf")),
])
def test_pad_value_cast_to_float_types(value, dtype, want):
    got = _pad_one(value, dtype)[:1]
    assert got.tobytes() == np.array([want], dtype=dtype).tobytes()  # bit-exact: NaN and -0.0 included


@pytest.mark.parametrize("dtype,seed", CASES)
def test_split(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 1, 4)
    axis = int(rng.integers(len(shape)))
    if seed == 0:
        shape[axis] = 6
        splits, sizes = 3, 2
    else:
        splits = [int(s) for s in rng.integers(1, 4, size=int(rng.integers(1, 4)))]
        shape[axis], sizes = sum(splits), splits
    x = rand(rng, shape, dtype)
    outs = run_graph(lambda b, h: b.split(h["x"], splits, axis=axis), x=x)
    expected = torch.split(to_torch(x), sizes, dim=axis)
    assert len(outs) == len(expected)
    for o, e in zip(outs, expected, strict=True):
        assert_same(o, from_torch(e, dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_expand(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, 0, 4)
    x = rand(rng, [1 if rng.random() < 0.5 else d for d in shape], dtype)
    new = random_shape(rng, 0, 2) + [int(rng.integers(1, 4)) if d == 1 else d for d in x.shape]
    (out,) = run_graph(lambda b, h: b.expand(h["x"], new), x=x)
    assert_same(out, from_torch(to_torch(x).expand(new), dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_tile(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 0, 4), dtype)
    reps = [int(r) for r in rng.integers(1, 4, size=x.ndim)]
    (out,) = run_graph(lambda b, h: b.tile(h["x"], reps), x=x)
    assert_same(out, from_torch(to_torch(x).tile(reps) if x.ndim else to_torch(x), dtype))


@pytest.mark.parametrize("dtype,seed", CASES)
def test_reverse(dtype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 0, 5), dtype)
    some = sorted(rng.choice(x.ndim, int(rng.integers(x.ndim + 1)), replace=False).tolist())
    axes = None if seed == 0 else [] if seed == 1 else some
    (out,) = run_graph(lambda b, h: b.reverse(h["x"], axes=axes), x=x)
    dims = list(range(x.ndim)) if axes is None else axes  # absent: every axis; empty: none
    assert_same(out, from_torch(to_torch(x).flip(dims) if dims else to_torch(x), dtype))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("dtype,seed", CASES)
def test_triangular(dtype, seed, upper):
    rng = np.random.default_rng(seed)
    x = rand(rng, random_shape(rng, 2, 4, 5), dtype)
    diagonal = int(rng.integers(-4, 5))
    (out,) = run_graph(lambda b, h: b.triangular(h["x"], upper=upper, diagonal=diagonal), x=x)
    # float64 oracle for floats (torch.triu on float16 NaN-safe as well); bit views for the integer types
    t = to_torch(x.astype(np.float64) if x.dtype.kind == "f" else x)
    expected = (torch.triu if upper else torch.tril)(t, diagonal).numpy()
    expected = expected.astype(dtype) if x.dtype.kind == "f" else expected.view(dtype)
    assert_same(out, expected)


@pytest.mark.parametrize("dtype,seed", CASES)
def test_where(dtype, seed):
    rng = np.random.default_rng(seed)
    out_shape = random_shape(rng, 0, 4)

    def sub(s):  # a shape broadcastable to out_shape: a random suffix, some dimensions set to 1
        s = s[int(rng.integers(len(s) + 1)):]
        return [1 if rng.random() < 0.3 else d for d in s]

    c = rng.choice(np.array([0, 1, 2, 255], dtype=np.uint8), size=sub(out_shape))
    t, f = rand(rng, sub(out_shape), dtype), rand(rng, out_shape, dtype)
    (out,) = run_graph(lambda b, h: b.where(h["c"], h["t"], h["f"]), c=np.asarray(c), t=t, f=f)
    expected = torch.where(torch.from_numpy(np.asarray(c)) != 0, to_torch(t), to_torch(f))
    assert_same(out, from_torch(expected, dtype))


# --------------------------------------------------------------------------------------------------- cast

def _int_to_float(v: int, mantissa: int, max_finite: float) -> float:
    """Round an exact integer to the nearest float with `mantissa` significant bits (ties to even)."""
    a = abs(v)
    shift = max(a.bit_length() - mantissa, 0)
    q, r = divmod(a, 1 << shift)
    if shift and (r > 1 << (shift - 1) or (r == 1 << (shift - 1) and q & 1)):
        q += 1
    f = math.ldexp(q, shift)
    f = math.inf if f > max_finite else f
    return -f if v < 0 else f


def _cast_oracle(x: np.ndarray, dtype: str) -> np.ndarray:
    """The spec's cast table, element by element in Python numbers (float -> int out of range: saturate)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if x.dtype.kind == "f":  # nearest representable, overflow to +/-inf: torch's conversion
            return torch.from_numpy(x).to(getattr(torch, dtype)).numpy()
        mant, top = (24, 3.4028234663852886e38) if dtype == "float32" else (11, 65504.0)
        return np.array([_int_to_float(int(v), mant, top) for v in x.ravel()], dtype=dt).reshape(x.shape)
    info = np.iinfo(dt)
    if x.dtype.kind == "f":
        vals = [0 if math.isnan(v) else min(max(math.trunc(v), info.min), info.max) if math.isfinite(v)
                else (info.max if v > 0 else info.min) for v in x.astype(np.float64).ravel().tolist()]
    else:  # lowest N bits, two's complement
        bits = dt.itemsize * 8
        vals = [(int(v) % 2**bits) - (2**bits if dt.kind == "i" and int(v) % 2**bits >= 2**(bits - 1) else 0)
                for v in x.ravel().tolist()]
    return np.array(vals, dtype=dt).reshape(x.shape)


@pytest.mark.parametrize("target", DTYPES)
@pytest.mark.parametrize("source", DTYPES)
def test_cast(source, target):
    rng = np.random.default_rng(DTYPES.index(source) * 8 + DTYPES.index(target))
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=3)], source)
    if x.dtype.kind == "f":  # in-range values with fractions and exact halves, as well as the extremes
        x.ravel()[: x.size // 2] = (rng.integers(-300, 300, size=x.size // 2) / 4).astype(x.dtype)
    (out,) = run_graph(lambda b, h: b.cast(h["x"], target), x=x)
    assert_same(out, _cast_oracle(x, target))


def test_cast_extremes():
    x = np.array([2**63 - 1, -(2**63), 2**53 + 1, 65519, 65520, -3, 2**24 + 1], dtype=np.int64)
    for target in ("float32", "float16", "uint8", "int32"):
        (out,) = run_graph(lambda b, h, t=target: b.cast(h["x"], t), x=x)
        assert_same(out, _cast_oracle(x, target))
    f = np.array([3e9, -3e9, 1e20, -0.9, 255.9, 256.0, np.nan, -np.inf, 2.0**63, -(2.0**63)], np.float32)
    for target in ("uint8", "int8", "int32", "uint32", "int64", "uint64"):
        (out,) = run_graph(lambda b, h, t=target: b.cast(h["x"], t), x=f)
        assert_same(out, _cast_oracle(f, target))


# --------------------------------------------------------------------------------------------- validation

F32 = ("float32", [2, 3, 4])
ERRORS = [
    ("reshape", [F32], lambda b, x: b.reshape(x, [5, 5], label="lbl"), "25 elements"),
    ("reshape", [F32], lambda b, x: b.reshape(x, [24, 0], label="lbl"), "0 dimension"),
    ("reshape", [F32], lambda b, x: b.reshape(x, [1] * 8 + [24], label="lbl"), "rank 9"),
    ("reshape", [F32], lambda b, x: b.reshape(x, [-24], label="lbl"), "unsigned long"),
    ("transpose", [F32], lambda b, x: b.transpose(x, permutation=[0, 1], label="lbl"), "must have 3"),
    ("transpose", [F32], lambda b, x: b.transpose(x, permutation=[0, 1, 1], label="lbl"), "duplicate"),
    ("transpose", [F32], lambda b, x: b.transpose(x, permutation=[0, 1, 3], label="lbl"), "out of range"),
    ("slice", [F32], lambda b, x: b.slice(x, [0, 0], [1, 1], label="lbl"), "starts"),
    ("slice", [F32], lambda b, x: b.slice(x, [0, 0, 0], [1, 0, 1], label="lbl"), "sizes[1] is 0"),
    ("slice", [F32], lambda b, x: b.slice(x, [0, 2, 0], [1, 2, 1], label="lbl"), "2 + 2"),
    ("slice", [F32], lambda b, x: b.slice(x, [0, 0, 0], [1, 1, 1], strides=[1, 0, 1], label="lbl"),
     "strides[1] is 0"),
    ("slice", [F32], lambda b, x: b.slice(x, [0] * 3, [1] * 3, strides=[1, 1], label="lbl"), "strides"),
    ("pad", [F32], lambda b, x: b.pad(x, [1, 1], [1, 1, 1], label="lbl"), "beginningPadding"),
    ("pad", [F32], lambda b, x: b.pad(x, [0, 3, 0], [0, 0, 0], mode="reflection", label="lbl"),
     "reflection padding"),
    ("pad", [F32], lambda b, x: b.pad(x, [0] * 3, [0] * 3, mode="symmetric", label="lbl"), "MLPaddingMode"),
    ("pad", [F32], lambda b, x: b.pad(x, [0] * 3, [0] * 3, value="1", label="lbl"), "value"),
    ("concat", [F32, F32], lambda b, x, y: b.concat([x, y], 3, label="lbl"), "axis 3 is out of range"),
    ("concat", [F32, ("int32", [2, 3, 4])], lambda b, x, y: b.concat([x, y], 0, label="lbl"), "data type"),
    ("concat", [F32, ("float32", [2, 3])], lambda b, x, y: b.concat([x, y], 0, label="lbl"), "rank"),
    ("concat", [F32, ("float32", [2, 5, 4])], lambda b, x, y: b.concat([x, y], 0, label="lbl"), "except"),
    ("concat", [F32], lambda b, x: b.concat([], 0, label="lbl"), "empty"),
    ("split", [F32], lambda b, x: b.split(x, 5, axis=2, label="lbl"), "evenly divide"),
    ("split", [F32], lambda b, x: b.split(x, 0, label="lbl"), "evenly divide"),
    ("split", [F32], lambda b, x: b.split(x, [2, 0, 2], axis=2, label="lbl"), "greater than 0"),
    ("split", [F32], lambda b, x: b.split(x, [1, 2], axis=2, label="lbl"), "sum to 3"),
    ("split", [F32], lambda b, x: b.split(x, 1, axis=3, label="lbl"), "out of range"),
    ("expand", [F32], lambda b, x: b.expand(x, [2, 5, 4], label="lbl"), "cannot be broadcast"),
    ("expand", [F32], lambda b, x: b.expand(x, [3, 4], label="lbl"), "cannot be broadcast"),
    ("tile", [F32], lambda b, x: b.tile(x, [1, 2], label="lbl"), "repetitions"),
    ("tile", [F32], lambda b, x: b.tile(x, [1, 0, 1], label="lbl"), "greater than 0"),
    ("tile", [F32], lambda b, x: b.tile(x, [1, 2**31, 1], label="lbl"), "not a valid dimension"),
    ("reverse", [F32], lambda b, x: b.reverse(x, axes=[0, 0], label="lbl"), "duplicate"),
    ("reverse", [F32], lambda b, x: b.reverse(x, axes=[3], label="lbl"), "out of range"),
    ("triangular", [("float32", [4])], lambda b, x: b.triangular(x, label="lbl"), "rank 1"),
    ("triangular", [F32], lambda b, x: b.triangular(x, diagonal=2**31, label="lbl"), "long"),
    ("cast", [F32], lambda b, x: b.cast(x, "bool", label="lbl"), "MLOperandDataType"),
    ("where", [F32, F32, F32], lambda b, c, t, f: b.where(c, t, f, label="lbl"), "condition data type"),
    ("where", [("uint8", [2, 3, 4]), F32, ("int32", [2, 3, 4])],
     lambda b, c, t, f: b.where(c, t, f, label="lbl"), "must match trueValue"),
    ("where", [("uint8", [5]), F32, F32], lambda b, c, t, f: b.where(c, t, f, label="lbl"),
     "not broadcastable"),
    ("where", [("uint8", [4]), F32, ("float32", [3, 2])], lambda b, c, t, f: b.where(c, t, f, label="lbl"),
     "not broadcastable"),
]


@pytest.mark.parametrize("op,descs,call,fragment", ERRORS)
def test_validation_errors(op, descs, call, fragment):
    b = GraphBuilder()
    hs = [b.input(f"x{i}", d) for i, d in enumerate(descs)]
    assert_type_error(lambda: call(b, *hs), "lbl", op, fragment)


def test_defaults_are_filled_in():
    b = GraphBuilder()
    x = b.input("x", F32)
    b.transpose(x), b.slice(x, [0, 0, 0], [1, 1, 1]), b.reverse(x), b.pad(x, [0, 1, 0], [1, 0, 0], value=2.7)
    b.reverse(x, axes=[])
    opts = [op.options for op in b.graph.operations]
    assert opts[0]["permutation"] == [2, 1, 0] and opts[1]["strides"] == [1, 1, 1]
    assert opts[2]["axes"] == [0, 1, 2] and opts[3]["mode"] == "constant" and opts[3]["value"] == float(np.float32(2.7))
    assert opts[4]["axes"] == []
    y = b.input("y", ("int8", [2]))
    b.pad(y, [1], [1], value=2.5), b.triangular(b.reshape(y, [1, 2]))
    assert b.graph.operations[-3].options["value"] == 2  # cast to int8: truncated toward zero
    assert b.graph.operations[-1].options == {"upper": True, "diagonal": 0}


# ------------------------------------------------------------------------------------------- WPT vectors

@pytest.mark.parametrize("case", [c for op in ["reshape", "transpose", "concat", "slice", "split", "expand",
                                               "cast"] for c in wpt_cases(op)])
def test_wpt_vectors(case):
    check_wpt_case(case)
