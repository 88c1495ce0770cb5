"""Element-wise binary, comparison, logical and unary operators: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary"""

from __future__ import annotations

from py_core.spec.common import broadcast_shapes
from py_core.spec.table import OpCall, OpSpec, operand
from py_core.types import ALL_TYPES, DataType, OperandDescriptor

FAMILY = "elementwise"


def _binary(call: OpCall) -> OperandDescriptor:
    a, b = call.operand("a"), call.operand("b")
    return OperandDescriptor(a.data_type, broadcast_shapes(call, a.shape, b.shape))


def binary_row(name: str, types: frozenset[DataType] = ALL_TYPES) -> OpSpec:
    """An element-wise binary operator with two-way broadcasting."""
    return OpSpec(name, FAMILY, (operand("a", types), operand("b", types, same_type_as="a")), (), _binary)


ROWS: list[OpSpec] = [
    binary_row("add"),
    binary_row("sub"),
    binary_row("mul"),
    binary_row("div"),
    binary_row("max"),
    binary_row("min"),
    binary_row("pow"),
]
