"""Activation operators (relu, sigmoid, clamp, softmax, gelu, ...): validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from py_core.spec.common import broadcast_shapes, check_axis
from py_core.spec.mlnumber import cast_number
from py_core.spec.table import DOUBLE, NUMBER, ULONG, OpCall, OpSpec, operand, value
from py_core.types import FLOATS, INT_RANGES, MAX_RANK, DataType, OperandDescriptor

FAMILY = "activation"

# relu and prelu also accept the signed integer types int32, int64 and int8
FLOATS_SIGNED_INTS: frozenset[DataType] = FLOATS | {DataType.INT32, DataType.INT64, DataType.INT8}


def _same(call: OpCall) -> OperandDescriptor:
    return call.operand("input")


def _cast_options(*names: str) -> Callable[[OpCall], dict[str, Any]]:
    """The named double options cast to the input's data type (spec steps)."""

    def normalize(call: OpCall) -> dict[str, Any]:
        return {name: cast_number(call[name], call.operand("input").data_type) for name in names}

    return normalize


def unary_row(name: str, types: frozenset[DataType] = FLOATS, options: tuple[Any, ...] = ()) -> OpSpec:
    """An element-wise activation `name(input, options)`; double options are cast to the input type."""
    names = tuple(p.name for p in options)
    return OpSpec(name, FAMILY, (operand("input", types),), options, _same,
                  normalize=_cast_options(*names) if names else None)


def _clamp_bounds(call: OpCall) -> tuple[float | int, float | int]:
    """clamp's bounds cast to the input type, open ones at the type's range; minValue > maxValue is a TypeError.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-clamp"""
    x = call.operand("input")
    dt = x.data_type
    lo, hi = INT_RANGES.get(dt, (-math.inf, math.inf))
    bounds = []
    for name, open_bound in (("minValue", lo), ("maxValue", hi)):
        v = call.options[name]
        # absent, or NaN (WPT "minValue as NaN"/"maxValue as NaN": no clamping), means an open bound
        if v is None or (isinstance(v, float) and math.isnan(v)):
            bounds.append(open_bound)
        else:
            bounds.append(cast_number(v, dt))
    if bounds[0] > bounds[1]:
        call.fail(f"minValue ({call.options['minValue']!r} -> {bounds[0]!r}) must not be greater than "
                  f"maxValue ({call.options['maxValue']!r} -> {bounds[1]!r}) for {dt.value} input")
    return bounds[0], bounds[1]


def _clamp(call: OpCall) -> OperandDescriptor:
    _clamp_bounds(call)
    return call.operand("input")


def _clamp_options(call: OpCall) -> dict[str, Any]:
    lo, hi = _clamp_bounds(call)
    return {"minValue": lo, "maxValue": hi}


def _prelu(call: OpCall) -> OperandDescriptor:
    """prelu: input and slope bidirectionally broadcast (current spec text).
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-prelu"""
    x, slope = call.operand("input"), call.operand("slope")
    return x.with_shape(broadcast_shapes(call, x.shape, slope.shape, "input and slope"))


def _softmax(call: OpCall) -> OperandDescriptor:
    """softmax: axis must be < rank.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-softmax-method"""
    x = call.operand("input")
    check_axis(call, call.options["axis"], x.rank)
    return x


ROWS: list[OpSpec] = [
    unary_row("relu", FLOATS_SIGNED_INTS),
    unary_row("sigmoid"),
    unary_row("tanh"),
    unary_row("gelu"),
    unary_row("softplus"),
    unary_row("softsign"),
    unary_row("hardSwish"),
    unary_row("elu", options=(value("alpha", DOUBLE, 1.0),)),
    unary_row("leakyRelu", options=(value("alpha", DOUBLE, 0.01),)),
    unary_row("hardSigmoid", options=(value("alpha", DOUBLE, 0.2), value("beta", DOUBLE, 0.5))),
    unary_row("linear", options=(value("alpha", DOUBLE, 1.0), value("beta", DOUBLE, 0.0))),
    OpSpec("clamp", FAMILY, (operand("input"),),
           (value("minValue", NUMBER, None), value("maxValue", NUMBER, None)), _clamp, normalize=_clamp_options),
    OpSpec("prelu", FAMILY, (operand("input", FLOATS_SIGNED_INTS), operand("slope", same_type_as="input")),
           (), _prelu),
    OpSpec("softmax", FAMILY, (operand("input", FLOATS, ranks=(1, MAX_RANK)), value("axis", ULONG)), (), _softmax),
]
