"""Reductions, argMin/argMax and cumulativeSum: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reduce"""

from __future__ import annotations

from py_core.spec.common import check_axes, check_axis
from py_core.spec.table import (
    ABSENT,
    BOOLEAN,
    DATA_TYPE,
    ULONG,
    ULONGS,
    OpCall,
    OpSpec,
    operand,
    value,
)
from py_core.types import ALL_TYPES, FLOATS, MAX_RANK, DataType, OperandDescriptor

FAMILY = "reduction"

# Data types per reduction, from each method's steps ("creating reduction operation ... given « ... »"): the
# sum-like reductions (L1, product, sum, sum of squares) take float32, float16, int32, uint32, int64 and uint64.
SUM_TYPES: frozenset[DataType] = FLOATS | {DataType.INT32, DataType.UINT32, DataType.INT64, DataType.UINT64}
# argMin/argMax outputDataType: the spec only bounds shape[axis] by the type's maximum value, which no
# float type would fail; WPT validation ("Throw if outputDataType=float32") and every implementation
# restrict it to the index types, so we do too.
ARG_OUTPUT_TYPES: frozenset[DataType] = frozenset({DataType.INT32, DataType.INT64})
_INDEX_MAX = {DataType.INT32: 2**31 - 1, DataType.INT64: 2**63 - 1}


def reduced_shape(shape: tuple[int, ...], axes: list[int], keep: bool) -> tuple[int, ...]:
    """Calculate reduction output sizes.  https://www.w3.org/TR/webnn/#mlgraphbuilder-calculate-reduction-output-sizes"""
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_axes(call: OpCall) -> list[int]:
    """The axes to reduce; absent axes: every dimension (a scalar input stays a scalar)."""
    rank = call.operand("input").rank
    axes = call["axes"]
    return check_axes(call, list(range(rank)) if axes is None else axes, rank)


def _reduce(call: OpCall) -> OperandDescriptor:
    x = call.operand("input")
    return x.with_shape(reduced_shape(x.shape, _reduce_axes(call), call["keepDimensions"]))


def reduce_row(name: str, types: frozenset[DataType]) -> OpSpec:
    """A reduction: reduceX(input, {axes, keepDimensions}).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-reduce"""
    return OpSpec(
        name, FAMILY, (operand("input", types),),
        (value("axes", ULONGS, ABSENT), value("keepDimensions", BOOLEAN, False)),
        _reduce,
        normalize=lambda call: {"axes": _reduce_axes(call)},
    )


def _arg_min_max(call: OpCall) -> OperandDescriptor:
    x = call.operand("input")
    axis = check_axis(call, call["axis"], x.rank)
    out_type: DataType = call["outputDataType"]  # bind parsed it (the default is a DataType too)
    if out_type not in ARG_OUTPUT_TYPES:
        call.fail(f"outputDataType {out_type.value} is not supported (allowed: int32, int64)")
    if x.shape[axis] > _INDEX_MAX[out_type]:
        call.fail(f"input dimension {x.shape[axis]} along axis {axis} exceeds the {out_type.value} maximum")
    return OperandDescriptor(out_type, reduced_shape(x.shape, [axis], call["keepDimensions"]))


def arg_row(name: str) -> OpSpec:
    """argMin/argMax(input, axis, {keepDimensions, outputDataType}).
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-argminmax"""
    return OpSpec(
        name, FAMILY, (operand("input", ALL_TYPES, ranks=(1, MAX_RANK)), value("axis", ULONG)),
        (value("keepDimensions", BOOLEAN, False), value("outputDataType", DATA_TYPE, DataType.INT32)),
        _arg_min_max,
        output_types=ARG_OUTPUT_TYPES,
        output_ranks=(0, MAX_RANK),
    )


def _cumulative_sum(call: OpCall) -> OperandDescriptor:
    x = call.operand("input")
    check_axis(call, call["axis"], x.rank)
    return x


ROWS: list[OpSpec] = [
    reduce_row("reduceL1", SUM_TYPES),
    reduce_row("reduceL2", FLOATS),
    reduce_row("reduceLogSum", FLOATS),
    reduce_row("reduceLogSumExp", FLOATS),
    reduce_row("reduceMax", ALL_TYPES),
    reduce_row("reduceMean", FLOATS),
    reduce_row("reduceMin", ALL_TYPES),
    reduce_row("reduceProduct", SUM_TYPES),
    reduce_row("reduceSum", SUM_TYPES),
    reduce_row("reduceSumSquare", SUM_TYPES),
    arg_row("argMin"),
    arg_row("argMax"),
    # https://www.w3.org/TR/webnn/#api-mlgraphbuilder-cumulativesum: rank N, but axis < N rules out scalars
    OpSpec(
        "cumulativeSum", FAMILY, (operand("input", ALL_TYPES, ranks=(1, MAX_RANK)), value("axis", ULONG)),
        (value("exclusive", BOOLEAN, False), value("reversed", BOOLEAN, False)),
        _cumulative_sum,
    ),
]
