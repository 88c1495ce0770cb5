"""Reduction, argMin/argMax and cumulativeSum kernels (NumPy).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reduce"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_core.kernels.common import wide_type
from py_core.kernels.traits import KernelTraits, batch_per_sample, with_batch
from py_core.types import DataType

# Integer reductions pass dtype=input dtype to NumPy: otherwise np.sum/np.prod/np.cumsum promote small ints to
# the platform integer (int64 in CPython, int32 in Pyodide's wasm32), and the result would depend on the host.
# In-type accumulation wraps modulo 2^bits, the same as any two's-complement backend.


def _out(r: object, dtype: np.dtype) -> np.ndarray:
    return np.asarray(r).astype(dtype, copy=False)


def _reduction(body: Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray],
               acc: Callable[[np.dtype], np.dtype] = wide_type) -> Callable[..., np.ndarray]:
    """Kernel from body(x widened to acc(dtype), axes, keep); float16 computes in float32, rounds once."""

    def kernel(input: np.ndarray, axes: list[int], keepDimensions: bool) -> np.ndarray:
        x = input.astype(acc(input.dtype), copy=False)
        return _out(body(x, tuple(axes), keepDimensions), input.dtype)

    kernel.__name__ = body.__name__
    return kernel


def _l1(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sum(np.abs(x), axis=axes, dtype=x.dtype, keepdims=keep)


def _l2_type(dtype: np.dtype) -> np.dtype:
    # float32 squares overflow once |x| > 1.8e19 while the norm itself fits: sum squares in float64
    return np.dtype(np.float64) if dtype == np.float32 else wide_type(dtype)


def _l2(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sqrt(np.sum(x * x, axis=axes, dtype=x.dtype, keepdims=keep))


def _log_sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.log(np.sum(x, axis=axes, dtype=x.dtype, keepdims=keep))


def _log_sum_exp(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    m = np.max(x, axis=axes, keepdims=True)
    # subtract the max so exp cannot overflow; an infinite or NaN max shifts by 0 instead (inf - inf is NaN),
    # which still gives +inf for a +inf max, -inf when every value is -inf, and NaN for NaN
    m = np.where(np.isfinite(m), m, np.zeros_like(m))
    s = np.sum(np.exp(x - m), axis=axes, dtype=x.dtype, keepdims=True)
    r = np.log(s) + m
    return r if keep else np.squeeze(r, axis=axes)


def _max(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    # exact in the input type (no widening); NaN propagates (np.max, not np.nanmax) like native backends
    return np.max(x, axis=axes, keepdims=keep)


def _min(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.min(x, axis=axes, keepdims=keep)


def _mean(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.mean(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _product(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.prod(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sum(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _sum_square(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sum(x * x, axis=axes, dtype=x.dtype, keepdims=keep)


def _arg(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """argMin/argMax kernel: NumPy returns the first index among ties and the first NaN, if any."""

    def kernel(input: np.ndarray, axis: int, keepDimensions: bool, outputDataType: object) -> np.ndarray:
        dtype = np.dtype(DataType.parse(outputDataType).numpy_name)
        return _out(fn(input, axis=axis, keepdims=keepDimensions), dtype)

    kernel.__name__ = fn.__name__
    return kernel


def cumulative_sum(input: np.ndarray, axis: int, exclusive: bool, reversed: bool) -> np.ndarray:
    """cumulativeSum: prefix sums along one axis.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-cumulativesum"""
    acc = wide_type(input.dtype)
    x = input.astype(acc, copy=False)
    if reversed:
        x = np.flip(x, axis)
    # sequential float accumulation, as the WPT tolerance (shape[axis] - 1 ULP) assumes
    c = np.cumsum(x, axis=axis, dtype=acc)
    if exclusive:
        # shift by one instead of subtracting the input: exact for floats and ints alike
        shifted = np.zeros_like(c)
        dst = [slice(None)] * c.ndim
        src = [slice(None)] * c.ndim
        dst[axis], src[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(dst)] = c[tuple(src)]
        c = shifted
    if reversed:
        c = np.flip(c, axis)
    return np.ascontiguousarray(c.astype(input.dtype, copy=False))


KERNELS: dict[str, Callable[..., object]] = {
    "reduceL1": _reduction(_l1),
    "reduceL2": _reduction(_l2, _l2_type),
    "reduceLogSum": _reduction(_log_sum),
    "reduceLogSumExp": _reduction(_log_sum_exp),
    "reduceMax": _reduction(_max, np.dtype),
    "reduceMean": _reduction(_mean),
    "reduceMin": _reduction(_min, np.dtype),
    "reduceProduct": _reduction(_product),
    "reduceSum": _reduction(_sum),
    "reduceSumSquare": _reduction(_sum_square),
    "argMin": _arg(np.argmin),
    "argMax": _arg(np.argmax),
    "cumulativeSum": cumulative_sum,
}

# one graph over both cores (compiler/split.py): reductions over axes other than the batch's
TRAITS: dict[str, KernelTraits] = with_batch({}, {
    op: batch_per_sample("axes" if op.startswith("reduce") else "axis") for op in KERNELS})
