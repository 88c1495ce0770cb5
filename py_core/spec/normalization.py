"""Normalization operators (batchNormalization, instanceNormalization, layerNormalization): validation and
shape inference.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-batchnorm"""

from __future__ import annotations

from typing import Any

from py_core.spec.common import check_axes, check_axis
from py_core.spec.mlnumber import cast_number
from py_core.spec.table import DOUBLE, ULONG, ULONGS, OpCall, OpSpec, enum, operand, value
from py_core.types import FLOATS, MAX_RANK, OperandDescriptor

FAMILY = "normalization"
LAYOUTS = ("nchw", "nhwc")


def _check_1d(call: OpCall, name: str, size: int, what: str) -> None:
    """An optional (or required) 1-D operand must have shape [size]."""
    d = call.optional(name)
    if d is not None and list(d.shape) != [size]:
        call.fail(f"{name} shape {list(d.shape)} must be [{size}] ({what})")


def _cast_epsilon(call: OpCall) -> dict[str, Any]:
    # the spec casts epsilon to the input's data type before use (float16 epsilon: nearest float16 value)
    return {"epsilon": cast_number(call["epsilon"], call.operand("input").data_type)}


def _batch_norm(call: OpCall) -> OperandDescriptor:
    """batchNormalization.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-batchnorm"""
    x = call.operand("input")
    axis = check_axis(call, call.options["axis"], x.rank)
    size = x.shape[axis]
    for name in ("mean", "variance", "scale", "bias"):
        _check_1d(call, name, size, f"input dimension {axis} of {list(x.shape)}")
    return x


def _instance_norm(call: OpCall) -> OperandDescriptor:
    """instanceNormalization.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-instancenorm"""
    x = call.operand("input")
    axis = 1 if call.options["layout"] == "nchw" else 3
    for name in ("scale", "bias"):
        _check_1d(call, name, x.shape[axis], f"channels of {call.options['layout']} input {list(x.shape)}")
    return x


def _layer_norm_axes(call: OpCall) -> list[int]:
    """layerNormalization's axes; they default to [1, ..., rank-1] (empty for rank 0 and 1)."""
    axes = call["axes"]
    rank = call.operand("input").rank
    return list(range(1, rank)) if axes is None else check_axes(call, axes, rank)


def _layer_norm(call: OpCall) -> OperandDescriptor:
    """layerNormalization.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-layernorm"""
    x = call.operand("input")
    axes = _layer_norm_axes(call)
    want = [x.shape[a] for a in axes]
    for name in ("scale", "bias"):
        d = call.optional(name)
        if d is not None and list(d.shape) != want:
            call.fail(f"{name} shape {list(d.shape)} must be {want}, the sizes of input {list(x.shape)} "
                      f"along axes {axes}")
    return x


def _layer_norm_options(call: OpCall) -> dict[str, Any]:
    return {"axes": _layer_norm_axes(call), **_cast_epsilon(call)}


ROWS: list[OpSpec] = [
    OpSpec("batchNormalization", FAMILY,
           (operand("input", FLOATS, ranks=(1, MAX_RANK)), operand("mean", ranks=(1, 1), same_type_as="input"),
            operand("variance", ranks=(1, 1), same_type_as="input")),
           (operand("scale", ranks=(1, 1), same_type_as="input", optional=True),
            operand("bias", ranks=(1, 1), same_type_as="input", optional=True),
            value("axis", ULONG, 1), value("epsilon", DOUBLE, 1e-5)),
           _batch_norm, normalize=_cast_epsilon),
    OpSpec("instanceNormalization", FAMILY, (operand("input", FLOATS, ranks=(4, 4)),),
           (operand("scale", ranks=(1, 1), same_type_as="input", optional=True),
            operand("bias", ranks=(1, 1), same_type_as="input", optional=True),
            value("epsilon", DOUBLE, 1e-5), enum("layout", "MLInputOperandLayout", LAYOUTS, "nchw")),
           _instance_norm, normalize=_cast_epsilon),
    OpSpec("layerNormalization", FAMILY, (operand("input", FLOATS),),
           (operand("scale", same_type_as="input", optional=True),
            operand("bias", same_type_as="input", optional=True),
            value("axes", ULONGS, None), value("epsilon", DOUBLE, 1e-5)),
           _layer_norm, normalize=_layer_norm_options),
]
