"""The worker-side half of the bridge: graphs, tensors and their timeline.
https://www.w3.org/TR/webnn/#api-mlcontext-dispatch

Messages are handled strictly in arrival order, which gives the MLTensor timeline: writes, dispatches and
reads on a tensor happen in the order the page issued them, with no awaiting in between.  Buffers enter
through `fill(array)` callbacks or at `write_address` (one copy into the WebAssembly heap) and leave from
`read_address` (the JS side copies the bytes at that address once); no Pyodide import here, so the module runs
and is tested under plain CPython.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.bridge.jsonnum import loads
from py_core.builder import graph_from_json, parse_descriptor
from py_core.compiler.stats import BLAS_MIN_FLOPS, product_flops
from py_core.errors import InvalidStateError, OperationError, WebNNError, WebNNTypeError, internal_error
from py_core.kernels import native
from py_core.kernels.matrix import blas_enabled
from py_core.runtime.executor import Executable, check_inputs, held_bytes, prepare
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
    # direct mode: the tensor's entry in the address table (WorkerHost.table), else -1
    index: int = -1


def mark_failed(slots: Iterable[TensorSlot], cause: object) -> None:
    """A failed dispatch's outputs: each keeps this error (its readTensor rejects) until a dispatch succeeds."""
    for slot in slots:
        slot.error = OperationError(f"dispatch failed: {cause}")


def _address(array: np.ndarray) -> int:
    """Where an array's bytes start (in Pyodide: an offset into the WebAssembly heap)."""
    return int(array.__array_interface__["data"][0])


def _empty(desc: OperandDescriptor) -> np.ndarray:
    return np.zeros(desc.shape, dtype=np.dtype(desc.data_type.numpy_name))


# Direct mode: outputs of at least this many bytes are taken over from the executor when nothing else holds them
# (a copy into the tensor's own array costs more than the bookkeeping from here on); smaller ones are copied.
ADOPT_MIN_BYTES = 64 << 10


def _refs_alone() -> int:
    """sys.getrefcount of an object held by one dict and one local name only (the interpreter's own count,
    measured rather than assumed)."""
    held = {"x": np.empty(1)}
    alone = held["x"]
    return sys.getrefcount(alone)


_REFS_ALONE = _refs_alone()


@dataclass
class Bound:
    """A dispatch's graph and tensors, checked once (direct mode): what `WorkerHost.run_bound` runs."""

    exe: Executable
    inputs: tuple[tuple[str, TensorSlot], ...]
    outputs: tuple[tuple[str, TensorSlot], ...]
    graph: int = 0
    c: dict[str, Any] | None = None  # the graph's C call for these tensors (WorkerHost.bound_c)


class WorkerHost:
    """Graphs and tensors of every context of one page, keyed by ids the JS side allocates."""

    def __init__(self) -> None:
        self.graphs: dict[int, tuple[int, Executable]] = {}
        self.tensors: dict[int, TensorSlot] = {}
        self._checked: set[tuple[Any, ...]] = set()  # (graph, bindings) whose descriptors match (dispatch)
        # Direct mode (the engine's `direct` switch): the worker's JavaScript writes and reads tensors
        # at their heap addresses with no Python call, and dispatches through `bind` once and `run_bound` after.
        # Each tensor then owns its array alone (nothing else refers to it: writes land in it in place) and its
        # address is kept in `table` (uintp: uint32 in wasm32; one entry per tensor index the JavaScript side
        # chose), which JavaScript reads at each write and read.
        self.direct = False
        self.table = np.zeros(256, dtype=np.uintp)
        self.bound: dict[int, Bound] = {}
        self.adopted = 0  # outputs taken over rather than copied (stats)
        # graph -> its whole-graph C call (the compiled plan's Executable.direct(), where there is one), or None
        self.c_runs: dict[int, Any] = {}

    # -------------------------------------------------------------- graphs

    def build(self, context: int, graph_id: int, graph_json: str, constants: dict[int, Any],
              constant_tensors: dict[int, int]) -> dict[str, Any]:
        """Re-validate a serialized graph, attach constant data, prepare it for dispatch.  Takes `constants` (the
        dict is emptied): from here on the graph alone holds them, and the compiler frees each weight it replaces."""
        data = loads(graph_json)
        arrays: dict[int, Any] = {int(k): constants.pop(k) for k in list(constants)}
        for oid, tid in constant_tensors.items():
            slot = self._tensor(int(tid), context)
            if not slot.constant:
                raise WebNNTypeError("constant(tensor): the tensor was not created by createConstantTensor()")
            arrays[int(oid)] = slot.array
        graph = graph_from_json(data, arrays)
        arrays.clear()
        exe = prepare(graph, take=True)  # compiled (py_core.compiler) unless PYODIDE_WEBNN_COMPILER=0
        self.graphs[graph_id] = (context, exe)
        flops = product_flops(graph)
        return {"operations": len(graph.operations), "steps": len(exe.steps), "flops": flops,
                # the C kernels' product is 3-4x SciPy's wasm OpenBLAS: with them, SciPy is never worth loading
                "wantsBlas": flops >= BLAS_MIN_FLOPS and not blas_enabled() and not native.available()}

    def destroy_graph(self, graph_id: int) -> None:
        self.graphs.pop(graph_id, None)
        self.c_runs.pop(graph_id, None)
        self.bound.clear()

    def _graph(self, graph_id: int, context: int) -> Executable:
        entry = self.graphs.get(graph_id)
        if entry is None or entry[0] != context:
            raise InvalidStateError("MLGraph: the graph has been destroyed")
        return entry[1]

    # -------------------------------------------------------------- tensors

    def create_tensor(self, context: int, tensor_id: int, desc: dict[str, Any], readable: bool,
                      writable: bool, constant: bool = False, index: int = -1) -> int:
        """A new tensor, zeroed; in direct mode with its address at `index` of the table: returns the table's
        address (it moves when the table grows), else 0."""
        d = parse_descriptor(desc, "createTensor")
        slot = TensorSlot(context, d, _empty(d), readable, writable, constant)
        self.tensors[tensor_id] = slot
        if not self.direct or index < 0:
            return 0
        if index >= len(self.table):
            table = np.zeros(max(2 * len(self.table), index + 1), dtype=np.uintp)
            table[: len(self.table)] = self.table
            self.table = table
        slot.index = index
        self.table[index] = _address(slot.array)
        return _address(self.table)

    def _store(self, slot: TensorSlot, array: np.ndarray) -> None:
        """Make `array` the tensor's contents (and its address the table's entry in direct mode)."""
        slot.array = array
        if slot.index >= 0:
            self.table[slot.index] = _address(array)

    def tensor_target(self, context: int, tensor_id: int) -> np.ndarray:
        """A fresh array for the tensor's next contents; the caller fills it, then commits it."""
        slot = self._tensor(tensor_id, context)
        return np.empty(slot.desc.shape, dtype=slot.array.dtype)

    def commit_write(self, context: int, tensor_id: int, array: np.ndarray) -> None:
        slot = self._tensor(tensor_id, context)
        self._store(slot, array)
        slot.error = None

    def write_tensor(self, context: int, tensor_id: int, fill: Filler) -> None:
        """writeTensor: copy the page's bytes straight into a new array (one copy)."""
        target = self.tensor_target(context, tensor_id)
        fill(target)
        self.commit_write(context, tensor_id, target)

    def write_address(self, context: int, tensor_id: int, nbytes: int) -> int:
        """writeTensor: where to copy the page's `nbytes` bytes, in a new array already committed (the JS side
        copies into it before any other Python code runs)."""
        target = self.tensor_target(context, tensor_id)
        if target.nbytes != nbytes:
            raise OperationError(f"writeTensor: the tensor holds {target.nbytes} bytes, not {nbytes}")
        self.commit_write(context, tensor_id, target)
        return _address(target)

    def read_address(self, context: int, tensor_id: int, nbytes: int) -> int:
        """readTensor: where the tensor's `nbytes` bytes are, for the JS side to copy them out of the heap at once
        (no Python code may run in between: the slot keeps the array alive until the next write or dispatch)."""
        slot = self._tensor(tensor_id, context)
        if slot.error is not None:
            raise slot.error
        array = slot.array
        if not array.flags.c_contiguous:  # a view the executor returned: the slot keeps the contiguous copy
            array = np.ascontiguousarray(array).reshape(array.shape)
            self._store(slot, array)
        if array.nbytes != nbytes:
            raise OperationError(f"readTensor: the tensor holds {array.nbytes} bytes, not {nbytes}")
        return _address(array)

    def destroy_tensor(self, tensor_id: int) -> None:
        self.tensors.pop(tensor_id, None)
        self.bound.clear()

    def _tensor(self, tensor_id: int, context: int) -> TensorSlot:
        slot = self.tensors.get(tensor_id)
        if slot is None or slot.context != context:
            raise InvalidStateError("MLTensor: the tensor has been destroyed")
        return slot

    # -------------------------------------------------------------- execution

    def _check_bindings(self, exe: Executable, key: tuple[Any, ...], inputs: dict[str, int],
                        outputs: dict[str, int], context: int) -> None:
        """Each bound tensor's descriptor is the graph's, inputs and outputs alike; checked once per graph and
        bindings (tensor ids are never reused, a slot's descriptor never changes, and its array always has that
        descriptor's type and shape: writes allocate it, dispatches store outputs the executor checked)."""
        if key in self._checked:
            return
        check_inputs(exe, {name: self._tensor(tid, context).array for name, tid in inputs.items()})
        if set(outputs) != set(exe.output_descs):
            raise WebNNTypeError(f"outputs {sorted(outputs)} do not match the graph's outputs "
                                 f"{sorted(exe.output_descs)}")
        for name, tid in outputs.items():
            desc = self._tensor(tid, context).desc
            if desc != exe.output_descs[name]:
                raise WebNNTypeError(f"output '{name}' is {desc}, the graph expects {exe.output_descs[name]}")
        if len(self._checked) >= 1024:
            self._checked.clear()
        self._checked.add(key)

    def dispatch(self, context: int, graph_id: int, inputs: dict[str, int], outputs: dict[str, int]) -> None:
        """dispatch(graph, inputs, outputs): run and store results in the output tensors."""
        exe = self._graph(graph_id, context)
        arrays = {name: self._tensor(tid, context).array for name, tid in inputs.items()}
        try:
            self._check_bindings(exe, (graph_id, *inputs.items(), None, *outputs.items()), inputs, outputs, context)
            results = exe.run(arrays)
        except WebNNError as e:
            mark_failed((self._tensor(tid, context) for tid in outputs.values()), e)
            raise
        for name, tid in outputs.items():
            slot = self._tensor(tid, context)
            slot.array = results[name]
            slot.error = None

    def bind(self, bound_id: int, context: int, graph_id: int, inputs: dict[str, int],
             outputs: dict[str, int]) -> int:
        """Direct mode: check a dispatch's graph and tensors once and keep them as `bound_id` for `run_bound`.
        Every destroy (tensor, graph, context) forgets all bindings; the JavaScript side forgets its ids then.
        Returns 1 when the graph is one C call the worker's JavaScript can make itself (`bound_c`), else 0."""
        exe = self._graph(graph_id, context)
        self._check_bindings(exe, (graph_id, *inputs.items(), None, *outputs.items()), inputs, outputs, context)
        ins = tuple((name, self._tensor(tid, context)) for name, tid in inputs.items())
        outs = tuple((name, self._tensor(tid, context)) for name, tid in outputs.items())
        if len(self.bound) >= 1024:
            self.bound.clear()
        b = Bound(exe, ins, outs, graph_id)
        b.c = self._c_call(b, inputs, outputs)
        self.bound[bound_id] = b
        return int(b.c is not None)

    def _c_run(self, graph_id: int, exe: Executable) -> Any:
        """The graph's whole-graph C call, made once per graph: the compiled plan's `Executable.direct()` (a
        DirectRun: input and output buffers of its own, the C function's table index and arguments), or None
        where there is no such plan (a step in Python, a non-float32 input, the plan off or absent)."""
        if graph_id not in self.c_runs:
            make = getattr(exe, "direct", None)
            run = None
            if callable(make):
                try:
                    run = make()
                except Exception:  # the plan's lowering refused: the dispatch stays on run_bound
                    run = None
            self.c_runs[graph_id] = run
        return self.c_runs[graph_id]

    def bound_c(self, bound_id: int) -> dict[str, Any] | None:
        """For the worker's JavaScript, the bound graph's C call with no Python: {fn: function-table index, words,
        count, table: its arguments, inputs / outputs: [[tensor id, buffer address, bytes, table entries]],
        inPlace}; in place, the engine writes each tensor's array address into its table entries and calls, else
        it copies each input tensor's bytes to its buffer, calls, copies each output buffer into its tensor."""
        return self.bound[bound_id].c

    def _c_call(self, b: Bound, inputs: dict[str, int], outputs: dict[str, int]) -> dict[str, Any] | None:
        """bound_c's value, or None (no C call, or a bound tensor that does not match its buffer in size)."""
        run = self._c_run(b.graph, b.exe)
        if run is None:
            return None
        sides = []
        for pairs, tids, where, entries in ((b.inputs, inputs, run.inputs, run.input_entries),
                                            (b.outputs, outputs, run.outputs, run.output_entries)):
            side = []
            for name, slot in pairs:
                at, nbytes = where.get(name, (0, -1))
                if nbytes != slot.array.nbytes or slot.index < 0:
                    return None
                side.append([tids[name], int(at), int(nbytes), [int(i) for i in entries.get(name, ())]])
            sides.append(side)
        # in place: the plan reads the input tensors' arrays and writes the output tensors' (their addresses in its
        # table, written per dispatch: an array may move between dispatches), no copy either way; not when an output
        # tensor is also an input or another output (the page refuses both; then the copies keep them apart)
        outs = list(outputs.values())
        in_place = len(set(outs)) == len(outs) and not set(outs) & set(inputs.values())
        return {"fn": int(run.fn), "words": int(run.words), "count": int(run.count), "table": int(run.table),
                "inputs": sides[0], "outputs": sides[1], "inPlace": in_place}

    def run_bound(self, bound_id: int) -> None:
        """Direct mode's dispatch: run a bound graph; each output lands in its tensor's own array (copied), or,
        from ADOPT_MIN_BYTES, becomes it when the executor's array is a fresh one nothing else refers to."""
        b = self.bound.get(bound_id)
        if b is None:
            raise InvalidStateError("dispatch: the graph or a tensor has been destroyed")
        arrays = {name: slot.array for name, slot in b.inputs}
        try:
            results = b.exe.run(arrays)
        except WebNNError as e:
            mark_failed((slot for _, slot in b.outputs), e)
            raise
        for name, slot in b.outputs:
            r = results[name]
            slot.error = None
            if r is slot.array:
                continue
            # held by `results` and `r` alone; any other holder (a kernel's cache, another output, an input) and
            # the tensor keeps its own array, which gets a copy
            if (r.nbytes >= ADOPT_MIN_BYTES and r.base is None and r.flags.c_contiguous and r.flags.writeable
                    and sys.getrefcount(r) <= _REFS_ALONE):
                self._store(slot, r)
                self.adopted += 1
            else:
                np.copyto(slot.array, r)

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
        self.c_runs = {k: v for k, v in self.c_runs.items() if k in self.graphs}
        self.bound.clear()

    def memory(self) -> dict[str, int]:
        """What the engine holds, in bytes, each buffer counted once: constants kept as given, pre-packed weights,
        compiled plans (intermediates, scratch, whole-graph C calls' buffers), tensors; `engineBytes` their sum."""
        seen: set[int] = set()
        out = {"constantBytes": 0, "weightBytes": 0, "planBytes": 0}
        for _, exe in self.graphs.values():
            for key, n in exe.memory(seen).items():
                out[{"constants": "constantBytes", "weights": "weightBytes", "plan": "planBytes"}[key]] += n
        for run in self.c_runs.values():
            out["planBytes"] += sum(held_bytes(a, seen) for a in (run.keep if run is not None else ()))
        out["tensorBytes"] = sum(held_bytes(s.array, seen) for s in self.tensors.values())
        out["engineBytes"] = sum(out.values())
        return out

    def stats(self) -> dict[str, int]:
        """Counts for tests and the bench: live graphs and tensors, the engine's bytes (memory()), C kernels loaded
        (0/1) and whether they are the relaxed-SIMD build (0/1)."""
        return {"graphs": len(self.graphs), "tensors": len(self.tensors), **self.memory(),
                "direct": int(self.direct), "adopted": self.adopted,
                "native": int(native.available()),
                "nativeRelaxed": int(native.available() and native.LOADED_FILE == native.RELAXED_FILE)}


def error_json(fn: Callable[..., Any], e: Exception) -> str:
    """The JSON of the WebNN error `fn` raised; any other exception is logged with its traceback and becomes a
    WebNN error without Python text."""
    if isinstance(e, WebNNError):
        return json.dumps(e.to_json())
    return json.dumps(internal_error(getattr(fn, "__name__", "worker").lstrip("_"), e).to_json())


def safe_call(fn: Callable[..., Any], *args: Any) -> list[Any]:
    """Call a host method for JavaScript: [None, result] or [error json, None]; nothing escapes."""
    try:
        return [None, fn(*args)]
    except Exception as e:
        return [error_json(fn, e), None]


HOST = WorkerHost()
