"""Gather and scatter kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gather

Indices may be int32, uint32 or int64.  A negative index counts from the end of its dimension; an index
still outside [0, size) is clamped to the nearest end (the spec's "clamping behavior", and what the WPT
vectors expect: -10 on a dimension of 2 selects element 0).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_core.kernels.shape import contiguous
from py_core.kernels.traits import KernelTraits, batch_per_sample, with_batch


def _normalize(indices: np.ndarray, size: int | np.ndarray) -> np.ndarray:
    """Wrap negative indices once, then clamp into [0, size - 1].

    Computed in int64, which holds every index type exactly, then returned as intp: NumPy indexes with intp,
    which is int32 on wasm32 (Pyodide) and refuses an int64 index array there; clamped indices always fit."""
    idx = indices.astype(np.int64)
    size = np.asarray(size, dtype=np.int64)
    idx = np.where(idx < 0, idx + size, idx)  # idx + size cannot overflow where idx < 0
    return np.asarray(np.clip(idx, 0, size - 1)).astype(np.intp)


def gather(input: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """gather.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gather"""
    return np.take(input, _normalize(indices, input.shape[axis]), axis=axis)


def gather_elements(input: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """gatherElements.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gatherelements"""
    return np.take_along_axis(input, _normalize(indices, input.shape[axis]), axis=axis)


def _coordinates(input: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split [..., k] coordinate tuples into k normalized index arrays, one per leading input dimension."""
    k = indices.shape[-1]
    idx = _normalize(indices, np.array(input.shape[:k], dtype=np.int64))
    return tuple(idx[..., j] for j in range(k))


def gather_nd(input: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """gatherND.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gathernd"""
    return contiguous(input[_coordinates(input, indices)])


def scatter_elements(input: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int) -> np.ndarray:
    """scatterElements.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-scatterelements"""
    out = input.copy()
    # duplicate indices are unspecified by the spec: NumPy's assignment keeps the last update
    np.put_along_axis(out, _normalize(indices, input.shape[axis]), updates, axis=axis)
    return out


def scatter_nd(input: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """scatterND.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-scatternd"""
    out = input.copy()
    out[_coordinates(input, indices)] = updates  # duplicates: last update wins, as above
    return out


KERNELS: dict[str, Callable[..., object]] = {
    "gather": gather,
    "gatherElements": gather_elements,
    "gatherND": gather_nd,
    "scatterElements": scatter_elements,
    "scatterND": scatter_nd,
}

# one graph over both cores (compiler/split.py): gather along another axis than 0, with indices of its own
TRAITS: dict[str, KernelTraits] = with_batch({}, {"gather": batch_per_sample("axis")})
