"""Element-wise binary, comparison, logical and unary kernels (NumPy).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_core.kernels.common import binary


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        # integer division truncates toward zero (C semantics), unlike NumPy's floor division
        q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
        return np.where((a < 0) != (b < 0), -q, q) if a.dtype.kind == "i" else q
    return np.divide(a, b)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        # NumPy refuses negative integer exponents; the spec leaves them implementation-defined: use floats
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.power(a, b)


KERNELS: dict[str, Callable[..., object]] = {
    "add": binary(np.add),
    "sub": binary(np.subtract),
    "mul": binary(np.multiply),
    "div": binary(_div),
    "max": binary(np.maximum),
    "min": binary(np.minimum),
    "pow": binary(_pow),
}
