"""WPT precision rules for WebNN results: one table, ULP and ATOL checks.  https://www.w3.org/TR/webnn/

The rules follow the W3C web-platform-tests WebNN harness (`webnn/resources/utils.js`,
`getPrecisionTolerance`, as of the December 2025 tests the vendored vectors come from) and the per-operator
tolerance functions of `webnn/conformance_tests/<op>.https.any.js`:

- A graph's tolerance is the SUM of the tolerances of its operators (`getPrecisionTolerance` adds them up).
- Most operators have a fixed ULP budget per data type; data movement and logical operators have 0.
- conv2d/convTranspose2d, gemm, matmul, softmax, pooling, reductions, cumulativeSum and resample2d derive
  their ULP budget from the accumulation count (shapes and options of the operator).
- A few transcendental and normalization operators are compared with an absolute tolerance (ATOL) instead.
- Integer results are exact unless the table says otherwise (quantizeLinear: 1).

ULP distances are taken on the integer bit patterns: each float32/float16 is mapped to a signed integer that
is monotonic in the value (bits of |x|, negated for negative x), as WPT's float32 `getBitwise` does; +0 and -0
are the same point. (WPT's float16 path subtracts the raw uint16 patterns, which makes every sign mismatch
fail; the monotonic mapping is used for both widths here.) NaN matches NaN.

Pure NumPy and the standard library: this module also runs inside Pyodide and in the cross-browser bench.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

WPT_UTILS = "https://github.com/web-platform-tests/wpt/blob/master/webnn/resources/utils.js"

FLOAT_TYPES = ("float32", "float16")
INT_TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "int4", "uint4")

# WPT compares at most this many elements when the expected data is one scalar filling a large tensor.
MAX_INDEX_TO_VALIDATE = 1000

# Distance reported for a NaN that meets a number (no ULP count can describe it).
NAN_MISMATCH = math.inf


@dataclass(frozen=True)
class Tolerance:
    """An error budget: `ulp` units in the last place and/or `atol` absolute difference (0: unused)."""

    ulp: int = 0
    atol: float = 0.0

    def __add__(self, other: Tolerance) -> Tolerance:
        return Tolerance(self.ulp + other.ulp, self.atol + other.atol)

    @property
    def metric(self) -> str:
        return "ATOL" if self.atol and not self.ulp else "ULP"

    def to_json(self) -> dict[str, Any]:
        return {"ulp": self.ulp, "atol": self.atol}


@dataclass(frozen=True)
class OpUnderTest:
    """One operator call of a graph as the tolerance rules see it: its name, its operands' shapes, its values.

    `shapes`: shapes of its operand arguments in argument order (input first, then filter / b / ...).
    `values`: its non-operand argument values by name, options-dictionary members merged in; an operand
    passed in the options dictionary (gemm's `c`, conv2d's `bias`) appears with a truthy placeholder.
    """

    name: str
    shapes: tuple[tuple[int, ...], ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)


OpLike = str | OpUnderTest


# ------------------------------------------------------------------------------------------ the table

def _same(value: int) -> dict[str, int]:
    return {"float32": value, "float16": value}


# Fixed ULP budgets by output data type; a data type missing from a row gets 0 (WPT adds nothing then).
# utils.js operatorToleranceDict + zeroULPToleranceOperatorList, and the per-operator conformance files.
ULP_TABLE: dict[str, dict[str, int]] = {
    # utils.js operatorToleranceDict
    "argMax": _same(0),
    "argMin": _same(0),
    "batchNormalization": _same(6),
    "clamp": _same(0),
    "add": _same(1),
    "sub": _same(1),
    "mul": _same(1),
    "max": _same(0),
    "min": _same(0),
    "elu": _same(18),
    "gelu": _same(18),
    "hardSigmoid": _same(2),
    "hardSwish": _same(4),
    "leakyRelu": {"float32": 1, "float16": 2},
    "linear": _same(2),
    "prelu": _same(1),
    "relu": _same(0),
    "sigmoid": {"float32": 34, "float16": 10},
    "softplus": _same(18),
    "softsign": _same(3),
    "tanh": _same(16),
    # per-operator conformance files (get<Op>PrecisionTolerance)
    "div": _same(2),
    "pow": {"float32": 32, "float16": 2},
    "abs": _same(0),
    "ceil": _same(0),
    "floor": _same(0),
    "neg": _same(0),
    "roundEven": _same(0),
    "sign": _same(0),
    "exp": {"float32": 32, "float16": 1},
    "sqrt": _same(1),
    "reciprocal": _same(2),
    "cast": _same(1),
    "instanceNormalization": {"float32": 840, "float16": 8400},
    "dequantizeLinear": _same(1),
    "quantizeLinear": {"int8": 1, "uint8": 1, "int4": 1, "uint4": 1},
    # gru/lstm files list float32 only; the same budget is assumed for float16
    "gru": _same(3),
    "gruCell": _same(3),
    "lstm": _same(1),
    "lstmCell": _same(1),
    "where": _same(0),
    "triangular": _same(0),
    "isNaN": _same(0),
    "isInfinite": _same(0),
}

# utils.js zeroULPToleranceOperatorList: exact for every data type.
ZERO_ULP = frozenset({
    "concat", "expand", "gather", "gatherElements", "gatherND", "identity", "pad", "reshape", "reverse",
    "scatterElements", "scatterND", "slice", "split", "tile", "transpose",
    "equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual",
    "logicalNot", "logicalAnd", "logicalOr", "logicalXor",
})

# Absolute tolerances (per-operator conformance files with metricType 'ATOL').
ATOL_TABLE: dict[str, dict[str, float]] = {
    "log": {"float32": 1 / 1024, "float16": 1 / 1024},
    "cos": {"float32": 1 / 1024, "float16": 1 / 512},
    "sin": {"float32": 1 / 1024, "float16": 1 / 512},
    "tan": {"float32": 1 / 1024, "float16": 1 / 512},
    "erf": {"float32": 1 / 1024, "float16": 1 / 512},
    "layerNormalization": {"float32": 1 / 1024, "float16": 1 / 512},
}

REDUCTIONS = ("reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax", "reduceMean",
              "reduceMin", "reduceProduct", "reduceSum", "reduceSumSquare")
SHAPED = frozenset({"conv2d", "convTranspose2d", "gemm", "matmul", "softmax", "averagePool2d", "l2Pool2d",
                    "maxPool2d", "cumulativeSum", "resample2d", *REDUCTIONS})

KNOWN_OPS: frozenset[str] = frozenset(ULP_TABLE) | ZERO_ULP | frozenset(ATOL_TABLE) | SHAPED


# ---------------------------------------------------------------------------- shape-dependent rules

def _shape(ctx: OpUnderTest, i: int) -> tuple[int, ...]:
    if len(ctx.shapes) <= i:
        raise ValueError(f"{ctx.name}: the tolerance rule needs the shape of operand argument {i}")
    return tuple(ctx.shapes[i])


def _conv_ulp(ctx: OpUnderTest) -> int:
    """getConv2dPrecisionTolerance: filter window x input channels per group x 2 (a sliding dot product)."""
    x, w = _shape(ctx, 0), _shape(ctx, 1)
    v = ctx.values
    channels = x[3] if v.get("inputLayout") == "nhwc" else x[1]
    layout = v.get("filterLayout") or ("iohw" if ctx.name == "convTranspose2d" else "oihw")
    if layout in ("hwio", "hwoi"):
        fw, fh = w[1], w[0]
    elif layout in ("ohwi", "ihwo"):
        fw, fh = w[2], w[1]
    else:  # oihw, iohw
        fw, fh = w[3], w[2]
    groups = v.get("groups") or 1
    return math.ceil(fw * fh * channels * 2 / groups)


def _gemm_ulp(ctx: OpUnderTest) -> int:
    """getGemmPrecisionTolerance: 2 x the dot-product width, +1 for alpha != 1, +1 (+1 more for beta != 1)
    when c is given."""
    a = _shape(ctx, 0)
    v = ctx.values
    width = a[0] if v.get("aTranspose") else a[1]
    tol = width * 2
    alpha, beta = v.get("alpha"), v.get("beta")
    if alpha is not None and alpha != 1.0:
        tol += 1
    if v.get("c") and beta != 0.0:
        if beta is not None and beta != 1.0:
            tol += 1
        tol += 1
    return tol


def _pool_ulp(ctx: OpUnderTest, dtype: str) -> int:
    """getPoolingOperatorsPrecisionTolerance: window area + 2 for average/L2 pooling, 0 for max pooling."""
    if ctx.name == "maxPool2d":
        return 0
    window = ctx.values.get("windowDimensions")
    if window:
        h, w = window[0], window[1]
    else:
        x = _shape(ctx, 0)
        h, w = (x[1], x[2]) if ctx.values.get("layout") == "nhwc" else (x[2], x[3])
    return h * w + 2


def _reduction_ulp(ctx: OpUnderTest) -> int:
    """getReductionOperatorsPrecisionTolerance: a budget from the number of reduced elements."""
    if ctx.name in ("reduceMax", "reduceMin"):
        return 0
    x = _shape(ctx, 0)
    axes = ctx.values.get("axes")
    sizes = [x[a + len(x) if a < 0 else a] for a in axes] if axes is not None else list(x)
    n = 1
    for s in sizes:
        n *= s
    return {
        "reduceL1": n, "reduceProduct": n, "reduceSum": n,
        "reduceL2": n * 2 + 2,
        "reduceLogSum": n + 18,
        "reduceLogSumExp": n * 2 + 18,
        "reduceMean": n + 2,
        "reduceSumSquare": n * 2,
    }[ctx.name]


def _shaped_ulp(ctx: OpUnderTest, dtype: str) -> int:
    name = ctx.name
    if name in ("conv2d", "convTranspose2d"):
        return _conv_ulp(ctx)
    if name == "gemm":
        return _gemm_ulp(ctx)
    if name == "matmul":  # getMatmulPrecisionTolerance: 2 x the inner dimension
        return _shape(ctx, 0)[-1] * 2
    if name == "softmax":  # getSoftmaxPrecisionTolerance: 3 x the softmax axis + 3
        x = _shape(ctx, 0)
        axis = ctx.values.get("axis", 1)
        return x[axis] * 3 + 3
    if name in ("averagePool2d", "l2Pool2d", "maxPool2d"):
        return _pool_ulp(ctx, dtype)
    if name in REDUCTIONS:
        return _reduction_ulp(ctx)
    if name == "cumulativeSum":  # getCumulativeSumPrecisionTolerance: axis length - 1 for floats
        if dtype not in FLOAT_TYPES:
            return 0
        return _shape(ctx, 0)[ctx.values.get("axis", 0)] - 1
    if name == "resample2d":  # getResample2dPrecisionTolerance
        if ctx.values.get("mode") != "linear":
            return 0
        return {"float32": 84, "float16": 10}.get(dtype, 1)
    raise AssertionError(name)


# ---------------------------------------------------------------------------------------- public API

def _context(op: OpLike, graph: OpUnderTest | Mapping[str, Any] | None = None) -> OpUnderTest:
    if isinstance(op, OpUnderTest):
        return op
    if isinstance(graph, OpUnderTest):
        return OpUnderTest(op, graph.shapes, graph.values)
    if graph is None:
        return OpUnderTest(op)
    shapes = tuple(tuple(int(d) for d in s) for s in graph.get("shapes", ()))
    return OpUnderTest(op, shapes, dict(graph.get("values", graph.get("options", {}))))


def tolerance_for(op: OpLike, dtype: str | np.dtype, graph: OpUnderTest | Mapping[str, Any] | None = None
                  ) -> Tolerance:
    """The WPT tolerance of one operator for results of `dtype`.

    `graph` describes the operator's operands and options where the rule depends on them (an OpUnderTest, or a
    mapping with `shapes` and `values`/`options`); shape-independent operators need none.
    """
    ctx = _context(op, graph)
    dt = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    name = ctx.name
    if name not in KNOWN_OPS:
        raise KeyError(f"no WPT tolerance rule for operator '{name}'")
    if name in ZERO_ULP:
        return Tolerance()
    if name in ATOL_TABLE:
        return Tolerance(atol=ATOL_TABLE[name].get(dt, 0.0))
    if name in SHAPED:
        return Tolerance(ulp=_shaped_ulp(ctx, dt))
    return Tolerance(ulp=ULP_TABLE[name].get(dt, 0))


def graph_tolerance(ops: Iterable[OpLike], dtype: str | np.dtype) -> Tolerance:
    """The tolerance of a whole graph: the sum over its operators (WPT getPrecisionTolerance)."""
    total = Tolerance()
    for op in ops:
        total = total + tolerance_for(op, dtype)
    return total


_BITS = {"float32": (np.int32, 0x7FFFFFFF), "float16": (np.int16, 0x7FFF)}


def _ordered_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """Float values as int64 keys monotonic in value: bits of |x|, negated for negative x (-0 == +0)."""
    int_type, mask = _BITS[dtype]
    arr = np.asarray(x, dtype=dtype)
    bits = np.ascontiguousarray(arr).view(int_type).reshape(arr.shape).astype(np.int64)
    magnitude = bits & mask
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(a: Any, b: Any, dtype: str | np.dtype) -> np.ndarray:
    """Element-wise distance between `a` and `b` in units of `dtype`: ULPs for floats (both rounded to
    `dtype` first), the exact integer difference for integer types.  NaN vs NaN is 0, NaN vs a number inf.
    Returns float64 for float types (inf marks NaN mismatches) and Python-int-exact values as an object or
    int64 array for integer types."""
    dt = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if dt in _BITS:
        xa = np.asarray(a, dtype=np.float64).astype(dt)
        xb = np.asarray(b, dtype=np.float64).astype(dt)
        dist = np.abs(_ordered_bits(xa, dt) - _ordered_bits(xb, dt)).astype(np.float64)
        na, nb = np.isnan(xa), np.isnan(xb)
        dist = np.where(na & nb, 0.0, dist)
        return np.where(na ^ nb, NAN_MISMATCH, dist)
    if dt in ("int64", "uint64"):
        # exact: never route 64-bit integers through float64
        ia = np.asarray(a, dtype=object).ravel()
        ib = np.asarray(b, dtype=object).ravel()
        return np.array([abs(int(x) - int(y)) for x, y in zip(ia, ib, strict=True)], dtype=object).reshape(
            np.shape(a))
    return np.abs(np.asarray(a).astype(np.int64) - np.asarray(b).astype(np.int64))


class CheckResult(NamedTuple):
    """Outcome of comparing one output: ok, the largest ULP distance and the largest absolute difference."""

    ok: bool
    max_ulp: float
    max_abs: float


def check(ops: Sequence[OpLike] | OpLike, actual: Any, expected: Any, dtype: str | np.dtype,
          tolerance: Tolerance | None = None) -> CheckResult:
    """Compare `actual` with `expected` under the summed WPT tolerance of `ops` for results of `dtype`.

    An element passes when it equals the expected value (NaN matches NaN), or is within the ULP budget, or
    within the ATOL budget.  `expected` may be wider than `dtype` (JSON doubles): it is rounded to `dtype` for
    the ULP metric and used as is for ATOL, as the WPT harness does.  Pass `tolerance` to override the table.
    """
    dt = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if tolerance is None:
        tolerance = graph_tolerance([ops] if isinstance(ops, (str, OpUnderTest)) else ops, dt)
    act = np.asarray(actual).ravel()
    exp = np.asarray(expected).ravel()
    if act.size != exp.size:
        return CheckResult(False, NAN_MISMATCH, NAN_MISMATCH)
    if act.size == 0:
        return CheckResult(True, 0.0, 0.0)
    if dt not in _BITS:
        dist = ulp_distance(act, exp, dt)
        worst = max((int(d) for d in dist.ravel()), default=0)
        return CheckResult(worst <= tolerance.ulp, float(worst), float(worst))
    a64 = act.astype(np.float64)
    e64 = exp.astype(np.float64)
    ulps = ulp_distance(a64, e64, dt)
    both_nan = np.isnan(a64) & np.isnan(e64)
    with np.errstate(invalid="ignore"):
        absdiff = np.where(both_nan | (a64 == e64), 0.0, np.abs(a64 - e64))
    absdiff = np.where(np.isnan(absdiff), math.inf, absdiff)
    within = (ulps <= tolerance.ulp) | (absdiff <= tolerance.atol if tolerance.atol else False)
    return CheckResult(bool(np.all(within)), float(np.max(ulps)), float(np.max(absdiff)))
