"""Helpers shared by the kernels: float16 widening and element-wise wrappers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

NumpyFn = Callable[..., np.ndarray]


def wide_type(dtype: np.dtype) -> np.dtype:
    """The type a kernel computes in: float16 is widened to float32 and rounded once at the end."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def unary(fn: NumpyFn) -> Callable[..., np.ndarray]:
    """Element-wise kernel from a NumPy function; float16 computes in float32, rounds once."""

    def kernel(input: np.ndarray) -> np.ndarray:
        x = input.astype(wide_type(input.dtype), copy=False)
        return np.asarray(fn(x)).astype(input.dtype, copy=False)

    kernel.__name__ = getattr(fn, "__name__", "unary")
    return kernel


def binary(fn: NumpyFn) -> Callable[..., np.ndarray]:
    """Broadcasting element-wise kernel; float16 computes in float32, rounds once."""

    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        wide = wide_type(a.dtype)
        return np.asarray(fn(a.astype(wide, copy=False), b.astype(wide, copy=False))).astype(a.dtype, copy=False)

    kernel.__name__ = getattr(fn, "__name__", "binary")
    return kernel
