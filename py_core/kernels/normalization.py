"""Normalization kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-batchnorm

batchNormalization is element-wise (float16 computed in float32, rounded once).  instance- and
layerNormalization reduce: they compute in float64, so the mean/variance sums and the x - mean cancellation
stay accurate for both float types, and round once at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from py_core.kernels import native
from py_core.kernels.common import wide_type
from py_core.kernels.traits import KernelTraits, batch_per_sample, with_batch

F32 = np.dtype(np.float32)


def _normalize(x: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    """(x - mean) / sqrt(variance + epsilon) over `axes`, with the two-pass (cancellation-free) variance."""
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=axes, keepdims=True)
    return centered / np.sqrt(variance + epsilon)


def _affine(y: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
            shape: Sequence[int]) -> np.ndarray:
    """y * scale + bias, with scale and bias reshaped to broadcast as `shape`."""
    if scale is not None:
        y = y * scale.astype(y.dtype).reshape(shape)
    if bias is not None:
        y = y + bias.astype(y.dtype).reshape(shape)
    return y


def batch_normalization(input: np.ndarray, mean: np.ndarray, variance: np.ndarray, scale: np.ndarray | None,
                        bias: np.ndarray | None, axis: int, epsilon: float) -> np.ndarray:
    """batchNormalization: scale * (x - mean) / sqrt(variance + epsilon) + bias along `axis`.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-batchnorm"""
    wide = wide_type(input.dtype)
    shape = [1] * input.ndim
    shape[axis] = input.shape[axis]
    x = input.astype(wide, copy=False)
    m, v = mean.astype(wide).reshape(shape), variance.astype(wide).reshape(shape)
    return _affine((x - m) / np.sqrt(v + epsilon), scale, bias, shape).astype(input.dtype, copy=False)


def instance_normalization(input: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
                           epsilon: float, layout: str) -> np.ndarray:
    """instanceNormalization: normalize each (batch, channel) over the spatial dimensions.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-instancenorm"""
    spatial, channel = ((2, 3), 1) if layout == "nchw" else ((1, 2), 3)
    shape = [1, 1, 1, 1]
    shape[channel] = input.shape[channel]
    y = _normalize(input.astype(np.float64), spatial, epsilon)
    return _affine(y, scale, bias, shape).astype(input.dtype)


def layer_normalization(input: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
                        axes: list[int], epsilon: float) -> np.ndarray:
    """layerNormalization over `axes`; scale and bias are laid out in the order of `axes`.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-layernorm"""
    rank, k = input.ndim, len(axes)
    if (k and input.dtype == F32 and native.available() and list(axes) == list(range(rank - k, rank))
            and (scale is None or scale.dtype == F32) and (bias is None or bias.dtype == F32)):
        # trailing axes in ascending order (what transformers use): rows of contiguous floats, the same float64
        # arithmetic in C (measured in Pyodide on [1, 32, 128]: 12 us in C, 0.2-0.4 ms in NumPy)
        n = math.prod(input.shape[rank - k:])
        if n > 0:
            return native.layer_norm(input, n, scale, bias, float(epsilon))
    y = _normalize(input.astype(np.float64), tuple(axes), epsilon)
    # scale/bias dims follow `axes` (e.g. [3, 1, 2]): transpose them to ascending axis order, then insert 1s
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    shape = [1] * input.ndim
    for a in axes:
        shape[a] = input.shape[a]
    scale = None if scale is None else np.transpose(scale, order)
    bias = None if bias is None else np.transpose(bias, order)
    return _affine(y, scale, bias, shape).astype(input.dtype)


KERNELS: dict[str, Callable[..., object]] = {
    "batchNormalization": batch_normalization,
    "instanceNormalization": instance_normalization,
    "layerNormalization": layer_normalization,
}


TRAITS: dict[str, KernelTraits] = {
    op: KernelTraits(fresh=True) for op in ("batchNormalization", "layerNormalization", "instanceNormalization")
}
# one graph over both cores (compiler/split.py): statistics per item (instance), or per channel (batch: not
# over axis 0), or over the named axes (layer)
TRAITS = with_batch(TRAITS, {"batchNormalization": batch_per_sample("axis"),
                             "instanceNormalization": batch_per_sample(),
                             "layerNormalization": batch_per_sample("axes")})
