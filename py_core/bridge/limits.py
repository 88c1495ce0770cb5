"""opSupportLimits(): what this implementation accepts, derived from the spec table.
https://www.w3.org/TR/webnn/#api-mlcontext-opsupportlimits"""

from __future__ import annotations

from typing import Any

from py_core.spec import OPS
from py_core.spec.table import OpSpec, operand_types
from py_core.types import ALL_TYPES, MAX_RANK, MAX_TENSOR_BYTE_LENGTH, DataType

# The layout most layout-taking operators (conv2d, convTranspose2d, the pools) run fastest in: the first entry of
# their `layouts` trait (py_core/kernels/traits.py; measured beside it in kernels/convolution.py and pooling.py),
# as py_core.kernels.preferred_layout() computes it.  Written out because the page's Pyodide, which answers
# opSupportLimits(), has no NumPy to import the kernels with; tests/core/test_compiler_layout.py checks that the
# two agree.  onnxruntime-web's WebNN EP reads it and lays its graph out to match (docs/compatibility.md).
PREFERRED_INPUT_LAYOUT = "nhwc"

# The spec lists data types in this order in its tables; keep it for stable output.
_ORDER = [t.value for t in DataType]


def _types(types: frozenset[DataType]) -> list[str]:
    return [t for t in _ORDER if DataType(t) in types]


def _tensor_limits(types: frozenset[DataType], ranks: tuple[int, int]) -> dict[str, Any]:
    return {"dataTypes": _types(types), "rankRange": {"min": ranks[0], "max": ranks[1]}}


def op_limits(spec: OpSpec) -> dict[str, Any]:
    """MLOpSupportLimits member for one operator: per operand and output."""
    out: dict[str, Any] = {}
    for p in spec.operand_params:
        out[p.name] = _tensor_limits(operand_types(spec, p.name), p.ranks)
    first = spec.operand_params[0]
    out_types = spec.output_types if spec.output_types is not None else operand_types(spec, first.name)
    out[spec.limits_output_name] = _tensor_limits(out_types, spec.output_ranks or first.ranks)
    return out


def op_support_limits() -> dict[str, Any]:
    """The whole MLOpSupportLimits dictionary."""
    graph_limits = _tensor_limits(ALL_TYPES, (0, MAX_RANK))
    limits: dict[str, Any] = {
        "preferredInputLayout": PREFERRED_INPUT_LAYOUT,
        "maxTensorByteLength": MAX_TENSOR_BYTE_LENGTH,
        "input": graph_limits,
        "constant": graph_limits,
        "output": graph_limits,
    }
    for name, spec in OPS.items():
        limits[name] = op_limits(spec)
    return limits
