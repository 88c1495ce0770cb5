"""Gather and scatter operators: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gather

Index values are only known at run time: kernels wrap negative indices and clamp out-of-range ones.
"""

from __future__ import annotations

from py_core.spec.common import check_axis
from py_core.spec.table import ULONG, OpCall, OpSpec, operand, value
from py_core.types import INDEX_TYPES, MAX_RANK, OperandDescriptor

FAMILY = "gather"


def _check_rank(call: OpCall, shape: list[int]) -> tuple[int, ...]:
    if len(shape) > MAX_RANK:
        call.fail(f"output shape {shape} has rank {len(shape)}, more than the supported {MAX_RANK}")
    return tuple(shape)


def _gather(call: OpCall) -> OperandDescriptor:
    x, idx, axis = call.operand("input"), call.operand("indices"), call["axis"]
    check_axis(call, axis, x.rank)
    return x.with_shape(_check_rank(call, [*x.shape[:axis], *idx.shape, *x.shape[axis + 1:]]))


def _check_elements(call: OpCall, x: OperandDescriptor, idx: OperandDescriptor) -> None:
    axis = call["axis"]
    check_axis(call, axis, x.rank)
    if idx.rank != x.rank:
        call.fail(f"indices rank {idx.rank} must equal input rank {x.rank}")
    for d in range(x.rank):
        if d != axis and idx.shape[d] != x.shape[d]:
            call.fail(f"indices shape {list(idx.shape)} must equal input shape {list(x.shape)} "
                      f"except on axis {axis}")


def _gather_elements(call: OpCall) -> OperandDescriptor:
    x, idx = call.operand("input"), call.operand("indices")
    _check_elements(call, x, idx)
    # The spec's steps copy the input's descriptor, but its examples and the WPT vectors (and ONNX
    # GatherElements) give the output the indices' shape: follow the vectors.
    return x.with_shape(idx.shape)


def _nd_shape(call: OpCall, x: OperandDescriptor, idx: OperandDescriptor) -> list[int]:
    """indices.shape[:-1] + input.shape[k:], where k = indices.shape[-1] is the coordinate size."""
    k = idx.shape[-1]
    if k > x.rank:
        call.fail(f"indices coordinate size {k} (last dimension of {list(idx.shape)}) exceeds input rank "
                  f"{x.rank}")
    return [*idx.shape[:-1], *x.shape[k:]]


def _gather_nd(call: OpCall) -> OperandDescriptor:
    x, idx = call.operand("input"), call.operand("indices")
    return x.with_shape(_check_rank(call, _nd_shape(call, x, idx)))


def _scatter_elements(call: OpCall) -> OperandDescriptor:
    x, idx, upd = call.operand("input"), call.operand("indices"), call.operand("updates")
    _check_elements(call, x, idx)
    if upd.shape != idx.shape:
        call.fail(f"updates shape {list(upd.shape)} must equal indices shape {list(idx.shape)}")
    return x


def _scatter_nd(call: OpCall) -> OperandDescriptor:
    x, idx, upd = call.operand("input"), call.operand("indices"), call.operand("updates")
    expected = _nd_shape(call, x, idx)
    if list(upd.shape) != expected:
        call.fail(f"updates shape {list(upd.shape)} must be {expected} (indices shape {list(idx.shape)}, "
                  f"input shape {list(x.shape)})")
    return x


_AXIS = value("axis", ULONG, 0)
_ANY = (0, MAX_RANK)
_ONE_UP = (1, MAX_RANK)

ROWS: list[OpSpec] = [
    OpSpec("gather", FAMILY, (operand("input", ranks=_ONE_UP), operand("indices", INDEX_TYPES)), (_AXIS,), _gather,
           output_ranks=_ANY),
    OpSpec("gatherElements", FAMILY,
           (operand("input", ranks=_ONE_UP), operand("indices", INDEX_TYPES, ranks=_ONE_UP)), (_AXIS,),
           _gather_elements),
    OpSpec("gatherND", FAMILY,
           (operand("input", ranks=_ONE_UP), operand("indices", INDEX_TYPES, ranks=_ONE_UP)), (),
           _gather_nd, output_ranks=_ANY),
    OpSpec("scatterElements", FAMILY,
           (operand("input", ranks=_ONE_UP), operand("indices", INDEX_TYPES, ranks=_ONE_UP),
            operand("updates", same_type_as="input", ranks=_ONE_UP)), (_AXIS,), _scatter_elements),
    OpSpec("scatterND", FAMILY,
           (operand("input", ranks=_ONE_UP), operand("indices", INDEX_TYPES, ranks=_ONE_UP),
            operand("updates", same_type_as="input")), (), _scatter_nd),
]
