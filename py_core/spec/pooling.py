"""averagePool2d, l2Pool2d, maxPool2d and resample2d: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pool2d"""

from __future__ import annotations

import math
from typing import Any

from py_core.spec.common import check_axes
from py_core.spec.convolution import (
    input_layout_option,
    join_output,
    split_input,
    window_options,
    window_params,
)
from py_core.spec.matrix import to_float32
from py_core.spec.table import ABSENT, FLOATS_SEQ, ULONGS, OpCall, OpSpec, enum, operand, value
from py_core.types import ALL_TYPES, FLOATS, DataType, OperandDescriptor

FAMILY = "pooling"


def _floor_ceil(size: int, window: int, pad_begin: int, pad_end: int, stride: int,
                dilation: int) -> tuple[int, int]:
    """floor and ceil of 1 + (size - effectiveWindow + padding) / stride, in exact integer arithmetic."""
    span = size - (window - 1) * dilation - 1 + pad_begin + pad_end
    return span // stride + 1, -(-span // stride) + 1


def _pool_geometry(call: OpCall) -> tuple[int, int, list[int], list[int]]:
    """A pool's batch, channels, window [height, width] and output [height, width], given or computed."""
    x = call.operand("input")
    layout = call["layout"]
    n, c, h, w = split_input(x, layout)
    window = call["windowDimensions"]
    if window is None:
        # absent windowDimensions: the whole spatial extent (global pooling)
        window = [h, w]
    if len(window) != 2:
        call.fail(f"windowDimensions {window} must have 2 values")
    if any(k == 0 for k in window):
        call.fail(f"windowDimensions {window} must all be greater than 0")
    # The spec's steps also zero the padding when outputSizes is given and require outputSizes < strides; WPT
    # validation (outputSizes [4, 4] with padding [1, 1, 1, 1] and strides [2, 2] is valid) and Chromium do
    # neither, so we follow WPT: padding always applies, outputSizes must be the floor or the ceil sizes.
    padding, strides, dilations = window_options(call)
    fh = _floor_ceil(h, window[0], padding[0], padding[1], strides[0], dilations[0])
    fw = _floor_ceil(w, window[1], padding[2], padding[3], strides[1], dilations[1])
    given = call["outputSizes"]
    if given is not None:
        if len(given) != 2:
            call.fail(f"outputSizes {given} must have 2 values")
        if given not in ([fh[0], fw[0]], [fh[1], fw[1]]):
            call.fail(f"outputSizes {given} must be either [{fh[0]}, {fw[0]}] (floor) or "
                      f"[{fh[1]}, {fw[1]}] (ceil)")
        sizes = list(given)
    else:
        k = 1 if call["outputShapeRounding"] == "ceil" else 0
        sizes = [fh[k], fw[k]]
    if sizes[0] < 1 or sizes[1] < 1:
        call.fail(f"output sizes {sizes} are not valid: the input [{h}, {w}] with padding {padding} is "
                  f"smaller than the window {window} (dilations {dilations})")
    return n, c, list(window), sizes


def _pool(call: OpCall) -> OperandDescriptor:
    n, c, _, sizes = _pool_geometry(call)
    return call.operand("input").with_shape(join_output(call["layout"], n, c, sizes[0], sizes[1]))


def _pool_options(call: OpCall) -> dict[str, Any]:
    # kernels read both from here
    _, _, window, sizes = _pool_geometry(call)
    return {"windowDimensions": window, "outputSizes": sizes}


def pool_row(name: str, types: frozenset[DataType]) -> OpSpec:
    """A pooling operator: name(input, MLPool2dOptions).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pool2d"""
    return OpSpec(
        name, FAMILY, (operand("input", types, ranks=(4, 4)),),
        (
            value("windowDimensions", ULONGS, ABSENT),
            *window_params(),
            input_layout_option("layout"),
            enum("outputShapeRounding", "MLRoundingType", ("floor", "ceil"), "floor"),
            value("outputSizes", ULONGS, ABSENT),
        ),
        _pool,
        normalize=_pool_options,
    )


def _resample2d_geometry(call: OpCall) -> tuple[list[float], list[int], list[int], list[int]]:
    """resample2d's scales (as float32), axes, output sizes along them and output shape."""
    x = call.operand("input")
    scales = call["scales"]
    if len(scales) != 2:
        call.fail(f"scales {scales} must have 2 values")
    if any(s <= 0 for s in scales):
        call.fail(f"scales {scales} must all be greater than 0")
    # MLResample2dOptions.scales is sequence<float>: JS numbers arrive rounded to float32
    scales = [to_float32(call, f"scales[{i}]", s) for i, s in enumerate(scales)]
    sizes = call["sizes"]
    if sizes is not None:
        if len(sizes) != 2:
            call.fail(f"sizes {sizes} must have 2 values")
        if any(s == 0 for s in sizes):
            call.fail(f"sizes {sizes} must all be greater than 0")
    axes = call["axes"]
    if len(axes) != 2:
        call.fail(f"axes {axes} must have 2 values")
    axes = check_axes(call, axes, x.rank)
    shape = list(x.shape)
    out = []
    for i, axis in enumerate(axes):
        size = sizes[i] if sizes is not None else math.floor(x.shape[axis] * scales[i])
        if size < 1:
            call.fail(f"output size {size} along axis {axis} (input size {x.shape[axis]} x scale "
                      f"{scales[i]}) is not a valid dimension")
        shape[axis] = size
        out.append(size)
    return scales, axes, out, shape


def _resample2d(call: OpCall) -> OperandDescriptor:
    return call.operand("input").with_shape(_resample2d_geometry(call)[3])


def _resample2d_options(call: OpCall) -> dict[str, Any]:
    # the spec's sampling only depends on outputSize / inputSize: kernels read the output sizes from here
    scales, axes, sizes, _ = _resample2d_geometry(call)
    return {"scales": scales, "sizes": sizes, "axes": axes}


ROWS: list[OpSpec] = [
    pool_row("averagePool2d", FLOATS),
    pool_row("l2Pool2d", FLOATS),
    # maxPool2d passes no allowedDataTypes to "create a pooling operation": any data type
    pool_row("maxPool2d", ALL_TYPES),
    OpSpec(
        "resample2d", FAMILY, (operand("input", FLOATS, ranks=(4, 4)),),
        (
            enum("mode", "MLInterpolationMode", ("nearest-neighbor", "linear"), "nearest-neighbor"),
            value("scales", FLOATS_SEQ, [1.0, 1.0]),
            value("sizes", ULONGS, ABSENT),
            # any two distinct axes: current WPT dropped the old "consecutive axes" rule ([3, 2] is tested)
            value("axes", ULONGS, [2, 3]),
        ),
        _resample2d,
        normalize=_resample2d_options,
    ),
]
