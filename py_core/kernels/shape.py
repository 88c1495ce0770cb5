"""Shape and data-movement kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reshape-method

Options arrive validated and normalized by py_core/spec/shape.py (defaults filled in, pad value cast).
Data movement never changes values, so nothing is widened: every dtype, NaN and -0.0 pass through bit-exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from py_core.kernels.traits import (
    KernelTraits,
    Options,
    always,
    batch_concat,
    batch_elementwise,
    batch_pad,
    batch_per_sample,
    batch_reshape,
    batch_slice,
    batch_tile,
    batch_transpose,
    with_batch,
)
from py_core.types import DataType


def contiguous(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array (copied only if needed); unlike np.ascontiguousarray, keeps rank 0."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


def reshape(input: np.ndarray, newShape: list[int]) -> np.ndarray:
    """reshape.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reshape-method"""
    return np.reshape(input, newShape)


def transpose(input: np.ndarray, permutation: list[int]) -> np.ndarray:
    """transpose.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-transpose"""
    return contiguous(np.transpose(input, permutation))


def slice_(input: np.ndarray, starts: list[int], sizes: list[int], strides: list[int]) -> np.ndarray:
    """slice.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-slice"""
    index = tuple(slice(b, b + n, s) for b, n, s in zip(starts, sizes, strides, strict=True))
    return contiguous(input[index])


def pad(input: np.ndarray, beginningPadding: list[int], endingPadding: list[int], mode: str,
        value: int | float) -> np.ndarray:
    """pad.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pad"""
    widths = list(zip(beginningPadding, endingPadding, strict=True))
    if not widths:
        # a scalar (required rank 0 in the draft) has nothing to pad in any mode; np.pad rejects an empty width
        return input.copy()
    if mode == "constant":
        shape = tuple(d + b + e for d, (b, e) in zip(input.shape, widths, strict=True))
        # the value is cast once to the tensor's type (exact for integers, one rounding for floats)
        out = np.full(shape, np.array(value, dtype=input.dtype), dtype=input.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(input.shape, widths, strict=True))] = input
        return out
    # "reflection" mirrors without repeating the edge element, which is NumPy's "reflect"
    return np.pad(input, widths, mode="edge" if mode == "edge" else "reflect")


def concat(inputs: list[np.ndarray], axis: int) -> np.ndarray:
    """concat.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-concat"""
    return np.concatenate(inputs, axis=axis)


def split(input: np.ndarray, splits: int | list[int], axis: int) -> list[np.ndarray]:
    """split.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-split"""
    sections = splits if isinstance(splits, int) else np.cumsum(splits)[:-1]
    return [contiguous(part) for part in np.split(input, sections, axis=axis)]


def expand(input: np.ndarray, newShape: list[int]) -> np.ndarray:
    """expand.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-expand"""
    return np.array(np.broadcast_to(input, tuple(newShape)))  # materialized: broadcast views are read-only


def tile(input: np.ndarray, repetitions: list[int]) -> np.ndarray:
    """tile.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-tile"""
    return np.tile(input, repetitions) if repetitions else input.copy()


def reverse(input: np.ndarray, axes: list[int]) -> np.ndarray:
    """reverse.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reverse-method"""
    return contiguous(np.flip(input, axis=tuple(axes)))


def triangular(input: np.ndarray, upper: bool, diagonal: int) -> np.ndarray:
    """triangular over the last two dimensions.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-triangular"""
    rows, cols = input.shape[-2:]
    ones = np.ones((rows, cols), dtype=bool)
    keep = np.triu(ones, diagonal) if upper else np.tril(ones, diagonal)
    # select rather than multiply, so NaN/inf outside the triangle become exactly 0
    return np.where(keep, input, np.zeros((), dtype=input.dtype))


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    # Out-of-range float -> int is implementation-defined in the spec: truncate toward zero, saturate to the
    # target range and map NaN to 0 (what saturating native casts do).  float16/float32 values are exact in
    # float64, so the bounds below (powers of two) compare exactly, even for int64/uint64 targets.
    t = np.trunc(x.astype(np.float64))
    info = np.iinfo(dtype)
    lo, hi_excl = float(info.min), float(info.max) + 1.0  # both are exact powers of two (or 0)
    inside = (t >= lo) & (t < hi_excl)
    out = np.where(inside, t, 0.0).astype(dtype)
    out[t >= hi_excl] = info.max
    out[t < lo] = info.min
    return out


def cast(input: np.ndarray, dataType: DataType | str) -> np.ndarray:
    """cast.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-cast"""
    dtype = np.dtype(DataType.parse(dataType).numpy_name)
    if input.dtype.kind == "f" and dtype.kind in "iu":
        return _float_to_int(input, dtype)
    # float -> float rounds to nearest (overflow -> inf); int -> float rounds to nearest in one step;
    # int -> int keeps the low bits (two's complement wrap), which is what the spec specifies
    return input.astype(dtype)


def where(condition: np.ndarray, trueValue: np.ndarray, falseValue: np.ndarray) -> np.ndarray:
    """where: non-zero condition selects trueValue.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-where"""
    return np.where(condition != 0, trueValue, falseValue)


KERNELS: dict[str, Callable[..., object]] = {
    "reshape": reshape,
    "transpose": transpose,
    "slice": slice_,
    "pad": pad,
    "concat": concat,
    "split": split,
    "expand": expand,
    "tile": tile,
    "reverse": reverse,
    "triangular": triangular,
    "cast": cast,
    "where": where,
}


def _compose_transposes(first: Options, second: Options) -> Options:
    p1, p2 = first["permutation"], second["permutation"]
    return {**second, "permutation": [p1[i] for i in p2]}


# no-op conditions hold when the output already has the input's shape and type (the pass checks that)
TRAITS: dict[str, KernelTraits] = {
    "reshape": KernelTraits(noop=always, merge=lambda first, second: second),
    "cast": KernelTraits(noop=always),
    "expand": KernelTraits(noop=always),
    "transpose": KernelTraits(noop=lambda o: list(o["permutation"]) == list(range(len(o["permutation"]))),
                              merge=_compose_transposes, permutation=lambda o: o["permutation"]),
    "slice": KernelTraits(noop=lambda o: all(s == 1 for s in o["strides"]) and not any(o["starts"])),
    "pad": KernelTraits(noop=lambda o: not any(o["beginningPadding"]) and not any(o["endingPadding"])),
    "tile": KernelTraits(noop=lambda o: all(r == 1 for r in o["repetitions"])),
    "concat": KernelTraits(fresh=True),
}
# one graph over both cores (compiler/split.py); expand, reverse, triangular and the rest never split
TRAITS = with_batch(TRAITS, {"reshape": batch_reshape, "transpose": batch_transpose, "slice": batch_slice,
                             "pad": batch_pad, "tile": batch_tile, "concat": batch_concat,
                             "split": batch_per_sample("axis"), "cast": batch_elementwise,
                             "where": batch_elementwise})
