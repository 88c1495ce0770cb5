"""Element-wise binary, comparison, logical and unary operators: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary

Data types follow the spec's constraint tables and per-operator method steps (current Editor's Draft):
binary ops and comparisons accept any data type (b: same as a); logical ops take uint8; isNaN / isInfinite,
roundEven and the transcendental unary ops take float32/float16; abs, neg and sign add the signed integers
int8/int32/int64; identity accepts anything.  Every operand accepts any rank ("N").  No operator here has
options beyond MLOperatorOptions (label), which the builder handles.
"""

from __future__ import annotations

from collections.abc import Callable

from py_core.spec.common import broadcast_shapes
from py_core.spec.table import OpCall, OpSpec, operand
from py_core.types import ALL_TYPES, FLOATS, DataType, OperandDescriptor

FAMILY = "elementwise"

UINT8: frozenset[DataType] = frozenset({DataType.UINT8})
# abs, neg, sign: « float32, float16, int64, int32, int8 » in the method steps
FLOATS_SIGNED_INTS: frozenset[DataType] = FLOATS | {DataType.INT64, DataType.INT32, DataType.INT8}


def _binary(call: OpCall) -> OperandDescriptor:
    a, b = call.operand("a"), call.operand("b")
    return OperandDescriptor(a.data_type, broadcast_shapes(call, a.shape, b.shape))


def _compare(call: OpCall) -> OperandDescriptor:
    a, b = call.operand("a"), call.operand("b")
    return OperandDescriptor(DataType.UINT8, broadcast_shapes(call, a.shape, b.shape))


def _same(name: str) -> Callable[[OpCall], OperandDescriptor]:
    def infer(call: OpCall) -> OperandDescriptor:
        return call.operand(name)

    return infer


def _to_uint8(name: str) -> Callable[[OpCall], OperandDescriptor]:
    def infer(call: OpCall) -> OperandDescriptor:
        return call.operand(name).with_type(DataType.UINT8)

    return infer


def binary_row(name: str, types: frozenset[DataType] = ALL_TYPES) -> OpSpec:
    """An element-wise binary operator with two-way broadcasting.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-binary"""
    return OpSpec(name, FAMILY, (operand("a", types), operand("b", types, same_type_as="a")), (), _binary)


def compare_row(name: str, types: frozenset[DataType] = ALL_TYPES) -> OpSpec:
    """A broadcasting comparison or binary logical operator with a uint8 output.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-logical"""
    return OpSpec(name, FAMILY, (operand("a", types), operand("b", types, same_type_as="a")), (), _compare,
                  output_types=UINT8)


def unary_row(name: str, types: frozenset[DataType]) -> OpSpec:
    """An element-wise unary operator: the output copies the input's descriptor.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-unary"""
    return OpSpec(name, FAMILY, (operand("input", types),), (), _same("input"))


def predicate_row(name: str, param: str, types: frozenset[DataType]) -> OpSpec:
    """A single-input logical operator (logicalNot, isNaN, isInfinite): same shape, uint8 output.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-logical"""
    return OpSpec(name, FAMILY, (operand(param, types),), (), _to_uint8(param), output_types=UINT8)


ROWS: list[OpSpec] = [
    binary_row("add"),
    binary_row("sub"),
    binary_row("mul"),
    binary_row("div"),
    binary_row("max"),
    binary_row("min"),
    binary_row("pow"),
    compare_row("equal"),
    compare_row("notEqual"),
    compare_row("greater"),
    compare_row("greaterOrEqual"),
    compare_row("lesser"),
    compare_row("lesserOrEqual"),
    compare_row("logicalAnd", UINT8),
    compare_row("logicalOr", UINT8),
    compare_row("logicalXor", UINT8),
    # logicalNot, isNaN, isInfinite: the operand is named `a` because that is the member of their
    # MLLogicalNotSupportLimits in opSupportLimits(), the only place JS sees the name (the IDL argument is
    # `input` in newer drafts and in the WPT is_nan / is_infinite vectors, but arguments are positional)
    predicate_row("logicalNot", "a", UINT8),
    predicate_row("isNaN", "a", FLOATS),
    predicate_row("isInfinite", "a", FLOATS),
    unary_row("abs", FLOATS_SIGNED_INTS),
    unary_row("ceil", FLOATS),
    unary_row("cos", FLOATS),
    unary_row("erf", FLOATS),
    unary_row("exp", FLOATS),
    unary_row("floor", FLOATS),
    unary_row("identity", ALL_TYPES),
    unary_row("log", FLOATS),
    unary_row("neg", FLOATS_SIGNED_INTS),
    unary_row("reciprocal", FLOATS),
    unary_row("roundEven", FLOATS),
    unary_row("sign", FLOATS_SIGNED_INTS),
    unary_row("sin", FLOATS),
    unary_row("sqrt", FLOATS),
    unary_row("tan", FLOATS),
]
