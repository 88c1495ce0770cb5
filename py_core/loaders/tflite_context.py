"""What TFLite's mapping functions share: the model's tensor and operator records, the tensor-type table,
load-time dequantization, and `MappingContext`, the view of one operator a mapping function works through.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

It sits below `tflite.py` (the reader and the walk) and `tflite_ops.py` / `tflite_shape_ops.py` (the
mappings), so that the walk imports the mappings and the mappings import only this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from py_core.errors import NotSupportedError

# TensorType -> (NumPy dtype of stored data, MLOperandDataType or None when WebNN has no such type)
TENSOR_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("float32", "float32"), 1: ("float16", "float16"), 2: ("int32", "int32"), 3: ("uint8", "uint8"),
    4: ("int64", "int64"), 6: ("bool", "uint8"), 7: ("int16", None), 9: ("int8", "int8"),
    10: ("float64", None), 12: ("uint64", "uint64"), 15: ("uint32", "uint32"), 16: ("uint16", None),
}

@dataclass
class Tensor:
    """One TFLite tensor: static shape, types, and for constants the stored (still encoded) data."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    webnn_type: str | None
    data: np.ndarray | None = None
    quantization: tuple[np.ndarray, np.ndarray, int] | None = None  # scale, zero point, axis
    sparsity: Any = None

    @property
    def desc(self) -> dict[str, Any]:
        return {"dataType": self.webnn_type, "shape": list(self.shape)}


@dataclass
class Operator:
    """One TFLite operator: its name (builtin or custom code), tensor indices and decoded options."""

    index: int
    name: str
    inputs: list[int]
    outputs: list[int]
    options: Any = None
    custom_options: bytes = b""


def dequantize(t: Tensor, data: np.ndarray) -> np.ndarray:
    """DEQUANTIZE at load time: float16 -> float32 exactly; int8/uint8 with scale, zero point -> float32."""
    if data.dtype == np.float16:
        return data.astype(np.float32)
    if t.quantization is None:
        raise NotSupportedError(f"DEQUANTIZE of {t.dtype} tensor '{t.name}' without quantization parameters")
    scale, zero_point, axis = t.quantization
    shape = [1] * data.ndim
    if scale.size > 1:
        shape[axis] = scale.size
    # (q - zero_point) * scale in float32, as TFLite's reference kernel computes it
    return ((data.astype(np.int64) - zero_point.reshape(shape)).astype(np.float32)
            * scale.reshape(shape)).astype(np.float32)


def type_code(dtype: np.dtype) -> int:
    """The TensorType code whose stored NumPy dtype is `dtype` (-1 when there is none)."""
    for code, (name, _) in TENSOR_TYPES.items():
        if np.dtype(name) == dtype:
            return code
    return -1


class EmitterState(Protocol):
    """What a MappingContext reads of the walk in progress (`tflite.Emitter`)."""

    builder: Any
    constants: dict[int, np.ndarray]

    @property
    def tensors(self) -> Sequence[Tensor]: ...

    def operand(self, i: int) -> Any: ...


class MappingContext:
    """What a mapping function sees: its operator, input/output tensors and the builder."""

    def __init__(self, emitter: EmitterState, op: Operator):
        self.emitter = emitter
        self.op = op
        self.options = op.options
        tensors = emitter.tensors
        self.label = tensors[op.outputs[0]].name if op.outputs else op.name

    def has(self, k: int) -> bool:
        """Whether optional input k is present."""
        return k < len(self.op.inputs) and self.op.inputs[k] >= 0

    def tensor(self, k: int) -> Tensor:
        return self.emitter.tensors[self.op.inputs[k]]

    def out(self, k: int = 0) -> Tensor:
        return self.emitter.tensors[self.op.outputs[k]]

    def shape(self, k: int) -> tuple[int, ...]:
        """Static shape of input k (a folded constant's own shape when it was folded)."""
        i = self.op.inputs[k]
        if i in self.emitter.constants:
            return tuple(self.emitter.constants[i].shape)
        return self.emitter.tensors[i].shape

    def operand(self, k: int) -> Any:
        """Input k as a builder operand."""
        return self.emitter.operand(self.op.inputs[k])

    def is_const(self, k: int) -> bool:
        return self.op.inputs[k] in self.emitter.constants

    def const(self, k: int) -> np.ndarray:
        """Input k's constant data; NotSupportedError when it is computed at run time."""
        i = self.op.inputs[k]
        if i not in self.emitter.constants:
            raise NotSupportedError(f"input {k} ('{self.tensor(k).name}') must be a constant")
        return self.emitter.constants[i]

    def emit(self, name: str, *args: Any, **options: Any) -> Any:
        """One builder call, labelled with the operator's output tensor name."""
        return self.emitter.builder.op(name, *args, label=self.label, **options)

    def fused(self, x: Any, act: int) -> Any:
        """x after a fused activation (tflite.ActivationFunctionType)."""
        if act == 0:
            return x
        if act == 1:
            return self.emit("relu", x)
        if act == 2:
            return self.emit("clamp", x, minValue=-1.0, maxValue=1.0)
        if act == 3:
            return self.emit("clamp", x, minValue=0.0, maxValue=6.0)
        if act == 4:
            return self.emit("tanh", x)
        raise NotSupportedError(f"fused activation {act} (SIGN_BIT or unknown) is not supported")

    def constant(self, data: np.ndarray) -> Any:
        """A new builder constant for data computed while mapping (resize weights, indices)."""
        code = type_code(data.dtype)
        webnn_type = TENSOR_TYPES[code][1]
        return self.emitter.builder.constant({"dataType": webnn_type, "shape": list(data.shape)},
                                             np.ascontiguousarray(data))

    def check_float(self) -> None:
        """Quantized activations (int8/uint8 tensors with scales) have no mapping yet: say so."""
        tensors = self.emitter.tensors
        for i in [*self.op.inputs, *self.op.outputs]:
            if i >= 0 and i not in self.emitter.constants and tensors[i].quantization is not None:
                raise NotSupportedError(f"quantized tensor '{tensors[i].name}' ({tensors[i].dtype}) is not "
                                        "supported")
