"""quantizeLinear and dequantizeLinear: validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-quantizelinear

Scale and zeroPoint have the same shape, the same rank as the input, and are blockwise broadcast to it: each
of their dimensions must divide the input's (per-tensor: all 1; per-axis: 1 but one axis; blockwise: any
divisors).  int4/uint4 zero points are not among this implementation's data types.
"""

from __future__ import annotations

from py_core.spec.table import OpCall, OpSpec, operand
from py_core.types import FLOATS, DataType, OperandDescriptor

FAMILY = "quantization"

# The spec's constraints tables (int4/uint4 omitted: not supported data types here)
QUANTIZED = frozenset({DataType.UINT8, DataType.INT8, DataType.UINT32, DataType.INT32})


def _check_blockwise(call: OpCall) -> None:
    """scale and zeroPoint: equal shapes, the input's rank, and blockwise broadcastable to the input."""
    x, scale, zero = call.operand("input"), call.operand("scale"), call.operand("zeroPoint")
    if scale.rank != x.rank or zero.rank != x.rank:
        call.fail(f"scale rank {scale.rank} and zeroPoint rank {zero.rank} must equal input rank {x.rank}")
    if scale.shape != zero.shape:
        call.fail(f"scale shape {list(scale.shape)} must equal zeroPoint shape {list(zero.shape)}")
    for axis, (block, size) in enumerate(zip(scale.shape, x.shape, strict=True)):
        if size % block:
            call.fail(f"scale shape {list(scale.shape)} is not blockwise broadcastable to input shape "
                      f"{list(x.shape)}: {block} does not divide {size} on axis {axis}")


def _infer_quantize(call: OpCall) -> OperandDescriptor:
    """Output: zeroPoint's type, input's shape.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-quantizelinear"""
    _check_blockwise(call)
    return call.operand("input").with_type(call.operand("zeroPoint").data_type)


def _infer_dequantize(call: OpCall) -> OperandDescriptor:
    """Output: scale's type, input's shape.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-dequantizelinear"""
    _check_blockwise(call)
    return call.operand("input").with_type(call.operand("scale").data_type)


ROWS: list[OpSpec] = [
    OpSpec("quantizeLinear", FAMILY,
           (operand("input", FLOATS), operand("scale", FLOATS, same_type_as="input"),
            operand("zeroPoint", QUANTIZED)),
           (), _infer_quantize, output_types=QUANTIZED),
    OpSpec("dequantizeLinear", FAMILY,
           (operand("input", QUANTIZED), operand("scale", FLOATS),
            operand("zeroPoint", QUANTIZED, same_type_as="input")),
           (), _infer_dequantize, output_types=FLOATS),
]
