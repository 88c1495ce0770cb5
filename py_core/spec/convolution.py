"""conv2d and convTranspose2d: validation and shape inference.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""

from __future__ import annotations

from typing import Any

from py_core.spec.table import ABSENT, ULONG, ULONGS, OpCall, OpSpec, Param, enum, operand, value
from py_core.types import FLOATS, MAX_DIMENSION, OperandDescriptor

FAMILY = "convolution"

INPUT_LAYOUTS = ("nchw", "nhwc")
CONV2D_FILTER_LAYOUTS = ("oihw", "hwio", "ohwi", "ihwo")
CONV_TRANSPOSE2D_FILTER_LAYOUTS = ("iohw", "hwoi", "ohwi")

# Where each logical filter dimension sits, per layout: (out, in, height, width).
CONV2D_FILTER_AXES = {"oihw": (0, 1, 2, 3), "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2)}
CONV_TRANSPOSE2D_FILTER_AXES = {"iohw": (1, 0, 2, 3), "hwoi": (2, 3, 0, 1), "ohwi": (0, 3, 1, 2)}


def input_layout_option(name: str = "inputLayout") -> Param:
    """The MLInputOperandLayout option shared by convolutions and pooling."""
    return enum(name, "MLInputOperandLayout", INPUT_LAYOUTS, "nchw")


def window_options(call: OpCall) -> tuple[list[int], list[int], list[int]]:
    """padding (4 values), strides and dilations (2 values each, all > 0), checked as conv/pool steps do."""
    padding, strides, dilations = call["padding"], call["strides"], call["dilations"]
    if len(padding) != 4:
        call.fail(f"padding {padding} must have 4 values [beginningHeight, endingHeight, beginningWidth, "
                  "endingWidth]")
    if len(strides) != 2:
        call.fail(f"strides {strides} must have 2 values")
    if any(s == 0 for s in strides):
        call.fail(f"strides {strides} must all be greater than 0")
    if len(dilations) != 2:
        call.fail(f"dilations {dilations} must have 2 values")
    if any(d == 0 for d in dilations):
        call.fail(f"dilations {dilations} must all be greater than 0")
    return padding, strides, dilations


def split_input(x: OperandDescriptor, layout: str) -> tuple[int, int, int, int]:
    """(batches, channels, height, width) of a 4-D input in `layout`."""
    if layout == "nchw":
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    return n, c, h, w


def join_output(layout: str, n: int, c: int, h: int, w: int) -> tuple[int, int, int, int]:
    """A 4-D output shape in `layout`."""
    return (n, c, h, w) if layout == "nchw" else (n, h, w, c)


def window_output_size(call: OpCall, what: str, size: int, window: int, pad_begin: int, pad_end: int,
                       stride: int, dilation: int, ceil: bool = False) -> int:
    """Calculate conv output size, rounded down (or up): 1 + (size - effectiveWindow + padding) / stride.
    https://www.w3.org/TR/webnn/#mlgraphbuilder-calculate-conv-output-size"""
    effective = (window - 1) * dilation + 1
    span = size - effective + pad_begin + pad_end
    # exact integer floor/ceil of span / stride (span may be negative): no float rounding on huge sizes
    out = (-(-span // stride) if ceil else span // stride) + 1
    if out < 1:
        call.fail(f"{what}: the input size {size} with padding [{pad_begin}, {pad_end}] is too small for the "
                  f"effective window {effective} (window {window}, dilation {dilation})")
    return out


def _conv2d(call: OpCall) -> OperandDescriptor:
    x, f = call.operand("input"), call.operand("filter")
    padding, strides, dilations = window_options(call)
    groups = call["groups"]
    if groups == 0:
        call.fail("groups must be greater than 0")
    n, c, h, w = split_input(x, call["inputLayout"])
    o_axis, i_axis, h_axis, w_axis = CONV2D_FILTER_AXES[call["filterLayout"]]
    out_c, f_in, kh, kw = f.shape[o_axis], f.shape[i_axis], f.shape[h_axis], f.shape[w_axis]
    if c % groups != 0 or c // groups != f_in:
        call.fail(f"input channels ({c}) must equal filter input channels x groups ({f_in} x {groups}) "
                  f"(filter {list(f.shape)}, filterLayout '{call['filterLayout']}')")
    # not in the spec's steps, but Chromium checks it and a group's output channels are undefined otherwise
    if out_c % groups != 0:
        call.fail(f"output channels ({out_c}) must be divisible by groups ({groups})")
    bias = call.optional("bias")
    if bias is not None and bias.shape != (out_c,):
        call.fail(f"bias shape {list(bias.shape)} must be [{out_c}] (the output channels)")
    oh = window_output_size(call, "height", h, kh, padding[0], padding[1], strides[0], dilations[0])
    ow = window_output_size(call, "width", w, kw, padding[2], padding[3], strides[1], dilations[1])
    return x.with_shape(join_output(call["inputLayout"], n, out_c, oh, ow))


def _conv_transpose2d_geometry(call: OpCall) -> tuple[int, int, list[int]]:
    """convTranspose2d's batch, output channels and output [height, width], given or computed."""
    x, f = call.operand("input"), call.operand("filter")
    padding, strides, dilations = window_options(call)
    output_padding, output_sizes = call["outputPadding"], call["outputSizes"]
    if len(output_padding) != 2:
        call.fail(f"outputPadding {output_padding} must have 2 values")
    if output_sizes is not None:
        if len(output_sizes) != 2:
            call.fail(f"outputSizes {output_sizes} must have 2 values")
    elif output_padding[0] >= strides[0] or output_padding[1] >= strides[1]:
        call.fail(f"outputPadding {output_padding} must be smaller than strides {strides}")
    groups = call["groups"]
    if groups == 0:
        call.fail("groups must be greater than 0")
    n, c, h, w = split_input(x, call["inputLayout"])
    o_axis, i_axis, h_axis, w_axis = CONV_TRANSPOSE2D_FILTER_AXES[call["filterLayout"]]
    f_out, f_in, kh, kw = f.shape[o_axis], f.shape[i_axis], f.shape[h_axis], f.shape[w_axis]
    if c != f_in:
        call.fail(f"input channels ({c}) must equal filter input channels ({f_in}) "
                  f"(filter {list(f.shape)}, filterLayout '{call['filterLayout']}')")
    # The spec does not require inputChannels % groups == 0, and WPT validation builds input channels 1 with
    # groups 3 ([1, 1, 5, 5] -> [1, 3, 5, 5]): accepted here, the kernel reports it has no defined result.
    out_c = f_out * groups
    if out_c > MAX_DIMENSION:
        call.fail(f"output channels ({f_out} x groups {groups}) is not a valid dimension")
    bias = call.optional("bias")
    if bias is not None and bias.shape != (out_c,):
        call.fail(f"bias shape {list(bias.shape)} must be [{out_c}] (the output channels)")
    sizes = []
    for i, (what, size, k) in enumerate((("height", h, kh), ("width", w, kw))):
        pads = padding[2 * i] + padding[2 * i + 1]
        calculated = (size - 1) * strides[i] + (k - 1) * dilations[i] + 1 - pads
        if output_sizes is not None:
            out = output_sizes[i]
            if not calculated <= out < calculated + strides[i]:
                call.fail(f"outputSizes[{i}] ({out}) must be in [{calculated}, {calculated + strides[i]}) "
                          f"for the {what} (calculated size {calculated}, stride {strides[i]})")
        else:
            out = calculated + output_padding[i]
        if out < 1:
            call.fail(f"output {what} {out} is not a valid dimension (padding {padding} is too large)")
        sizes.append(out)
    return n, out_c, sizes


def _conv_transpose2d(call: OpCall) -> OperandDescriptor:
    n, out_c, sizes = _conv_transpose2d_geometry(call)
    return call.operand("input").with_shape(join_output(call["inputLayout"], n, out_c, sizes[0], sizes[1]))


def _conv_transpose2d_options(call: OpCall) -> dict[str, Any]:
    # kernels read the output size from here: filled in whether given or computed
    return {"outputSizes": _conv_transpose2d_geometry(call)[2]}


def window_params() -> tuple[Param, ...]:
    """padding, strides and dilations options with their spec defaults."""
    return (
        value("padding", ULONGS, [0, 0, 0, 0]),
        value("strides", ULONGS, [1, 1]),
        value("dilations", ULONGS, [1, 1]),
    )


ROWS: list[OpSpec] = [
    OpSpec(
        "conv2d", FAMILY,
        (operand("input", FLOATS, ranks=(4, 4)),
         operand("filter", FLOATS, ranks=(4, 4), same_type_as="input")),
        (
            *window_params(),
            value("groups", ULONG, 1),
            input_layout_option(),
            enum("filterLayout", "MLConv2dFilterOperandLayout", CONV2D_FILTER_LAYOUTS, "oihw"),
            operand("bias", FLOATS, ranks=(1, 1), same_type_as="input", optional=True),
        ),
        _conv2d,
    ),
    OpSpec(
        "convTranspose2d", FAMILY,
        (operand("input", FLOATS, ranks=(4, 4)),
         operand("filter", FLOATS, ranks=(4, 4), same_type_as="input")),
        (
            *window_params(),
            value("outputPadding", ULONGS, [0, 0]),
            value("outputSizes", ULONGS, ABSENT),
            value("groups", ULONG, 1),
            input_layout_option(),
            enum("filterLayout", "MLConvTranspose2dFilterOperandLayout", CONV_TRANSPOSE2D_FILTER_LAYOUTS,
                 "iohw"),
            operand("bias", FLOATS, ranks=(1, 1), same_type_as="input", optional=True),
        ),
        _conv_transpose2d,
        normalize=_conv_transpose2d_options,
    ),
]
