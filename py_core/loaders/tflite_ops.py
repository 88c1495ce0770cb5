"""One mapping function per TFLite operator: TFLite semantics -> WebNN builder calls.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

Each function takes a `MappingContext` (see tflite_context.py) and returns the output operand(s); `FOLDED` functions
return NumPy arrays and run at load time when every input is a constant.  TFLite semantics follow the
reference kernels in tensorflow/lite/kernels/ (padding.h, internal/reference/*.h).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from py_core.errors import NotSupportedError
from py_core.loaders.tflite_context import MappingContext, dequantize
from py_core.loaders.tflite_shape_ops import (
    concatenation,
    depth_to_space,
    mirror_pad,
    pad,
    reshape,
    reshape_to,
    resize_bilinear,
    resize_nearest_neighbor,
    slice_op,
    space_to_depth,
    squeeze_like,
    strided_slice,
    transpose,
)

SAME, VALID = 0, 1  # tflite.Padding
# TfLitePadding (C enum in custom options): kTfLitePaddingUnknown, kTfLitePaddingSame, kTfLitePaddingValid
C_PADDING = {1: SAME, 2: VALID}


# --------------------------------------------------------------------------------------------------- helpers


def same_padding(size: int, window: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite SAME padding (padding.h): out = ceil(size / stride), the odd pixel goes at the end."""
    effective = (window - 1) * dilation + 1
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def window_padding(padding: int, hw: Sequence[int], window: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int] = (1, 1)) -> list[int]:
    """WebNN [top, bottom, left, right] for TFLite SAME/VALID padding over NHWC spatial sizes hw."""
    if padding == VALID:
        return [0, 0, 0, 0]
    if padding != SAME:
        raise NotSupportedError(f"padding type {padding} is not SAME or VALID")
    top, bottom = same_padding(hw[0], window[0], strides[0], dilations[0])
    left, right = same_padding(hw[1], window[1], strides[1], dilations[1])
    return [top, bottom, left, right]


def axes_of(values: np.ndarray, rank: int) -> list[int]:
    """Axis values (possibly negative, possibly repeated) as sorted distinct non-negative axes."""
    return sorted({int(a) % rank for a in np.asarray(values).reshape(-1)})


# ---------------------------------------------------------------------------------------------- convolutions


def conv_2d(ctx: MappingContext) -> Any:
    """CONV_2D: NHWC input, OHWI filter; grouped when the filter has fewer input channels than the input."""
    o = ctx.options
    n, h, w, c = ctx.shape(0)
    out_c, kh, kw, f_in = ctx.shape(1)
    strides, dilations = [o.StrideH(), o.StrideW()], [o.DilationHFactor(), o.DilationWFactor()]
    options: dict[str, Any] = {
        "padding": window_padding(o.Padding(), (h, w), (kh, kw), strides, dilations),
        "strides": strides, "dilations": dilations, "groups": c // f_in,
        "inputLayout": "nhwc", "filterLayout": "ohwi"}
    if ctx.has(2):
        options["bias"] = ctx.operand(2)
    y = ctx.emit("conv2d", ctx.operand(0), ctx.operand(1), **options)
    return ctx.fused(y, o.FusedActivationFunction())


def depthwise_conv_2d(ctx: MappingContext) -> Any:
    """DEPTHWISE_CONV_2D: filter [1, KH, KW, C * multiplier] is WebNN's `ihwo` with groups = C."""
    o = ctx.options
    n, h, w, c = ctx.shape(0)
    _, kh, kw, _ = ctx.shape(1)
    strides, dilations = [o.StrideH(), o.StrideW()], [o.DilationHFactor(), o.DilationWFactor()]
    options: dict[str, Any] = {
        "padding": window_padding(o.Padding(), (h, w), (kh, kw), strides, dilations),
        "strides": strides, "dilations": dilations, "groups": c,
        "inputLayout": "nhwc", "filterLayout": "ihwo"}
    if ctx.has(2):
        options["bias"] = ctx.operand(2)
    y = ctx.emit("conv2d", ctx.operand(0), ctx.operand(1), **options)
    return ctx.fused(y, o.FusedActivationFunction())


def _transpose_conv(ctx: MappingContext, x: int, f: int, bias: int | None, strides: list[int],
                    pads: list[int], sizes: list[int]) -> Any:
    """convTranspose2d: NHWC input, OHWI filter, explicit padding and output sizes."""
    options: dict[str, Any] = {"padding": pads, "strides": strides, "outputSizes": sizes,
                               "inputLayout": "nhwc", "filterLayout": "ohwi"}
    if bias is not None:
        options["bias"] = ctx.operand(bias)
    return ctx.emit("convTranspose2d", ctx.operand(x), ctx.operand(f), **options)


def _crop_padding(size: int, window: int, stride: int, out: int, top: int) -> list[int]:
    """[begin, end] padding cropping the full transposed-conv result ((size-1)*stride + window) to `out`,
    `top` rows from the start; a negative end becomes outputSizes' extra (bias-only) rows."""
    return [top, max((size - 1) * stride + window - top - out, 0)]


def transpose_conv(ctx: MappingContext) -> Any:
    """TRANSPOSE_CONV: inputs (output_shape, filter OHWI, input[, bias]); the crop is padding.h's, computed on
    the output side as kernels/transpose_conv.cc does."""
    o = ctx.options
    _, h, w, _ = ctx.shape(2)
    _, kh, kw, _ = ctx.shape(1)
    _, oh, ow, _ = ctx.out().shape
    if tuple(int(d) for d in ctx.const(0)) != ctx.out().shape:
        raise NotSupportedError("output_shape must match the output tensor's static shape")
    strides, padding = [o.StrideH(), o.StrideW()], o.Padding()
    if padding not in (SAME, VALID):
        raise NotSupportedError(f"padding type {padding} is not SAME or VALID")
    pads = []
    for size, k, s, out in ((h, kh, strides[0], oh), (w, kw, strides[1], ow)):
        conv_out = (out + s - 1) // s if padding == SAME else (out + s - k) // s
        total = max((conv_out - 1) * s + k - out, 0)
        pads += _crop_padding(size, k, s, out, total // 2)
    y = _transpose_conv(ctx, 2, 1, 3 if ctx.has(3) else None, strides, pads, [oh, ow])
    act = o.FusedActivationFunction() if hasattr(o, "FusedActivationFunction") else 0
    return ctx.fused(y, act)


def convolution_2d_transpose_bias(ctx: MappingContext) -> Any:
    """MediaPipe's custom Convolution2DTransposeBias: inputs (input, filter OHWI, bias).

    As mediapipe/util/tflite/operations/transpose_conv_bias.cc defines it: the custom options are the C struct
    TfLiteTransposeConvParams {TfLitePadding padding; int stride_width; int stride_height}; SAME removes
    p = max(0, k - (in - 1) % s - 1) rows, p // 2 of them at the start, so out = s * (in - 1) + k - p."""
    if len(ctx.op.custom_options) < 12:
        raise NotSupportedError(f"custom options of {len(ctx.op.custom_options)} bytes, expected 12 "
                                "(TfLiteTransposeConvParams)")
    padding, stride_w, stride_h = struct.unpack_from("<iii", ctx.op.custom_options)
    if padding not in C_PADDING:
        raise NotSupportedError(f"TfLitePadding {padding} is not SAME (1) or VALID (2)")
    _, h, w, _ = ctx.shape(0)
    _, kh, kw, _ = ctx.shape(1)
    pads, sizes = [], []
    for size, k, s in ((h, kh, stride_h), (w, kw, stride_w)):
        p = max(0, k - (size - 1) % s - 1) if C_PADDING[padding] == SAME else 0
        pads += [p // 2, p - p // 2]
        sizes.append(s * (size - 1) + k - p)
    if tuple(sizes) != ctx.out().shape[1:3]:
        raise NotSupportedError(f"output tensor shape {list(ctx.out().shape)} does not match the computed "
                                f"size {sizes}")
    return _transpose_conv(ctx, 0, 1, 2 if ctx.has(2) else None, [stride_h, stride_w], pads, sizes)


def fully_connected(ctx: MappingContext) -> Any:
    """FULLY_CONNECTED: y = x.reshape(-1, K) @ W[N, K]^T + b, then keep_num_dims restores x's leading dims."""
    o = ctx.options
    if o.WeightsFormat() != 0:
        raise NotSupportedError("shuffled (non-DEFAULT) weights format")
    x_shape, (units, k) = ctx.shape(0), ctx.shape(1)
    if ctx.tensor(0).dtype != ctx.tensor(1).dtype and not ctx.is_const(1):
        raise NotSupportedError("hybrid quantized weights")
    rows = math.prod(x_shape) // k
    x = reshape_to(ctx, ctx.operand(0), (rows, k), x_shape)
    options = {"bTranspose": True}
    if ctx.has(2):
        options["c"] = ctx.operand(2)
    y = ctx.emit("gemm", x, ctx.operand(1), **options)
    y = reshape_to(ctx, y, ctx.out().shape, (rows, units))
    return ctx.fused(y, o.FusedActivationFunction())


# --------------------------------------------------------------------------------------------------- pooling


def _pool(kind: str) -> Callable[[MappingContext], Any]:
    def convert(ctx: MappingContext) -> Any:
        o = ctx.options
        _, h, w, _ = ctx.shape(0)
        window, strides = [o.FilterHeight(), o.FilterWidth()], [o.StrideH(), o.StrideW()]
        # averagePool2d counts only the valid (non-padding) elements, as TFLite's SAME average pool does
        y = ctx.emit(kind, ctx.operand(0), windowDimensions=window, strides=strides,
                     padding=window_padding(o.Padding(), (h, w), window, strides), layout="nhwc")
        return ctx.fused(y, o.FusedActivationFunction())

    convert.__doc__ = f"{kind}: NHWC pooling with TFLite SAME/VALID padding and a fused activation."
    return convert


def _reduce(kind: str) -> Callable[[MappingContext], Any]:
    def convert(ctx: MappingContext) -> Any:
        rank = len(ctx.shape(0))
        return ctx.emit(kind, ctx.operand(0), axes=axes_of(ctx.const(1), rank),
                        keepDimensions=bool(ctx.options.KeepDims()))

    convert.__doc__ = f"{kind} over constant axes (negative axes wrapped), keep_dims."
    return convert


# ---------------------------------------------------------------------------------------------- element-wise


def _binary(kind: str) -> Callable[[MappingContext], Any]:
    def convert(ctx: MappingContext) -> Any:
        y = ctx.emit(kind, ctx.operand(0), ctx.operand(1))
        o = ctx.options
        act = o.FusedActivationFunction() if o is not None and hasattr(o, "FusedActivationFunction") else 0
        return ctx.fused(y, act)

    convert.__doc__ = f"{kind} with NumPy broadcasting and a fused activation."
    return convert


def _unary(kind: str, **options: Any) -> Callable[[MappingContext], Any]:
    def convert(ctx: MappingContext) -> Any:
        return ctx.emit(kind, ctx.operand(0), **options)

    convert.__doc__ = f"{kind}{options or ''}."
    return convert


def prelu(ctx: MappingContext) -> Any:
    """PRELU: alpha broadcasts to the input (e.g. [1, 1, C] against [N, H, W, C])."""
    return ctx.emit("prelu", ctx.operand(0), ctx.operand(1))


def leaky_relu(ctx: MappingContext) -> Any:
    """LEAKY_RELU(alpha)."""
    return ctx.emit("leakyRelu", ctx.operand(0), alpha=float(ctx.options.Alpha()))


def softmax(ctx: MappingContext) -> Any:
    """SOFTMAX over the last axis of beta * x."""
    x = ctx.operand(0)
    beta = float(ctx.options.Beta())
    if beta != 1.0:
        x = ctx.emit("mul", x, ctx.constant(np.full([1] * len(ctx.shape(0)), beta, np.float32)))
    return ctx.emit("softmax", x, len(ctx.shape(0)) - 1)


def rsqrt(ctx: MappingContext) -> Any:
    """RSQRT: 1 / sqrt(x)."""
    return ctx.emit("reciprocal", ctx.emit("sqrt", ctx.operand(0)))


def squared_difference(ctx: MappingContext) -> Any:
    """SQUARED_DIFFERENCE: (a - b)^2."""
    d = ctx.emit("sub", ctx.operand(0), ctx.operand(1))
    return ctx.emit("mul", d, d)


def gelu(ctx: MappingContext) -> Any:
    """GELU: WebNN's gelu is the exact (erf) form; the tanh approximation has no mapping."""
    if ctx.options is not None and ctx.options.Approximate():
        raise NotSupportedError("approximate (tanh) GELU")
    return ctx.emit("gelu", ctx.operand(0))


# --------------------------------------------------------------------------------------------------- misc


def batch_matmul(ctx: MappingContext) -> Any:
    """BATCH_MATMUL with adj_x/adj_y (transpose of the last two axes)."""
    o = ctx.options
    a, b = ctx.operand(0), ctx.operand(1)
    for k, adj in ((0, o.AdjX()), (1, o.AdjY())):
        if adj:
            r = len(ctx.shape(k))
            t = ctx.emit("transpose", a if k == 0 else b, permutation=[*range(r - 2), r - 1, r - 2])
            a, b = (t, b) if k == 0 else (a, t)
    return ctx.emit("matmul", a, b)


def cast(ctx: MappingContext) -> Any:
    """CAST (and DEQUANTIZE of a float16 tensor computed at run time) to the output tensor's type."""
    out = ctx.out()
    if out.webnn_type is None:
        raise NotSupportedError(f"cast to {out.dtype}")
    return ctx.emit("cast", ctx.operand(0), out.webnn_type)


def dequantize_run_time(ctx: MappingContext) -> Any:
    """DEQUANTIZE of a run-time tensor: only float16 -> float32 (a cast) maps."""
    if ctx.tensor(0).dtype != "float16":
        raise NotSupportedError(f"DEQUANTIZE of a run-time {ctx.tensor(0).dtype} tensor")
    return cast(ctx)


def fold_dequantize(ctx: MappingContext) -> np.ndarray:
    """DEQUANTIZE of a weight, at load time."""
    return dequantize(ctx.tensor(0), ctx.const(0))


def fold_densify(ctx: MappingContext) -> np.ndarray:
    """DENSIFY of a sparse weight: the reader already decoded it dense (tflite_sparse.densify)."""
    return ctx.const(0)


CONVERTERS: dict[str, Callable[[MappingContext], Any]] = {
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "Convolution2DTransposeBias": convolution_2d_transpose_bias,
    "FULLY_CONNECTED": fully_connected,
    "ADD": _binary("add"),
    "SUB": _binary("sub"),
    "MUL": _binary("mul"),
    "DIV": _binary("div"),
    "MAXIMUM": _binary("max"),
    "MINIMUM": _binary("min"),
    "POW": _binary("pow"),
    "SQUARED_DIFFERENCE": squared_difference,
    "RELU": _unary("relu"),
    "RELU6": _unary("clamp", minValue=0.0, maxValue=6.0),
    "RELU_N1_TO_1": _unary("clamp", minValue=-1.0, maxValue=1.0),
    "RELU_0_TO_1": _unary("clamp", minValue=0.0, maxValue=1.0),
    "PRELU": prelu,
    "LEAKY_RELU": leaky_relu,
    "LOGISTIC": _unary("sigmoid"),
    "HARD_SWISH": _unary("hardSwish"),
    "TANH": _unary("tanh"),
    "ELU": _unary("elu"),
    "GELU": gelu,
    "SOFTMAX": softmax,
    "ABS": _unary("abs"),
    "NEG": _unary("neg"),
    "EXP": _unary("exp"),
    "LOG": _unary("log"),
    "SQRT": _unary("sqrt"),
    "RSQRT": rsqrt,
    "FLOOR": _unary("floor"),
    "CEIL": _unary("ceil"),
    "AVERAGE_POOL_2D": _pool("averagePool2d"),
    "MAX_POOL_2D": _pool("maxPool2d"),
    "L2_POOL_2D": _pool("l2Pool2d"),
    "MEAN": _reduce("reduceMean"),
    "SUM": _reduce("reduceSum"),
    "REDUCE_MAX": _reduce("reduceMax"),
    "REDUCE_MIN": _reduce("reduceMin"),
    "REDUCE_PROD": _reduce("reduceProduct"),
    "PAD": pad,
    "PADV2": pad,
    "MIRROR_PAD": mirror_pad,
    "RESHAPE": reshape,
    "SQUEEZE": squeeze_like,
    "EXPAND_DIMS": squeeze_like,
    "TRANSPOSE": transpose,
    "CONCATENATION": concatenation,
    "RESIZE_BILINEAR": resize_bilinear,
    "RESIZE_NEAREST_NEIGHBOR": resize_nearest_neighbor,
    "DEPTH_TO_SPACE": depth_to_space,
    "SPACE_TO_DEPTH": space_to_depth,
    "STRIDED_SLICE": strided_slice,
    "SLICE": slice_op,
    "BATCH_MATMUL": batch_matmul,
    "CAST": cast,
    "DEQUANTIZE": dequantize_run_time,
}

# Operators evaluated at load time when all their inputs are constants (weights).
FOLDED: dict[str, Callable[[MappingContext], np.ndarray]] = {
    "DEQUANTIZE": fold_dequantize,
    "DENSIFY": fold_densify,
}
