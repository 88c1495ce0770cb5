"""Validation and shape inference for every WebNN operator, one module per family.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

from py_core.spec import (
    activation,
    convolution,
    elementwise,
    gather,
    matrix,
    normalization,
    pooling,
    quantization,
    recurrent,
    reduction,
    shape,
)
from py_core.spec.table import OpSpec, Registry, validate

FAMILIES = (
    elementwise,
    activation,
    reduction,
    normalization,
    convolution,
    pooling,
    matrix,
    shape,
    gather,
    recurrent,
    quantization,
)

REGISTRY = Registry()
for _family in FAMILIES:
    REGISTRY.add(_family.ROWS)

OPS: dict[str, OpSpec] = REGISTRY.ops

__all__ = ["OPS", "FAMILIES", "OpSpec", "validate"]
