"""Validation and shape inference for every WebNN operator, one module per family.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder"""

from __future__ import annotations

import importlib

from py_core.spec.table import OpSpec, Registry, bind, infer_outputs, normalize, validate

# One module per family here and, with the same name, in py_core/kernels/.
FAMILY_NAMES = (
    "elementwise",
    "activation",
    "reduction",
    "normalization",
    "convolution",
    "pooling",
    "matrix",
    "shape",
    "gather",
    "recurrent",
    "quantization",
)

FAMILIES = tuple(importlib.import_module(f"py_core.spec.{name}") for name in FAMILY_NAMES)

REGISTRY = Registry()
for _family in FAMILIES:
    REGISTRY.add(_family.ROWS)

OPS: dict[str, OpSpec] = REGISTRY.ops

__all__ = ["FAMILIES", "FAMILY_NAMES", "OPS", "OpSpec", "bind", "infer_outputs", "normalize", "validate"]
