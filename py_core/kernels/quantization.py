"""quantizeLinear and dequantizeLinear kernels (NumPy).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-quantizelinear

scale/zeroPoint are blockwise broadcast without materializing them: the input is viewed as
(s0, b0, s1, b1, ...) with s the scale's shape and b the block sizes, and the scale as (s0, 1, s1, 1, ...).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _blocked(shape: tuple[int, ...], block_of: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The interleaved (s, b) shape of the input and the (s, 1) shape of scale/zeroPoint."""
    data: list[int] = []
    params: list[int] = []
    for size, s in zip(shape, block_of, strict=True):
        data += [s, size // s]
        params += [s, 1]
    return tuple(data), tuple(params)


def quantize_linear(input: np.ndarray, scale: np.ndarray, zeroPoint: np.ndarray) -> np.ndarray:
    """saturate(roundEven(input / scale) + zeroPoint).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-quantizelinear"""
    data_shape, param_shape = _blocked(input.shape, scale.shape)
    # divide in float64 like the WPT baseline; float32 backends differ only at exact .5 ties (WPT allows 1)
    q = np.rint(input.astype(np.float64).reshape(data_shape) / scale.astype(np.float64).reshape(param_shape))
    # zero points (at most 32-bit) are exact in float64, and so is the clamp to the output range
    q = q + zeroPoint.astype(np.float64).reshape(param_shape)
    info = np.iinfo(zeroPoint.dtype)
    q = np.clip(q, info.min, info.max)
    # NaN (0 / 0, NaN input) casts to 0 as the spec's ConvertToInt does; +-inf saturated above
    q = np.where(np.isnan(q), 0.0, q)
    return q.astype(zeroPoint.dtype).reshape(input.shape)


def dequantize_linear(input: np.ndarray, scale: np.ndarray, zeroPoint: np.ndarray) -> np.ndarray:
    """(input - zeroPoint) * scale.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-dequantizelinear"""
    data_shape, param_shape = _blocked(input.shape, scale.shape)
    # the difference of two (u)int32 values is exact in int64; multiply in float64, round once to scale's type
    diff = input.astype(np.int64).reshape(data_shape) - zeroPoint.astype(np.int64).reshape(param_shape)
    out = diff.astype(np.float64) * scale.astype(np.float64).reshape(param_shape)
    return out.astype(scale.dtype).reshape(input.shape)


KERNELS: dict[str, Callable[..., object]] = {
    "quantizeLinear": quantize_linear,
    "dequantizeLinear": dequantize_linear,
}
