"""NumPy kernels, one module per spec family; file names mirror py_core/spec/ one to one."""

from __future__ import annotations

from collections.abc import Callable

from py_core.kernels import (
    activation,
    convolution,
    elementwise,
    gather,
    matrix,
    normalization,
    pooling,
    quantization,
    recurrent,
    reduction,
    shape,
)

KERNELS: dict[str, Callable[..., object]] = {}
for _family in (elementwise, activation, reduction, normalization, convolution, pooling, matrix, shape,
                gather, recurrent, quantization):
    for _name, _fn in _family.KERNELS.items():
        if _name in KERNELS:
            raise AssertionError(f"duplicate kernel {_name}")
        KERNELS[_name] = _fn

__all__ = ["KERNELS"]
