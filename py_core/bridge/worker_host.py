"""The worker-side half of the bridge: graphs, tensors and their timeline.
https://www.w3.org/TR/webnn/#api-mlcontext-dispatch

Messages are handled strictly in arrival order, which gives the MLTensor timeline: writes, dispatches and
reads on a tensor happen in the order the page issued them, with no awaiting in between.  Buffers enter
through `fill(array)` callbacks (one copy into the WebAssembly heap) and leave as memoryviews the JS side
copies once; no Pyodide import here, so the module runs and is tested under plain CPython.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.bridge.jsonnum import loads
from py_core.builder import graph_from_json, parse_descriptor
from py_core.compiler.stats import BLAS_MIN_FLOPS, product_flops
from py_core.errors import InvalidStateError, OperationError, WebNNError, WebNNTypeError, internal_error
from py_core.kernels import native
from py_core.kernels.matrix import blas_enabled
from py_core.runtime.executor import Executable, check_inputs, prepare
from py_core.types import OperandDescriptor

Filler = Callable[[np.ndarray], None]


@dataclass
class TensorSlot:
    """An MLTensor's storage and state on the worker side."""

    context: int
    desc: OperandDescriptor
    array: np.ndarray
    readable: bool
    writable: bool
    constant: bool = False
    # set when the last dispatch writing this tensor failed; reads reject with it until the next write
    error: WebNNError | None = None


def _empty(desc: OperandDescriptor) -> np.ndarray:
    return np.zeros(desc.shape, dtype=np.dtype(desc.data_type.numpy_name))


class WorkerHost:
    """Graphs and tensors of every context of one page, keyed by ids the JS side allocates."""

    def __init__(self) -> None:
        self.graphs: dict[int, tuple[int, Executable]] = {}
        self.tensors: dict[int, TensorSlot] = {}

    # -------------------------------------------------------------- graphs

    def build(self, context: int, graph_id: int, graph_json: str, constants: dict[int, Any],
              constant_tensors: dict[int, int]) -> dict[str, Any]:
        """Re-validate a serialized graph, attach constant data, prepare it for dispatch."""
        data = loads(graph_json)
        arrays: dict[int, Any] = {int(k): v for k, v in constants.items()}
        for oid, tid in constant_tensors.items():
            slot = self._tensor(int(tid), context)
            if not slot.constant:
                raise WebNNTypeError("constant(tensor): the tensor was not created by createConstantTensor()")
            arrays[int(oid)] = slot.array
        graph = graph_from_json(data, arrays)
        exe = prepare(graph)  # compiled (py_core.compiler) unless PYODIDE_WEBNN_COMPILER=0
        self.graphs[graph_id] = (context, exe)
        flops = product_flops(graph)
        return {"operations": len(graph.operations), "steps": len(exe.steps), "flops": flops,
                # the C kernels' product is 3-4x SciPy's wasm OpenBLAS: with them, SciPy is never worth loading
                "wantsBlas": flops >= BLAS_MIN_FLOPS and not blas_enabled() and not native.available()}

    def destroy_graph(self, graph_id: int) -> None:
        self.graphs.pop(graph_id, None)

    def _graph(self, graph_id: int, context: int) -> Executable:
        entry = self.graphs.get(graph_id)
        if entry is None or entry[0] != context:
            raise InvalidStateError("MLGraph: the graph has been destroyed")
        return entry[1]

    # -------------------------------------------------------------- tensors

    def create_tensor(self, context: int, tensor_id: int, desc: dict[str, Any], readable: bool,
                      writable: bool, constant: bool = False) -> None:
        d = parse_descriptor(desc, "createTensor")
        self.tensors[tensor_id] = TensorSlot(context, d, _empty(d), readable, writable, constant)

    def tensor_target(self, context: int, tensor_id: int) -> np.ndarray:
        """A fresh array for the tensor's next contents; the caller fills it, then commits it."""
        slot = self._tensor(tensor_id, context)
        return np.empty(slot.desc.shape, dtype=slot.array.dtype)

    def commit_write(self, context: int, tensor_id: int, array: np.ndarray) -> None:
        slot = self._tensor(tensor_id, context)
        slot.array = array
        slot.error = None

    def write_tensor(self, context: int, tensor_id: int, fill: Filler) -> None:
        """writeTensor: copy the page's bytes straight into a new array (one copy)."""
        target = self.tensor_target(context, tensor_id)
        fill(target)
        self.commit_write(context, tensor_id, target)

    def read_tensor(self, context: int, tensor_id: int) -> memoryview:
        """readTensor: a byte view of the tensor's contents; the JS side copies it out once."""
        slot = self._tensor(tensor_id, context)
        if slot.error is not None:
            raise slot.error
        return memoryview(np.ascontiguousarray(slot.array)).cast("B")

    def destroy_tensor(self, tensor_id: int) -> None:
        self.tensors.pop(tensor_id, None)

    def _tensor(self, tensor_id: int, context: int) -> TensorSlot:
        slot = self.tensors.get(tensor_id)
        if slot is None or slot.context != context:
            raise InvalidStateError("MLTensor: the tensor has been destroyed")
        return slot

    # -------------------------------------------------------------- execution

    def dispatch(self, context: int, graph_id: int, inputs: dict[str, int], outputs: dict[str, int]) -> None:
        """dispatch(graph, inputs, outputs): run and store results in the output tensors."""
        exe = self._graph(graph_id, context)
        arrays = {name: self._tensor(tid, context).array for name, tid in inputs.items()}
        try:
            check_inputs(exe, arrays)
            results = exe.run(arrays)
        except WebNNError as e:
            for tid in outputs.values():
                self._tensor(tid, context).error = OperationError(f"dispatch failed: {e}")
            raise
        for name, tid in outputs.items():
            slot = self._tensor(tid, context)
            slot.array = results[name]
            slot.error = None

    def compute(self, context: int, graph_id: int, inputs: dict[str, Any]) -> dict[str, memoryview]:
        """Legacy compute(): named input arrays in, named output byte views out."""
        exe = self._graph(graph_id, context)
        check_inputs(exe, inputs)
        results = exe.run(inputs)
        return {name: memoryview(np.ascontiguousarray(a)).cast("B") for name, a in results.items()}

    def input_target(self, context: int, graph_id: int, name: str) -> np.ndarray:
        """An empty array shaped like the graph input `name`, for compute() to fill."""
        exe = self._graph(graph_id, context)
        desc = exe.input_descs.get(name)
        if desc is None:
            raise WebNNTypeError(f"compute: the graph has no input named '{name}'")
        return _empty(desc)

    def destroy_context(self, context: int) -> None:
        """Release everything a context owns."""
        self.graphs = {k: v for k, v in self.graphs.items() if v[0] != context}
        self.tensors = {k: v for k, v in self.tensors.items() if v.context != context}

    def stats(self) -> dict[str, int]:
        """Counts for tests and the bench: live graphs and tensors, tensor bytes, C kernels loaded (0/1) and
        whether they are the relaxed-SIMD build (0/1)."""
        return {"graphs": len(self.graphs), "tensors": len(self.tensors),
                "tensorBytes": int(sum(s.array.nbytes for s in self.tensors.values())),
                "native": int(native.available()),
                "nativeRelaxed": int(native.available() and native.LOADED_FILE == native.RELAXED_FILE)}


def safe_call(fn: Callable[..., Any], *args: Any) -> list[Any]:
    """Call a host method for JavaScript: [None, result] or [error json, None]; nothing escapes."""
    try:
        return [None, fn(*args)]
    except WebNNError as e:
        return [json.dumps(e.to_json()), None]
    except Exception as e:  # logged with its traceback; the page gets a WebNN error without Python text
        return [json.dumps(internal_error(getattr(fn, "__name__", "worker").lstrip("_"), e).to_json()), None]


HOST = WorkerHost()
