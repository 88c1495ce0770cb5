"""gemm and matmul: validation and shape inference.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-matmul"""

from __future__ import annotations

import math
import struct
from typing import Any

from py_core.spec.common import broadcast_shapes, check_unidirectional
from py_core.spec.table import BOOLEAN, FLOAT, OpCall, OpSpec, operand, value
from py_core.types import FLOATS, MAX_RANK, OperandDescriptor

FAMILY = "matrix"


def to_float32(call: OpCall, name: str, v: float) -> float:
    """WebIDL `float` conversion: round to float32; a value out of float32 range is a TypeError."""
    try:
        rounded: float = struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        call.fail(f"{name} ({v}) is out of the float range")
    if not math.isfinite(rounded):
        call.fail(f"{name} ({v}) is out of the float range")
    return rounded


def _gemm(call: OpCall) -> OperandDescriptor:
    a, b = call.operand("a"), call.operand("b")
    shape_a = a.shape[::-1] if call["aTranspose"] else a.shape
    shape_b = b.shape[::-1] if call["bTranspose"] else b.shape
    if shape_a[1] != shape_b[0]:
        call.fail(f"the columns of a ({shape_a[1]}, shape {list(a.shape)}, aTranspose {call['aTranspose']}) "
                  f"must equal the rows of b ({shape_b[0]}, shape {list(b.shape)}, "
                  f"bTranspose {call['bTranspose']})")
    out = (shape_a[0], shape_b[1])
    c = call.optional("c")
    if c is not None:
        check_unidirectional(call, c.shape, out, "c")
    _gemm_options(call)  # alpha and beta must be floats
    return a.with_shape(out)


def _gemm_options(call: OpCall) -> dict[str, Any]:
    # MLGemmOptions.alpha and beta are IDL floats: JS numbers arrive rounded to float32
    return {name: to_float32(call, name, call[name]) for name in ("alpha", "beta")}


def _matmul(call: OpCall) -> OperandDescriptor:
    a, b = call.operand("a"), call.operand("b")
    if a.shape[-1] != b.shape[-2]:
        call.fail(f"the columns of a ({a.shape[-1]}, shape {list(a.shape)}) must equal the rows of b "
                  f"({b.shape[-2]}, shape {list(b.shape)})")
    batch = broadcast_shapes(call, a.shape[:-2], b.shape[:-2], "batch dimensions of a and b")
    return a.with_shape((*batch, a.shape[-2], b.shape[-1]))


ROWS: list[OpSpec] = [
    OpSpec(
        "gemm", FAMILY,
        (operand("a", FLOATS, ranks=(2, 2)), operand("b", FLOATS, ranks=(2, 2), same_type_as="a")),
        (
            operand("c", FLOATS, ranks=(0, 2), same_type_as="a", optional=True),
            value("alpha", FLOAT, 1.0),
            value("beta", FLOAT, 1.0),
            value("aTranspose", BOOLEAN, False),
            value("bTranspose", BOOLEAN, False),
        ),
        _gemm,
        normalize=_gemm_options,
    ),
    # 1-D operands are not allowed: "If either rankA or rankB is less than 2, then throw a TypeError"
    OpSpec(
        "matmul", FAMILY,
        (operand("a", FLOATS, ranks=(2, MAX_RANK)), operand("b", FLOATS, ranks=(2, MAX_RANK), same_type_as="a")),
        (),
        _matmul,
        output_ranks=(2, MAX_RANK),
    ),
]
