"""NumPy kernels, one module per spec family; file names mirror py_core/spec/ one to one.

Each family module exports `KERNELS` (operator -> reference kernel) and may export `TRAITS` (operator ->
KernelTraits: what the compiler may do with it, py_core/kernels/traits.py); `traits(op)` looks one up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from py_core.kernels.traits import NO_TRAITS, KernelTraits
from py_core.spec import FAMILY_NAMES

KERNELS: dict[str, Callable[..., object]] = {}
TRAITS: dict[str, KernelTraits] = {}
for _name in FAMILY_NAMES:
    _module = importlib.import_module(f"py_core.kernels.{_name}")
    for _op, _fn in _module.KERNELS.items():
        if _op in KERNELS:
            raise AssertionError(f"duplicate kernel {_op}")
        KERNELS[_op] = _fn
    for _op, _traits in getattr(_module, "TRAITS", {}).items():
        if _op not in _module.KERNELS:
            raise AssertionError(f"traits for {_op}, which has no kernel in py_core.kernels.{_name}")
        TRAITS[_op] = _traits


def traits(op: str) -> KernelTraits:
    """The traits registered with `op`'s kernel (NO_TRAITS when none are)."""
    return TRAITS.get(op, NO_TRAITS)


def preferred_layout() -> str:
    """The input layout most layout-taking operators run fastest in (the first of their `layouts` trait; ties
    to the alphabetically first): opSupportLimits().preferredInputLayout (py_core/bridge/limits.py)."""
    firsts = [t.layouts[0] for t in TRAITS.values() if t.layouts]
    return max(sorted(set(firsts)), key=firsts.count) if firsts else "nchw"


__all__ = ["KERNELS", "TRAITS", "preferred_layout", "traits"]
