"""NumPy kernels, one module per spec family; file names mirror py_core/spec/ one to one."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from py_core.spec import FAMILY_NAMES

KERNELS: dict[str, Callable[..., object]] = {}
for _name in FAMILY_NAMES:
    for _op, _fn in importlib.import_module(f"py_core.kernels.{_name}").KERNELS.items():
        if _op in KERNELS:
            raise AssertionError(f"duplicate kernel {_op}")
        KERNELS[_op] = _fn

__all__ = ["KERNELS"]
