"""Element-wise binary, comparison, logical and unary kernels (NumPy).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary

Numeric choices, one place:
- +, -, *, /, sqrt, reciprocal on float16 run in float32 and round once: float32 has 24 >= 2 * 11 + 2 bits, so
  the double rounding is innocuous and the result is the correctly rounded float16 one.
- Transcendental ops (exp, log, sin, cos, tan, erf, pow) run in float64 for both float types and round once:
  the result is then almost always the correctly rounded float32/float16 value (0-1 ULP), on any libm.
- Integers stay in their own type: +, -, *, neg, abs and pow wrap modulo 2^bits (two's complement), like the
  native backends; nothing integer goes through float64, so int64/uint64 are exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_core.kernels import native
from py_core.kernels.common import binary, unary
from py_core.kernels.mathfn import erf64
from py_core.kernels.traits import KernelTraits, always, batch_elementwise, with_batch

F32 = np.dtype(np.float32)

# ----------------------------------------------------------------------------------------------- helpers


def _erf_f64(input: np.ndarray) -> np.ndarray:
    return np.asarray(erf64(input.astype(np.float64))).astype(input.dtype)


def _erf(input: np.ndarray) -> np.ndarray:
    """erf: the C SIMD kernel for float32 (absolute error < 5e-7; WPT allows 1/1024: 0.04 vs 1.3 ms on 16384
    elements in Pyodide), else float64 rounded once."""
    if input.dtype == F32 and native.available():
        return native.erf(input)
    return _erf_f64(input)


def _f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Unary float kernel computed in float64, rounded once to the input's type."""

    def kernel(input: np.ndarray) -> np.ndarray:
        return np.asarray(fn(input.astype(np.float64))).astype(input.dtype)

    kernel.__name__ = getattr(fn, "__name__", "f64")
    return kernel


def _same(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Unary kernel computed in the input's own type (exact ops, integers)."""

    def kernel(input: np.ndarray) -> np.ndarray:
        return np.asarray(fn(input))

    kernel.__name__ = getattr(fn, "__name__", "same")
    return kernel


def _compare(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Broadcasting comparison / binary logical kernel: the boolean result as uint8 0/1."""

    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(fn(a, b)).astype(np.uint8)

    kernel.__name__ = getattr(fn, "__name__", "compare")
    return kernel


def _predicate(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """Single-input logical kernel (logicalNot, isNaN, isInfinite; operand `a`) -> uint8 0/1."""

    def kernel(a: np.ndarray) -> np.ndarray:
        return np.asarray(fn(a)).astype(np.uint8)

    kernel.__name__ = getattr(fn, "__name__", "predicate")
    return kernel


# ----------------------------------------------------------------------------------------------- binary


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """div: IEEE division for floats; integer division truncates toward zero.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary"""
    if a.dtype.kind == "f":
        return np.divide(a, b)
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    # x / 0 and INT_MIN / -1 are undefined in C; like WGSL, x / 0 returns x, and x / -1 is the wrapping -x
    minus_one = (b == -1) if a.dtype.kind == "i" else np.zeros(b.shape, dtype=bool)
    safe = np.where(zero | minus_one, np.ones((), a.dtype), b)
    q = np.floor_divide(a, safe)
    if a.dtype.kind == "i":
        # floor -> trunc: step back toward zero when the division was inexact and the signs differ
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
        q = np.where(minus_one, np.negative(a), q)
    return np.where(zero, a, q)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer power by binary exponentiation, wrapping modulo 2^bits like repeated multiplication."""
    a, b = np.broadcast_arrays(a, b)
    dtype = a.dtype
    negative = b < 0 if dtype.kind == "i" else np.zeros(b.shape, dtype=bool)
    e = np.where(negative, np.zeros((), dtype), b)
    result = np.ones(a.shape, dtype)
    base = a.copy()
    # one pass per exponent bit (at most 64), not per element
    while e.size and np.any(e):
        odd = (e & 1).astype(bool)
        result = np.where(odd, result * base, result)
        base = base * base
        e = e >> 1
    if dtype.kind == "i" and negative.any():
        # a^-n truncates toward zero: 1 for a = 1, +-1 for a = -1, else 0 (0^-n has no integer value: 0 too)
        odd = (b & 1).astype(bool)
        inv = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(dtype)
        result = np.where(negative, inv, result)
    return result


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pow: float64 for float types (rounded once), exact wrapping power for integers.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary"""
    if a.dtype.kind == "f":
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return _int_pow(a, b)


# ----------------------------------------------------------------------------------------------- unary


def _sign(input: np.ndarray) -> np.ndarray:
    """sign: 1 if > 0, -1 if < 0, and 0 otherwise (so NaN -> 0, as the spec's text and emulation say).
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-unary"""
    return (input > 0).astype(input.dtype) - (input < 0).astype(input.dtype)


def _identity(input: np.ndarray) -> np.ndarray:
    """identity: a copy, so the output never aliases a caller's input buffer.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-unary"""
    return np.array(input, copy=True)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    return np.divide(np.ones((), x.dtype), x)


KERNELS: dict[str, Callable[..., object]] = {
    "add": binary(np.add),
    "sub": binary(np.subtract),
    "mul": binary(np.multiply),
    "div": binary(_div),
    # max/min propagate NaN (IEEE maximum/minimum, like torch.maximum and the native backends)
    "max": binary(np.maximum),
    "min": binary(np.minimum),
    "pow": _pow,
    # comparisons on float16 are exact without widening; NaN compares unequal (notEqual -> 1, others -> 0)
    "equal": _compare(np.equal),
    "notEqual": _compare(np.not_equal),
    "greater": _compare(np.greater),
    "greaterOrEqual": _compare(np.greater_equal),
    "lesser": _compare(np.less),
    "lesserOrEqual": _compare(np.less_equal),
    # logical ops treat any non-zero uint8 as true
    "logicalAnd": _compare(np.logical_and),
    "logicalOr": _compare(np.logical_or),
    "logicalXor": _compare(np.logical_xor),
    "logicalNot": _predicate(np.logical_not),
    "isNaN": _predicate(np.isnan),
    "isInfinite": _predicate(np.isinf),
    "abs": _same(np.abs),
    # ceil, floor and roundEven are exact in the input's own type; np.rint rounds halves to even
    "ceil": _same(np.ceil),
    "floor": _same(np.floor),
    "roundEven": _same(np.rint),
    "cos": _f64(np.cos),
    "erf": _erf,
    "exp": _f64(np.exp),
    "identity": _identity,
    "log": _f64(np.log),
    "neg": _same(np.negative),
    "reciprocal": unary(_reciprocal),
    "sign": _sign,
    "sin": _f64(np.sin),
    "sqrt": unary(np.sqrt),
    "tan": _f64(np.tan),
}

# float32 +, -, *, / on the reference kernels are the plain ufuncs, so the in-place versions round the same
TRAITS: dict[str, KernelTraits] = {
    "add": KernelTraits(fresh=True, ufunc=np.add, commutative=True, epilogue=True),
    "sub": KernelTraits(fresh=True, ufunc=np.subtract, epilogue=True),
    "mul": KernelTraits(fresh=True, ufunc=np.multiply, commutative=True, epilogue=True),
    "div": KernelTraits(fresh=True, ufunc=np.divide, epilogue=True),
    "max": KernelTraits(fresh=True, ufunc=np.maximum, commutative=True),
    "min": KernelTraits(fresh=True, ufunc=np.minimum, commutative=True),
    "identity": KernelTraits(noop=always),
    **{op: KernelTraits(fresh=True) for op in ("pow", "exp", "log", "sqrt", "abs", "neg")},
}
# one graph over both cores (compiler/split.py): every element-wise operator, broadcasting or not
TRAITS = with_batch(TRAITS, {op: batch_elementwise for op in KERNELS})
