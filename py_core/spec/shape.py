"""Shape and data-movement operators: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reshape-method

reshape, transpose, slice, pad, concat, split, expand, tile, reverse, triangular, cast, where.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from py_core.spec.common import broadcast_shapes, check_axes, check_axis, check_length, check_unidirectional
from py_core.spec.mlnumber import cast_number
from py_core.spec.table import (
    ABSENT,
    BOOLEAN,
    DATA_TYPE,
    LONG,
    NUMBER,
    ULONG,
    ULONG_OR_ULONGS,
    ULONGS,
    InferResult,
    OpCall,
    OpSpec,
    Param,
    enum,
    operand,
    operands,
    value,
)
from py_core.types import ALL_TYPES, MAX_DIMENSION, MAX_RANK, DataType, OperandDescriptor

FAMILY = "shape"


def check_shape(call: OpCall, name: str, shape: Sequence[int]) -> None:
    """A shape argument: at most MAX_RANK dimensions, each a valid (non-zero) dimension."""
    if len(shape) > MAX_RANK:
        call.fail(f"{name} {list(shape)} has rank {len(shape)}, more than the supported {MAX_RANK}")
    if any(d == 0 for d in shape):
        call.fail(f"{name} {list(shape)} contains a 0 dimension, which is not a valid dimension")


def _check_dim(call: OpCall, what: str, size: int) -> int:
    if size > MAX_DIMENSION:
        call.fail(f"{what} {size} is not a valid dimension (more than {MAX_DIMENSION})")
    return size


# --------------------------------------------------------------------------------------------- inference

def _reshape(call: OpCall) -> OperandDescriptor:
    x, shape = call.operand("input"), call["newShape"]
    check_shape(call, "newShape", shape)
    count = math.prod(shape)
    if count != x.element_count:
        call.fail(f"newShape {shape} has {count} elements but input {x} has {x.element_count}")
    return x.with_shape(shape)


def _transpose(call: OpCall) -> OperandDescriptor:
    x, perm = call.operand("input"), call["permutation"]
    if perm is None:
        return x.with_shape(x.shape[::-1])
    check_length(call, "permutation", perm, x.rank)
    check_axes(call, perm, x.rank, "permutation")
    return x.with_shape([x.shape[p] for p in perm])


def _slice(call: OpCall) -> OperandDescriptor:
    x, starts, sizes, strides = call.operand("input"), call["starts"], call["sizes"], call["strides"]
    check_length(call, "starts", starts, x.rank)
    check_length(call, "sizes", sizes, x.rank)
    if strides is None:
        strides = [1] * x.rank
    check_length(call, "strides", strides, x.rank)
    out = []
    for i, (dim, start, size, stride) in enumerate(zip(x.shape, starts, sizes, strides, strict=True)):
        if size == 0:
            call.fail(f"sizes[{i}] is 0; sizes {sizes} must all be greater than 0")
        if stride < 1:
            call.fail(f"strides[{i}] is 0; strides {strides} must all be greater than 0")
        if start + size > dim:
            call.fail(f"starts[{i}] + sizes[{i}] ({start} + {size}) exceeds input dimension {i} ({dim})")
        out.append((size + stride - 1) // stride)
    return x.with_shape(out)


def _pad(call: OpCall) -> OperandDescriptor:
    x, begin, end, mode = call.operand("input"), call["beginningPadding"], call["endingPadding"], call["mode"]
    check_length(call, "beginningPadding", begin, x.rank)
    check_length(call, "endingPadding", end, x.rank)
    out = []
    for i, (dim, b, e) in enumerate(zip(x.shape, begin, end, strict=True)):
        if mode == "reflection" and (b >= dim or e >= dim):
            call.fail(f"reflection padding ({b}, {e}) of dimension {i} must be less than its size {dim}")
        out.append(_check_dim(call, f"output dimension {i}", dim + b + e))
    return x.with_shape(out)


def _concat(call: OpCall) -> OperandDescriptor:
    xs, axis = call.sequence("inputs"), call["axis"]
    first = xs[0]
    check_axis(call, axis, first.rank)
    size = first.shape[axis]
    for i, x in enumerate(xs[1:], 1):
        if x.data_type != first.data_type:
            call.fail(f"inputs[{i}] data type {x.data_type.value} must match inputs[0] data type "
                      f"{first.data_type.value}")
        if x.rank != first.rank:
            call.fail(f"inputs[{i}] rank {x.rank} must match inputs[0] rank {first.rank}")
        for d in range(x.rank):
            if d != axis and x.shape[d] != first.shape[d]:
                call.fail(f"inputs[{i}] shape {list(x.shape)} must match inputs[0] shape "
                          f"{list(first.shape)} except on axis {axis}")
        size += x.shape[axis]
    shape = list(first.shape)
    shape[axis] = _check_dim(call, f"concatenated size along axis {axis}", size)
    return first.with_shape(shape)


def _split(call: OpCall) -> list[OperandDescriptor]:
    x, splits, axis = call.operand("input"), call["splits"], call["axis"]
    check_axis(call, axis, x.rank)
    dim = x.shape[axis]
    if isinstance(splits, int):
        if splits == 0 or dim % splits:
            call.fail(f"splits {splits} must evenly divide input dimension {axis} ({dim})")
        sizes = [dim // splits] * splits
    else:
        if any(s == 0 for s in splits):
            call.fail(f"splits {splits} must all be greater than 0")
        if sum(splits) != dim:
            call.fail(f"splits {splits} sum to {sum(splits)}, not input dimension {axis} ({dim})")
        sizes = list(splits)
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = s
        outs.append(x.with_shape(shape))
    return outs


def _expand(call: OpCall) -> OperandDescriptor:
    x, shape = call.operand("input"), call["newShape"]
    check_shape(call, "newShape", shape)
    check_unidirectional(call, x.shape, shape, "input")
    return x.with_shape(shape)


def _tile(call: OpCall) -> OperandDescriptor:
    x, reps = call.operand("input"), call["repetitions"]
    check_length(call, "repetitions", reps, x.rank)
    if any(r == 0 for r in reps):
        call.fail(f"repetitions {reps} must all be greater than 0")
    return x.with_shape([_check_dim(call, f"output dimension {i}", d * r)
                         for i, (d, r) in enumerate(zip(x.shape, reps, strict=True))])


def _reverse(call: OpCall) -> OperandDescriptor:
    x, axes = call.operand("input"), call["axes"]
    if axes is not None:
        check_axes(call, axes, x.rank)
    return x


def _same(call: OpCall) -> OperandDescriptor:
    return call.operand("input")


def _cast(call: OpCall) -> OperandDescriptor:
    return call.operand("input").with_type(call["dataType"])


def _where(call: OpCall) -> OperandDescriptor:
    c, t, f = call.operand("condition"), call.operand("trueValue"), call.operand("falseValue")
    shape = broadcast_shapes(call, t.shape, f.shape, "trueValue and falseValue")
    shape = broadcast_shapes(call, c.shape, shape, "condition and values")
    return t.with_shape(shape)


def _default(name: str, make: Callable[[int], list[int]]) -> Callable[[OpCall], dict[str, Any]]:
    """An absent sequence option filled in from the input's rank."""
    def normalize(call: OpCall) -> dict[str, Any]:
        given = call[name]
        return {name: make(call.operand("input").rank) if given is None else list(given)}

    return normalize


def _row(name: str, params: tuple[Param, ...], options: tuple[Param, ...],
         infer: Callable[[OpCall], InferResult], **kw: Any) -> OpSpec:
    return OpSpec(name, FAMILY, params, options, infer, **kw)


ROWS: list[OpSpec] = [
    _row("reshape", (operand("input"), value("newShape", ULONGS)), (), _reshape),
    _row("transpose", (operand("input"),), (value("permutation", ULONGS, ABSENT),), _transpose,
         normalize=_default("permutation", lambda rank: list(range(rank))[::-1])),
    _row("slice", (operand("input"), value("starts", ULONGS), value("sizes", ULONGS)),
         (value("strides", ULONGS, ABSENT),), _slice, normalize=_default("strides", lambda rank: [1] * rank)),
    _row("pad", (operand("input"), value("beginningPadding", ULONGS), value("endingPadding", ULONGS)),
         (enum("mode", "MLPaddingMode", ("constant", "edge", "reflection"), "constant"),
          value("value", NUMBER, 0)), _pad,
         # the padding value cast to the input's data type (spec steps)
         normalize=lambda call: {"value": cast_number(call["value"], call.operand("input").data_type)}),
    _row("concat", (operands("inputs", ranks=(1, MAX_RANK)), value("axis", ULONG)), (), _concat),
    _row("split", (operand("input", ranks=(1, MAX_RANK)), value("splits", ULONG_OR_ULONGS)), (value("axis", ULONG, 0),),
         _split, returns="operands", limits_output_name="outputs"),
    _row("expand", (operand("input"), value("newShape", ULONGS)), (), _expand),
    _row("tile", (operand("input"), value("repetitions", ULONGS)), (), _tile),
    _row("reverse", (operand("input"),), (value("axes", ULONGS, ABSENT),), _reverse,
         normalize=_default("axes", lambda rank: list(range(rank)))),
    _row("triangular", (operand("input", ranks=(2, MAX_RANK)),),
         (value("upper", BOOLEAN, True), value("diagonal", LONG, 0)), _same),
    _row("cast", (operand("input"), value("dataType", DATA_TYPE)), (), _cast, output_types=ALL_TYPES),
    _row("where", (operand("condition", frozenset({DataType.UINT8})), operand("trueValue"),
                   operand("falseValue", same_type_as="trueValue")), (), _where, output_types=ALL_TYPES),
]
