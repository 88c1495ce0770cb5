"""conv2d and convTranspose2d kernels (NumPy): shifted slices (im2col) and one matrix product.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from py_core.kernels.common import wide_type
from py_core.kernels.matrix import matmul2d

# Filter transposes to one internal layout per operator.
_CONV2D_TO_HWIO = {"oihw": (2, 3, 1, 0), "hwio": (0, 1, 2, 3), "ohwi": (1, 2, 3, 0), "ihwo": (1, 2, 0, 3)}
_CONV_TRANSPOSE2D_TO_IHWO = {"iohw": (0, 2, 3, 1), "hwoi": (3, 0, 1, 2), "ohwi": (3, 1, 2, 0)}


def to_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of a 4-D tensor in channels-last order."""
    return x.transpose(0, 2, 3, 1) if layout == "nchw" else x


def from_nhwc(y: np.ndarray, layout: str, dtype: np.dtype) -> np.ndarray:
    """A channels-last result in `layout`, as a contiguous array of `dtype` (the single final rounding)."""
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2) if layout == "nchw" else y, dtype=dtype)


def pad_nhwc(x: np.ndarray, padding: Sequence[int], dtype: np.dtype, fill: float | int = 0) -> np.ndarray:
    """x (channels-last) cast to dtype with [top, bottom, left, right] rows/columns of `fill` around it."""
    top, bottom, left, right = padding
    if not (top or bottom or left or right):
        return x.astype(dtype, copy=False)
    n, h, w, c = x.shape
    out = np.full((n, h + top + bottom, w + left + right, c), fill, dtype=dtype)
    out[:, top:top + h, left:left + w, :] = x
    return out


def window_taps(xp: np.ndarray, window: Sequence[int], out_size: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int]) -> Iterator[tuple[int, int, np.ndarray]]:
    """For each window tap (i, j): the strided view of padded channels-last xp it reads, [N, OH, OW, C]."""
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = window, out_size, strides, dilations
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw, :]


def conv2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None = None, *,
           padding: Sequence[int], strides: Sequence[int], dilations: Sequence[int], groups: int,
           inputLayout: str, filterLayout: str) -> np.ndarray:
    """conv2d: grouped, dilated, strided 2-D convolution.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""
    # float16 is multiplied and accumulated in float32, then rounded once
    wide = wide_type(input.dtype)
    xp = pad_nhwc(to_nhwc(input, inputLayout), padding, wide)
    w = filter.transpose(_CONV2D_TO_HWIO[filterLayout]).astype(wide)  # [KH, KW, C/groups, O]
    kh, kw, cg, o = w.shape
    n, hp, wp, c = xp.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = (hp - (kh - 1) * dh - 1) // sh + 1, (wp - (kw - 1) * dw - 1) // sw + 1
    m, og = n * oh * ow, o // groups
    taps = window_taps(xp, (kh, kw), (oh, ow), strides, dilations)
    if groups == 1:
        # im2col: every tap's [M, C] slab side by side, then one [M, KH*KW*C] x [KH*KW*C, O] product
        if kh * kw == 1:
            cols = next(taps)[2].reshape(m, c)
        else:
            cols5 = np.empty((n, oh, ow, kh * kw, c), dtype=wide)
            for i, j, tap in taps:
                cols5[:, :, :, i * kw + j, :] = tap
            cols = cols5.reshape(m, kh * kw * c)
        out = matmul2d(cols, w.reshape(kh * kw * c, o))
    elif cg == 1:
        # depthwise (one input channel per group): per-tap multiply-adds, no product needed
        wd = w.reshape(kh, kw, groups, og)
        acc = tmp = None
        for i, j, tap in taps:
            if acc is None:
                acc = tap[..., None] * wd[i, j]
                tmp = np.empty_like(acc)
            else:  # in place: no temporary per tap
                np.multiply(tap[..., None], wd[i, j], out=tmp)
                acc += tmp
        assert acc is not None
        out = acc.reshape(m, o)
    else:
        # grouped: im2col once, one product per group
        colsg = np.empty((m, kh * kw, groups, cg), dtype=wide)
        for i, j, tap in taps:
            colsg[:, i * kw + j] = tap.reshape(m, groups, cg)
        out = np.empty((m, o), dtype=wide)
        for g in range(groups):
            wg = w[:, :, :, g * og:(g + 1) * og].reshape(kh * kw * cg, og)
            out[:, g * og:(g + 1) * og] = matmul2d(colsg[:, :, g, :].reshape(m, kh * kw * cg), wg)
    if bias is not None:
        out = out + bias.astype(wide, copy=False)
    return from_nhwc(out.reshape(n, oh, ow, o), inputLayout, input.dtype)


def conv_transpose2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None = None, *,
                     padding: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                     outputPadding: Sequence[int], outputSizes: Sequence[int], groups: int,
                     inputLayout: str, filterLayout: str) -> np.ndarray:
    """convTranspose2d: the gradient of conv2d with respect to its input, scattered tap by tap.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-convtranspose2d"""
    wide = wide_type(input.dtype)
    x = to_nhwc(input, inputLayout).astype(wide, copy=False)
    w = filter.transpose(_CONV_TRANSPOSE2D_TO_IHWO[filterLayout]).astype(wide)  # [C, KH, KW, O/groups]
    n, h, wd, c = x.shape
    _, kh, kw, og = w.shape
    if c % groups:
        # validation accepts this (WPT builds it), but no grouping of the input channels is defined for it
        raise ValueError(f"input channels ({c}) are not divisible by groups ({groups}): no defined result")
    cg, o, m = c // groups, og * groups, n * h * wd
    x2 = x.reshape(m, c)
    # every input pixel times every filter tap: [M, KH, KW, groups, O/groups] from one product per group
    if groups == 1:
        cols = matmul2d(x2, w.reshape(c, kh * kw * og))
    elif cg == 1:
        cols = x2[:, None, None, :, None] * w.transpose(1, 2, 0, 3)[None]
    else:
        cols = np.empty((m, kh, kw, groups, og), dtype=wide)
        for g in range(groups):
            wg = w[g * cg:(g + 1) * cg].reshape(cg, kh * kw * og)
            cols[:, :, :, g, :] = matmul2d(x2[:, g * cg:(g + 1) * cg], wg).reshape(m, kh, kw, og)
    cols = cols.reshape(n, h, wd, kh, kw, o)
    (sh, sw), (dh, dw) = strides, dilations
    top, _, left, _ = padding
    oh, ow = outputSizes
    full_h, full_w = (h - 1) * sh + (kh - 1) * dh + 1, (wd - 1) * sw + (kw - 1) * dw + 1
    # the un-cropped result; rows/columns past it (outputPadding, outputSizes) receive no tap: bias only
    y = np.zeros((n, max(full_h, top + oh), max(full_w, left + ow), o), dtype=wide)
    for i, j, view in window_taps(y, (kh, kw), (h, wd), strides, dilations):
        view += cols[:, :, :, i, j]
    out = y[:, top:top + oh, left:left + ow, :]
    if bias is not None:
        out = out + bias.astype(wide, copy=False)
    return from_nhwc(out, inputLayout, input.dtype)


KERNELS: dict[str, Callable[..., object]] = {
    "conv2d": conv2d,
    "convTranspose2d": conv_transpose2d,
}
