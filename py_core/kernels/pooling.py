"""averagePool2d, l2Pool2d, maxPool2d and resample2d kernels (NumPy): one pass per window tap
that lands inside the input, one axis at a time.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pool2d"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from py_core.kernels import native
from py_core.kernels.common import wide_type
from py_core.kernels.convolution import from_nhwc, to_nhwc
from py_core.kernels.matrix import matmul2d
from py_core.kernels.traits import KernelTraits, batch_per_sample, with_batch
from py_core.kernels.window import Span, spans


def _reduce_axis(x: np.ndarray, axis: int, taps: list[Span], size: int, kind: str, fill: float | int,
                 dtype: np.dtype) -> np.ndarray:
    """One axis of a pooling window: `size` outputs, each the max or sum of the input slices its taps read."""
    shape = list(x.shape)
    shape[axis] = size
    acc = np.full(shape, fill, dtype=dtype)
    for sp in taps:
        dst: list[slice] = [slice(None)] * x.ndim
        src: list[slice] = [slice(None)] * x.ndim
        dst[axis], src[axis] = sp.a, sp.b
        view = acc[tuple(dst)]
        if kind == "max":
            np.maximum(view, x[tuple(src)], out=view)  # propagates NaN
        else:
            view += x[tuple(src)]
    return acc


def _pool(kind: str, input: np.ndarray, windowDimensions: Sequence[int], padding: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int], layout: str,
          outputSizes: Sequence[int]) -> np.ndarray:
    x = to_nhwc(input, layout)
    n, h, w, c = x.shape
    (kh, kw), (oh, ow) = windowDimensions, outputSizes
    top, _, left, _ = padding
    # max is exact in the input's own type; sums (average, L2) accumulate float16 in float32, round once
    dtype = input.dtype if kind == "max" else wide_type(input.dtype)
    if (kh, kw, oh, ow) == (h, w, 1, 1) and not any(padding):
        # global pooling: one reduction over the spatial axes (pairwise summation)
        if kind == "max":
            acc = x.max(axis=(1, 2), keepdims=True)
        elif kind == "average" and input.dtype == np.float32 and native.available():
            return _global_mean_native(input, layout)
        elif kind == "average":
            acc = x.mean(axis=(1, 2), keepdims=True, dtype=dtype)
        else:
            xw = x.astype(dtype, copy=False)
            acc = np.sqrt((xw * xw).sum(axis=(1, 2), keepdims=True))
        return from_nhwc(acc, layout, input.dtype)
    # only taps landing inside the input are read: padding (and windows sliding past it under ceil rounding
    # or outputSizes) is never materialised, whatever its size
    rows = spans(h, kh, -top, strides[0], dilations[0], 0, oh)
    cols = spans(w, kw, -left, strides[1], dilations[1], 0, ow)
    if kind == "max":
        # padding never wins a max: -inf (or the type's minimum), also the result of an all-padding window
        fill: float | int = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    else:
        fill = 0
    # in the input's own layout: pools are per channel, so no transposing copy on the way in or out
    xl = input
    if kind == "l2":
        xw = input.astype(dtype)
        xl = xw * xw
    h_axis, w_axis = (2, 3) if layout == "nchw" else (1, 2)
    # the window is a product of its two axes: reduce one axis, then the other, the smaller intermediate first
    if oh * w <= h * ow:
        acc = _reduce_axis(_reduce_axis(xl, h_axis, rows, oh, kind, fill, dtype), w_axis, cols, ow, kind, fill,
                           dtype)
    else:
        acc = _reduce_axis(_reduce_axis(xl, w_axis, cols, ow, kind, fill, dtype), h_axis, rows, oh, kind, fill,
                           dtype)
    if kind == "average":
        # the average excludes padding (and anything past the input) from the count, as WPT expects;
        # an all-padding window averages to 0 rather than 0/0
        count = np.maximum(np.outer(_tap_counts(rows, oh), _tap_counts(cols, ow)), 1).astype(dtype)
        acc /= count if layout == "nchw" else count[:, :, None]
    elif kind == "l2":
        np.sqrt(acc, out=acc)
    return acc.astype(input.dtype, copy=False)


def _tap_counts(taps: list[Span], size: int) -> np.ndarray:
    """For each output position along one axis: how many of its window taps fall inside the input."""
    count = np.zeros(size, dtype=np.int64)
    for sp in taps:
        count[sp.a] += 1
    return count


def _global_mean_native(x: np.ndarray, layout: str) -> np.ndarray:
    """Global average pooling as products with a ones vector (the C SIMD product): NumPy's reduction over the
    two spatial axes of NHWC loops over rows as short as C (measured 0.5 ms at 128x128x16 in Pyodide)."""
    x = np.ascontiguousarray(x)
    if layout == "nhwc":
        n, h, w, c = x.shape
        ones = np.ones((1, h * w), np.float32)
        sums = np.stack([matmul2d(ones, x[b].reshape(h * w, c)) for b in range(n)]).reshape(n, 1, 1, c)
    else:
        n, c, h, w = x.shape
        sums = matmul2d(x.reshape(n * c, h * w), np.ones((h * w, 1), np.float32)).reshape(n, c, 1, 1)
    return np.divide(sums, np.float32(h * w), dtype=np.float32)


def _pool_kernel(kind: str) -> Callable[..., np.ndarray]:
    def kernel(input: np.ndarray, outputShapeRounding: str = "floor", **options: object) -> np.ndarray:
        return _pool(kind, input, **options)  # type: ignore[arg-type]

    kernel.__name__ = f"{kind}_pool2d"
    kernel.__doc__ = f"{kind}Pool2d.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pool2d-{kind}"
    return kernel


def _source_nearest(in_size: int, out_size: int) -> np.ndarray:
    """nearest-neighbor sources: ceil(clamp((o + 0.5) / scale - 0.5, 0, in - 1) - 0.5), scale = out / in."""
    o = np.arange(out_size, dtype=np.int64)
    # exact rational arithmetic: ceil(((2o + 1) * in - 2 * out) / (2 * out)), so ties round down as specified
    num = (2 * o + 1) * in_size - 2 * out_size
    # intp: NumPy's take refuses int64 indices where intp is int32 (wasm32, Pyodide)
    return np.clip(-(-num // (2 * out_size)), 0, in_size - 1).astype(np.intp)


def _source_linear(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """linear: the two source indices and the weight of the upper one, per output coordinate."""
    o = np.arange(out_size, dtype=np.int64)
    # (o + 0.5) * in / out - 0.5, formed exactly in integers and divided once in float64
    coord = np.clip(((2 * o + 1) * in_size - out_size) / (2.0 * out_size), 0, in_size - 1)
    lo = np.floor(coord)
    return lo.astype(np.intp), np.ceil(coord).astype(np.intp), coord - lo


@functools.lru_cache(maxsize=64)
def linear_tables(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For the C bilinear kernel: the two source indices (int32) and their float32 weights 1 - t and t per output
    coordinate, as the NumPy blend below forms them.  Cached: a graph resamples the same sizes on every run."""
    lo, hi, t = _source_linear(in_size, out_size)
    tw = t.astype(np.float32)
    tables = (lo.astype(np.int32), hi.astype(np.int32), (1 - tw).astype(np.float32), tw)
    for a in tables:
        a.setflags(write=False)
    return tables


def resample2d(input: np.ndarray, *, mode: str, sizes: Sequence[int], axes: Sequence[int],
               scales: Sequence[float] = ()) -> np.ndarray:
    """resample2d: half-pixel nearest-neighbor or bilinear resampling along two axes.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-resample2d-method"""
    # interpolate float16 in float32, round once; nearest-neighbor only copies values
    x = input if mode == "nearest-neighbor" else input.astype(wide_type(input.dtype), copy=False)
    h_axis, w_axis = axes
    if (mode == "linear" and x.dtype == np.float32 and native.available() and w_axis == h_axis + 1
            and x.shape[h_axis] != sizes[0] and x.shape[w_axis] != sizes[1]
            and native.resample_fits(x.shape[h_axis:w_axis + 1])):  # its int32 source tables
        # the C kernel does the same separable blend in the same order (bit-identical), in one pass
        y = native.resample_linear(np.ascontiguousarray(x), h_axis, linear_tables(x.shape[h_axis], sizes[0]),
                                   linear_tables(x.shape[w_axis], sizes[1]))
        return y.astype(input.dtype, copy=False)
    order = list(zip(axes, sizes, strict=True))
    first_out = x.size // x.shape[h_axis] * sizes[0]  # the intermediate after resampling the first axis
    if first_out > max(x.size, x.size // x.shape[h_axis] // x.shape[w_axis] * sizes[0] * sizes[1]):
        # the other order's intermediate is at most sqrt(input x output) elements: memory stays bounded by the
        # larger of the two (linear rounds in another order here, within tolerance; real resizes keep the
        # spec's order)
        order.reverse()
    for axis, out_size in order:
        in_size = x.shape[axis]
        if in_size == out_size:
            continue  # scale 1 samples every input coordinate exactly, in both modes
        if mode == "nearest-neighbor":
            x = x.take(_source_nearest(in_size, out_size), axis=axis)
        else:
            lo, hi, t = _source_linear(in_size, out_size)
            shape = [1] * x.ndim
            shape[axis] = out_size
            tw = t.astype(x.dtype).reshape(shape)
            # separable bilinear: along the first axis, then the second (the spec's vy0/vy1 blend)
            x = x.take(lo, axis=axis) * (1 - tw) + x.take(hi, axis=axis) * tw
    return np.ascontiguousarray(x, dtype=input.dtype)


KERNELS: dict[str, Callable[..., object]] = {
    "averagePool2d": _pool_kernel("average"),
    "l2Pool2d": _pool_kernel("l2"),
    "maxPool2d": _pool_kernel("max"),
    "resample2d": resample2d,
}


# Pools run in the input's own layout (no transposing copy) and are faster channels-last: median ms per run in
# Pyodide under Node, nchw / nhwc, two runs each (node scripts/bench_layouts.mjs; shared 2-core machine):
#   maxPool2d 3x3 s2 56x56x64 2.59-3.76 / 2.40-2.60    (at 112x112x64 the noise, 10-27 ms, exceeds the gap)
#   averagePool2d 3x3 s1 28x28x192 1.47-1.51 / 0.79-0.84   global 7x7x1280 0.09-0.11 / 0.08-0.09
#   l2Pool2d 3x3 s1 28x28x64 0.55-0.56 / 0.35
TRAITS: dict[str, KernelTraits] = {
    op: KernelTraits(fresh=True, layouts=("nhwc", "nchw"), layout_option="layout")
    for op in ("averagePool2d", "maxPool2d", "l2Pool2d")
}
# one graph over both cores (compiler/split.py)
TRAITS = with_batch(TRAITS, {**{op: batch_per_sample() for op in TRAITS}, "resample2d": batch_per_sample("axes")})
