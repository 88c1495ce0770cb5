"""Executor: runs a graph's operations over NumPy arrays.  https://www.w3.org/TR/webnn/#api-mlcontext-dispatch"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.errors import OperationError, WebNNTypeError
from py_core.graph import Graph
from py_core.kernels import KERNELS
from py_core.types import OperandDescriptor


@dataclass
class Step:
    """One kernel call: which values feed it, with which options, and where its outputs go."""

    op: str
    kernel: Callable[..., Any]
    operands: dict[str, int | list[int] | None]
    options: dict[str, Any]
    outputs: list[int]
    out_descs: list[OperandDescriptor]
    label: str


class Executable:
    """A graph ready to run: constants as arrays, steps in order."""

    def __init__(self, graph: Graph, constants: Mapping[int, np.ndarray], steps: list[Step]):
        self.graph = graph
        self.constants = dict(constants)
        self.steps = steps
        self.input_descs = {name: graph.operands[i].desc for name, i in graph.inputs.items()}
        self.output_descs = {name: graph.operands[i].desc for name, i in graph.outputs.items()}

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Compute every output from named input arrays (shapes and types already checked)."""
        values: dict[int, np.ndarray] = dict(self.constants)
        for name, i in self.graph.inputs.items():
            values[i] = inputs[name]
        # integer division by zero, overflow and NaN-producing math are defined by the data, not errors
        with np.errstate(all="ignore"):
            for step in self.steps:
                args: dict[str, Any] = dict(step.options)
                for pname, ref in step.operands.items():
                    if ref is None:
                        args[pname] = None
                    elif isinstance(ref, list):
                        args[pname] = [values[i] for i in ref]
                    else:
                        args[pname] = values[ref]
                try:
                    result = step.kernel(**args)
                except Exception as e:  # a kernel bug must not take the worker down: name the op
                    where = f"[{step.label}] {step.op}" if step.label else step.op
                    raise OperationError(f"{where}: kernel failed: {type(e).__name__}: {e}") from e
                outs = result if isinstance(result, (list, tuple)) else [result]
                for oid, desc, arr in zip(step.outputs, step.out_descs, outs, strict=True):
                    arr = np.asarray(arr)
                    if arr.dtype != np.dtype(desc.data_type.numpy_name) or arr.shape != desc.shape:
                        raise OperationError(
                            f"{step.op}: kernel produced {arr.dtype}{list(arr.shape)}, expected {desc}")
                    values[oid] = arr
        return {name: values[i] for name, i in self.graph.outputs.items()}


def constant_array(desc: OperandDescriptor, data: Any) -> np.ndarray:
    """A constant's data as an array of its descriptor's type and shape (bytes or array-like)."""
    dtype = np.dtype(desc.data_type.numpy_name)
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        arr = np.frombuffer(data, dtype=dtype)
    else:
        arr = np.asarray(data, dtype=dtype)
    if arr.size != desc.element_count:
        raise WebNNTypeError(f"constant: {arr.size} elements given, {desc} needs {desc.element_count}")
    return arr.astype(dtype, copy=False).reshape(desc.shape)


def prepare(graph: Graph) -> Executable:
    """Turn a validated graph into an executable (no optimization; see py_core.compiler for that)."""
    constants = {i: constant_array(graph.operands[i].desc, graph.constants[i]) for i in graph.constants}
    missing = [i for i, o in graph.operands.items() if o.kind == "constant" and i not in constants]
    if missing:
        raise WebNNTypeError(f"build: constant operands {missing} have no data")
    steps = [
        Step(op.op, KERNELS[op.op], op.operands, op.options, op.outputs,
             [graph.operands[i].desc for i in op.outputs], op.label)
        for op in graph.operations
    ]
    return Executable(graph, constants, steps)


def check_inputs(exe: Executable, inputs: Mapping[str, np.ndarray]) -> None:
    """Named inputs must match the graph's inputs exactly, in type and shape."""
    expected = set(exe.input_descs)
    if set(inputs) != expected:
        raise WebNNTypeError(f"inputs {sorted(inputs)} do not match the graph's inputs {sorted(expected)}")
    for name, arr in inputs.items():
        desc = exe.input_descs[name]
        if arr.dtype != np.dtype(desc.data_type.numpy_name) or tuple(arr.shape) != desc.shape:
            raise WebNNTypeError(f"input '{name}' is {arr.dtype}{list(arr.shape)}, the graph expects {desc}")
