"""conv2d and convTranspose2d kernels (NumPy): shifted slices (im2col) and one matrix product; only the taps
that land inside the input (conv2d) or the output (convTranspose2d) are touched (py_core.kernels.window).
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from py_core.errors import OperationError
from py_core.kernels.common import wide_type
from py_core.kernels.matrix import matmul2d
from py_core.kernels.traits import KernelTraits, Options, Packed, PackSite, Shape, batch_per_sample, with_batch
from py_core.kernels.window import out_size, spans, tiles

# Filter transposes to one internal layout per operator.
_CONV2D_TO_HWIO = {"oihw": (2, 3, 1, 0), "hwio": (0, 1, 2, 3), "ohwi": (1, 2, 3, 0), "ihwo": (1, 2, 0, 3)}
_CONV_TRANSPOSE2D_TO_IHWO = {"iohw": (0, 2, 3, 1), "hwoi": (3, 0, 1, 2), "ohwi": (3, 1, 2, 0)}


def to_nhwc(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of a 4-D tensor in channels-last order."""
    return x.transpose(0, 2, 3, 1) if layout == "nchw" else x


def from_nhwc(y: np.ndarray, layout: str, dtype: np.dtype) -> np.ndarray:
    """A channels-last result in `layout`, as a contiguous array of `dtype` (the single final rounding)."""
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2) if layout == "nchw" else y, dtype=dtype)


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, *, padding: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int], groups: int, out_hw: Sequence[int], wide: np.dtype) -> np.ndarray:
    """conv2d of a channels-last input with an [KH, KW, C/groups, O] filter: the [N, OH, OW, O] sums in `wide`.
    Only taps landing inside the input are read (no padded copy); im2col columns are built tile by tile."""
    kh, kw, cg, o = w.shape
    x = np.ascontiguousarray(x, dtype=wide)  # one copy (as the padded copy was): every tap then reads rows of C
    n, h, wd, c = x.shape
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    top, _, left, _ = padding
    og, k = o // groups, kh * kw
    if groups > 1 and cg == 1:
        # depthwise (one input channel per group): per-tap multiply-adds into an output-sized accumulator
        wdw = w.reshape(kh, kw, groups, og)
        acc = np.empty((n, oh, ow, groups, og), dtype=wide)
        tmp = np.empty_like(acc)
        pairs = [(r, s) for r in spans(h, kh, -top, sh, dh, 0, oh) for s in spans(wd, kw, -left, sw, dw, 0, ow)]
        full = [r.a == slice(0, oh) and s.a == slice(0, ow) for r, s in pairs]
        # a tap every output reads goes first (the centre one under "same" padding) and initialises acc;
        # without one, acc starts at zero (taps in the padding add nothing)
        first = full.index(True) if True in full else None
        if first is None:
            acc.fill(0)
        else:
            r, s = pairs.pop(first)
            np.multiply(x[:, r.b, s.b, :, None], wdw[r.tap, s.tap], out=acc)
        for r, s in pairs:
            t = tmp[:, r.a, s.a]
            np.multiply(x[:, r.b, s.b, :, None], wdw[r.tap, s.tap], out=t)
            acc[:, r.a, s.a] += t
        return acc.reshape(n, oh, ow, o)
    y = np.empty((n, oh, ow, o), dtype=wide)
    w2 = w.reshape(k * cg, o) if groups == 1 else None
    buffer = None  # one im2col buffer for every tile: the next tile never allocates beside the last
    for r0, r1, c0, c1 in tiles(oh, ow, n * k * c * wide.itemsize):
        rows, cols_ = spans(h, kh, -top, sh, dh, r0, r1), spans(wd, kw, -left, sw, dw, c0, c1)
        th, tw = r1 - r0, c1 - c0
        if buffer is None:
            buffer = np.empty(n * th * tw * k * c, dtype=wide)
        # im2col: every tap's [N, OH, OW, C] slab side by side; taps that fall in padding read zero
        cols5 = buffer[:n * th * tw * k * c].reshape(n, th, tw, k, c)
        covered = (len(rows) == kh and len(cols_) == kw and all(sp.a == slice(0, th) for sp in rows)
                   and all(sp.a == slice(0, tw) for sp in cols_))
        if not covered:
            cols5.fill(0)
        for r in rows:
            for s in cols_:
                cols5[:, r.a, s.a, r.tap * kw + s.tap, :] = x[:, r.b, s.b, :]
        m = n * th * tw
        if w2 is not None:
            y[:, r0:r1, c0:c1] = matmul2d(cols5.reshape(m, k * c), w2).reshape(n, th, tw, o)
            continue
        # grouped: one product per group
        colsg = cols5.reshape(m, k, groups, cg)
        for g in range(groups):
            wg = w[:, :, :, g * og:(g + 1) * og].reshape(k * cg, og)
            yg = matmul2d(colsg[:, :, g, :].reshape(m, k * cg), wg)
            y[:, r0:r1, c0:c1, g * og:(g + 1) * og] = yg.reshape(n, th, tw, og)
    return y


def conv2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None = None, *,
           padding: Sequence[int], strides: Sequence[int], dilations: Sequence[int], groups: int,
           inputLayout: str, filterLayout: str) -> np.ndarray:
    """conv2d: grouped, dilated, strided 2-D convolution.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""
    # float16 is multiplied and accumulated in float32, then rounded once
    wide = wide_type(input.dtype)
    x = to_nhwc(input, inputLayout)
    w = filter.transpose(_CONV2D_TO_HWIO[filterLayout]).astype(wide)  # [KH, KW, C/groups, O]
    kh, kw, _, o = w.shape
    n, h, wd, _ = x.shape
    top, bottom, left, right = padding
    out_hw = (out_size(h, kh, top, bottom, strides[0], dilations[0]),
              out_size(wd, kw, left, right, strides[1], dilations[1]))
    out = conv2d_nhwc(x, w, padding=padding, strides=strides, dilations=dilations, groups=groups, out_hw=out_hw,
                      wide=wide)
    if bias is not None:
        out += bias.astype(wide, copy=False)
    return from_nhwc(out, inputLayout, input.dtype)


def conv_transpose2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None = None, *,
                     padding: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                     outputPadding: Sequence[int], outputSizes: Sequence[int], groups: int,
                     inputLayout: str, filterLayout: str) -> np.ndarray:
    """convTranspose2d: the gradient of conv2d with respect to its input, scattered tap by tap into the cropped
    output only (input pixel p, tap i lands on p * stride + i * dilation - padding).
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-convtranspose2d"""
    wide = wide_type(input.dtype)
    x = to_nhwc(input, inputLayout)
    w = filter.transpose(_CONV_TRANSPOSE2D_TO_IHWO[filterLayout]).astype(wide)  # [C, KH, KW, O/groups]
    n, h, wd, c = x.shape
    _, kh, kw, og = w.shape
    if c % groups:
        # validation accepts this (WPT builds it), but no grouping of the input channels is defined for it
        raise OperationError(f"input channels ({c}) are not divisible by groups ({groups}): no defined result")
    cg, o = c // groups, og * groups
    (sh, sw), (dh, dw), (oh, ow) = strides, dilations, outputSizes
    top, _, left, _ = padding
    # rows/columns no tap reaches (padding cropped everything, outputPadding, outputSizes) get bias only
    y = np.zeros((n, oh, ow, o), dtype=wide)
    rows_all, cols_all = spans(oh, kh, -top, sh, dh, 0, h), spans(ow, kw, -left, sw, dw, 0, wd)
    if rows_all and cols_all:
        # only the input box whose taps land inside the output is multiplied
        c0 = min(s.a.start for s in cols_all)
        c1 = max(s.a.stop for s in cols_all)
        p0 = min(s.a.start for s in rows_all)
        p1 = max(s.a.stop for s in rows_all)
        # tiles of input pixels: each pixel's products with every tap are n x filter-sized at most
        for r0, r1, t0, t1 in tiles(p1 - p0, c1 - c0, n * kh * kw * o * wide.itemsize):
            xt = x[:, p0 + r0:p0 + r1, c0 + t0:c0 + t1, :].astype(wide).reshape(-1, c)
            m = xt.shape[0]
            # every input pixel of the tile times every filter tap: [M, KH, KW, groups, O/groups]
            if groups == 1:
                prod = matmul2d(xt, w.reshape(c, kh * kw * og))
            elif cg == 1:
                prod = xt[:, None, None, :, None] * w.transpose(1, 2, 0, 3)[None]
            else:
                prod = np.empty((m, kh, kw, groups, og), dtype=wide)
                for g in range(groups):
                    wg = w[g * cg:(g + 1) * cg].reshape(cg, kh * kw * og)
                    prod[:, :, :, g, :] = matmul2d(xt[:, g * cg:(g + 1) * cg], wg).reshape(m, kh, kw, og)
            prod = prod.reshape(n, r1 - r0, t1 - t0, kh, kw, o)
            for r in spans(oh, kh, -top, sh, dh, p0 + r0, p0 + r1):
                for s in spans(ow, kw, -left, sw, dw, c0 + t0, c0 + t1):
                    y[:, r.b, s.b, :] += prod[:, r.a, s.a, r.tap, s.tap]
    if bias is not None:
        y += bias.astype(wide, copy=False)
    return from_nhwc(y, inputLayout, input.dtype)


KERNELS: dict[str, Callable[..., object]] = {
    "conv2d": conv2d,
    "convTranspose2d": conv_transpose2d,
}


def _channels(shape: Shape, layout: str) -> int:
    return shape[1] if layout == "nchw" else shape[3]


def _conv2d_flops(shapes: Mapping[str, Shape], out: Shape, o: Options) -> float:
    # every output element takes KH*KW*C/groups products: the filter's element count over the output channels
    return 2.0 * math.prod(out) * math.prod(shapes["filter"]) / _channels(out, o["inputLayout"])


def _conv_transpose2d_flops(shapes: Mapping[str, Shape], out: Shape, o: Options) -> float:
    # every input element scatters KH*KW*O/groups products
    x = shapes["input"]
    return 2.0 * math.prod(x) * math.prod(shapes["filter"]) / _channels(x, o["inputLayout"])


def _pack_conv2d(site: PackSite) -> Packed | None:
    """conv2d with a constant filter (and bias, if any): PackedConv2d, unless grouped but not depthwise."""
    from py_core.compiler.kernels import PackedConv2d  # the compiler's plumbing (it imports no family module)

    o, w = site.options, site.constants["filter"]
    bias = site.constants.get("bias")
    if w is None or ("bias" in site.constants and bias is None):
        return None
    hwio = w.transpose(_CONV2D_TO_HWIO[o["filterLayout"]])
    _, _, cg, out_c = hwio.shape
    groups = o["groups"]
    if groups != 1 and not (cg == 1 and out_c == groups):  # grouped but not depthwise: reference kernel
        return None
    packed = PackedConv2d(hwio, bias, padding=o["padding"], strides=o["strides"], dilations=o["dilations"],
                          groups=groups, layout=o["inputLayout"], in_shape=site.shapes["input"],
                          out_shape=site.out_shape, epilogue=site.epilogue, reference=conv2d_nhwc, product=matmul2d)
    return Packed(packed, ("input",), packed.mode)


# Both layouts run natively (PackedConv2d has a channels-first path for every mode; the reference kernels
# compute channels-last and transpose an nchw input and result); channels-last is faster for most shapes.  Median
# ms per run in Pyodide under Node, C kernels on, relu6 fused (node scripts/bench_layouts.mjs; nchw / nhwc, range
# over three runs on a shared 2-core machine):
#   1x1 56x56 24->144 0.86-1.09 / 0.79-0.81   1x1 7x7 320->1280 1.30-1.87 / 1.05-1.11
#   3x3 28x28 64->64 2.01-4.09 / 1.60-1.71    3x3 s2 stem 224x224 3->32 1.21-1.27 / 1.29-1.33
#   depthwise 3x3 s1 112x112x32 0.57-0.93 / 0.81-0.90 (the channels-first plane path)
#   depthwise 3x3 s2 112x112x96 0.73-0.88 / 0.64-0.70   depthwise 3x3 s2 14x14x576 0.17-0.18 / 0.09-0.14
#   convTranspose2d 4x4 s2 28x28 64->32 2.69-8.10 / 2.62-3.80 (a transposing copy each way, ~0.3 ms at 112x112x32)
LAYOUTS = ("nhwc", "nchw")

TRAITS: dict[str, KernelTraits] = {
    "conv2d": KernelTraits(fresh=True, epilogue_host=True, pack=_pack_conv2d, flops=_conv2d_flops,
                           layouts=LAYOUTS, layout_option="inputLayout"),
    "convTranspose2d": KernelTraits(fresh=True, flops=_conv_transpose2d_flops, layouts=LAYOUTS,
                                    layout_option="inputLayout"),
}
# one graph over both cores (compiler/split.py): the batch is axis 0 in every layout
TRAITS = with_batch(TRAITS, {op: batch_per_sample() for op in TRAITS})
