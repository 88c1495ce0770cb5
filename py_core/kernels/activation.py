"""Activation kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder

Every kernel computes float16 in float32 and rounds once; integer kernels stay in their own type.  The in-place
versions (`*_inplace`, float32 only) are what the compiler runs when it fuses an activation into a product or
writes it into a dying input's buffer (see TRAITS at the end).  Measured in Pyodide (NumPy 2.0.2), per element
of a [1, 64, 112, 112] float32 tensor: `np.maximum(x, 0)` 7.5 ns, `np.where(x < 0, 0, x)` 2.8 ns,
`np.copyto(y, 0, where=y < 0)` in place 2 ns; sigmoid as 1 / (1 + exp(-x)) in place 11 ns against 28 ns for the
two-branch stable form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from py_core.kernels import native
from py_core.kernels.common import NumpyFn, unary, wide_type
from py_core.kernels.traits import (
    InPlace,
    KernelTraits,
    Options,
    batch_elementwise,
    batch_per_sample,
    unary_in_place,
    with_batch,
)

F32 = np.dtype(np.float32)
# Below this many elements the NumPy kernels win: a C kernel call costs 10-25 us of Python in Pyodide (its
# wrapper's checks, two data pointers, the ctypes call; measured on relu of [4]) against about 6 us for the
# NumPy select, which is what a 1-operator dispatch pays.  The results are the same either way for
# relu, clamp and hardSwish (exact, or the same operations in the same order).
NATIVE_MIN = 2048
# exp(-x) overflows float32 below this; sigmoid there is exp(x) to within rounding (1 + e^-x == e^-x)
_SIGMOID_OVERFLOW = np.float32(-87.0)


def with_options(fn: NumpyFn) -> Callable[..., np.ndarray]:
    """Element-wise kernel taking option values; float16 computes in float32 and rounds once."""

    def kernel(input: np.ndarray, **options: Any) -> np.ndarray:
        x = input.astype(wide_type(input.dtype), copy=False)
        return np.asarray(fn(x, **options)).astype(input.dtype, copy=False)

    kernel.__name__ = getattr(fn, "__name__", "activation")
    return kernel


def relu(input: np.ndarray) -> np.ndarray:
    """relu: max(0, x), exact in every type.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-relu-method"""
    if input.dtype == F32 and input.size >= NATIVE_MIN and native.available():
        return native.activation(input, native.ACT_CLAMP, 0.0, float("inf"))  # C SIMD: 0.3 vs 3 ms at 800K
    zero = input.dtype.type(0)
    # a select, not np.maximum: 2.8 vs 7.5 ns per float32 element in Pyodide; NaN < 0 is False, NaN stays
    return np.where(input < zero, zero, input)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + exp(-x)) in place on one temporary: 11 vs 28 ns per float32 element in Pyodide against the
    # two-branch form.  exp(-x) overflowing to inf gives 1 / inf = 0, so only x below -87 (float32 exp's
    # range) needs the exact tail sigmoid(x) = exp(x) / (1 + exp(x)) = exp(x) there, to keep subnormal results
    if x.dtype == F32 and native.available():
        return native.sigmoid(x)  # C SIMD exp, within 2.3 ulp (WPT allows 34): 1 vs 13 ms at 800K elements
    tiny = x < -87
    y = np.negative(x, out=np.empty_like(x))  # out=: an array even for rank 0
    np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)
    if tiny.any():
        y[tiny] = np.exp(x[tiny])
    return y


def _softplus(x: np.ndarray) -> np.ndarray:
    # stable ln(1 + exp(x)) = max(x, 0) + ln(1 + exp(-|x|)): no overflow, exact limits at +/-inf
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _softsign(x: np.ndarray) -> np.ndarray:
    # the spec's x / (1 + |x|) literally: +/-inf gives inf/inf = NaN, as in the spec's emulation and torch
    return x / (1 + np.abs(x))


def _hard_swish(x: np.ndarray) -> np.ndarray:
    # the spec's x * max(0, min(6, x + 3)) / 6 literally: -inf gives -inf * 0 = NaN, as torch does
    if x.dtype == F32 and x.size >= NATIVE_MIN and native.available():
        return native.activation(x, native.ACT_HARD_SWISH)  # the same operations in C, in the same order
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6


def _elu(x: np.ndarray, alpha: float) -> np.ndarray:
    # expm1 keeps alpha * (exp(x) - 1) accurate near 0; min(x, 0) keeps the unused branch from overflowing
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x < 0, alpha * x, x)


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    # max/min propagate NaN (np.clip's behaviour is not guaranteed for NaN across NumPy versions)
    return np.minimum(np.maximum(alpha * x + beta, 0), 1)


def _linear(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return alpha * x + beta


def _gelu(x: np.ndarray) -> np.ndarray:
    # 0.5 * x * (1 + erf(x / sqrt(2))) in float64 (erf64 is a float64 kernel); the caller rounds once
    from py_core.kernels.mathfn import erf64  # imported late: mathfn is another family's module

    x64 = x.astype(np.float64)
    return 0.5 * x64 * (1.0 + erf64(x64 * np.sqrt(0.5)))


def clamp(input: np.ndarray, minValue: float | int, maxValue: float | int) -> np.ndarray:
    """clamp: bounds already cast to the input type by the spec row, so min/max are exact in every type.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-clamp"""
    lo = np.asarray(minValue, dtype=input.dtype)
    hi = np.asarray(maxValue, dtype=input.dtype)
    if input.dtype == F32 and input.size >= NATIVE_MIN and native.available():
        return native.activation(input, native.ACT_CLAMP, float(lo), float(hi))
    # selects (NaN compares False, so a NaN input stays NaN): 3.9 vs 9.4 ns per float32 element in Pyodide
    # against np.minimum(np.maximum(x, lo), hi); lo <= hi is checked by the spec row
    return np.where(input < lo, lo, np.where(input > hi, hi, input))


def prelu(input: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """prelu: x if x >= 0 else slope * x, broadcast; integers wrap like C.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-prelu"""
    wide = wide_type(input.dtype)
    x, s = input.astype(wide, copy=False), slope.astype(wide, copy=False)
    return np.where(x < 0, x * s, x).astype(input.dtype, copy=False)


def softmax(input: np.ndarray, axis: int) -> np.ndarray:
    """softmax along `axis`.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-softmax-method"""
    if input.dtype == F32 and native.available() and input.ndim and axis in (-1, input.ndim - 1) and input.size:
        return native.softmax_last(input)  # C SIMD exp over contiguous rows
    x = input.astype(wide_type(input.dtype), copy=False)
    # subtract the max along the axis first: exp never overflows and the largest term is exactly 1
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(input.dtype, copy=False)


# ------------------------------------------------------------------- in-place versions (float32, y <- op(y))


def relu_inplace(y: np.ndarray) -> None:
    # NaN < 0 is False: NaN stays NaN, as max(0, NaN) does
    np.copyto(y, 0, where=y < 0)


def clamp_inplace(options: Options) -> InPlace:
    lo32, hi32 = np.float32(options["minValue"]), np.float32(options["maxValue"])

    def clamp(y: np.ndarray) -> None:
        if lo32 > -np.inf:
            np.copyto(y, lo32, where=y < lo32)
        if hi32 < np.inf:
            np.copyto(y, hi32, where=y > hi32)

    return clamp


def sigmoid_inplace(y: np.ndarray) -> None:
    """y <- 1 / (1 + exp(-y)); the few inputs where exp(-y) overflows take exp(y) (= sigmoid there)."""
    if native.available() and y.dtype == F32:
        # SIMD exp, the subnormal tail included: 0.1 vs 1.2-3 ms on 65536 elements in Pyodide (3 ms when most
        # inputs are below -87, as a segmentation mask's background is)
        native.sigmoid_inplace(y)
        return
    tiny = y < _SIGMOID_OVERFLOW
    small = np.exp(y[tiny]) if tiny.any() else None
    with np.errstate(over="ignore"):
        np.negative(y, out=y)
        np.exp(y, out=y)
        y += 1
        np.reciprocal(y, out=y)
    if small is not None:
        y[tiny] = small


def hard_swish_inplace(y: np.ndarray) -> None:
    # the reference's x * min(max(x + 3, 0), 6) / 6, same operations in the same order (same rounding)
    t = y + np.float32(3)
    np.copyto(t, 0, where=t < 0)
    np.copyto(t, 6, where=t > 6)
    np.multiply(y, t, out=y)
    np.divide(y, np.float32(6), out=y)


def leaky_relu_inplace(options: Options) -> InPlace:
    alpha = float(options["alpha"])

    def leaky(y: np.ndarray) -> None:
        np.multiply(y, alpha, out=y, where=y < 0)

    return leaky


def tanh_inplace(y: np.ndarray) -> None:
    np.tanh(y, out=y)


KERNELS: dict[str, Callable[..., object]] = {
    "relu": relu,
    "sigmoid": unary(_sigmoid),
    "tanh": unary(np.tanh),
    "gelu": unary(_gelu),
    "softplus": unary(_softplus),
    "softsign": unary(_softsign),
    "hardSwish": unary(_hard_swish),
    "elu": with_options(_elu),
    "leakyRelu": with_options(_leaky_relu),
    "hardSigmoid": with_options(_hard_sigmoid),
    "linear": with_options(_linear),
    "clamp": clamp,
    "prelu": prelu,
    "softmax": softmax,
}

# relu, clamp and hardSwish also exist as the C kernels' fused store (relu as a clamp to [0, inf))
_INF = float("inf")
TRAITS: dict[str, KernelTraits] = {
    "relu": KernelTraits(fresh=True, in_place=unary_in_place(relu_inplace), epilogue=True,
                         native_act=lambda o: (native.ACT_CLAMP, 0.0, _INF)),
    "clamp": KernelTraits(fresh=True, in_place=clamp_inplace, epilogue=True,
                          native_act=lambda o: (native.ACT_CLAMP, float(o["minValue"]), float(o["maxValue"]))),
    "hardSwish": KernelTraits(fresh=True, in_place=unary_in_place(hard_swish_inplace), epilogue=True,
                              native_act=lambda o: (native.ACT_HARD_SWISH, 0.0, 0.0)),
    "sigmoid": KernelTraits(fresh=True, in_place=unary_in_place(sigmoid_inplace), epilogue=True),
    "tanh": KernelTraits(fresh=True, in_place=unary_in_place(tanh_inplace), epilogue=True),
    "leakyRelu": KernelTraits(fresh=True, in_place=leaky_relu_inplace, epilogue=True),
    **{op: KernelTraits(fresh=True)
       for op in ("elu", "softplus", "softsign", "hardSigmoid", "gelu", "prelu", "softmax", "linear")},
}
# one graph over both cores (compiler/split.py)
TRAITS = with_batch(TRAITS, {**{op: batch_elementwise for op in TRAITS if op != "softmax"},
                             "softmax": batch_per_sample("axis")})
