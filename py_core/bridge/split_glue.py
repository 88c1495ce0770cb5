"""One graph over both cores, the worker side (docs/performance.md, "One graph on both cores").

The worker that owns a context builds a batch-separable graph (py_core/compiler/split.py) for one part of its
batch; its peer worker builds the same part graph (polyfill/src/engine/split.js sends it there).  A dispatch then runs
part 0 here while the peer runs part 1 on its copy of that part's inputs, and the peer's outputs are copied
into the output tensors beside part 0's.  Without a peer (it could not start, or was lost) every part runs here,
one after the other: slower than the graph unsplit, never different.  Tensors keep their full shapes; only
the graphs are built per part.  Called from JavaScript like pyodide_glue (same [error-json, result] replies);
no Pyodide import, so it runs under CPython too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.bridge.jsonnum import loads
from py_core.bridge.worker_host import HOST, WorkerHost, _address, mark_failed, safe_call
from py_core.builder import graph_from_json
from py_core.compiler.split import SplitPlan, plan_split
from py_core.compiler.stats import product_flops
from py_core.errors import OperationError, WebNNError, WebNNTypeError
from py_core.types import OperandDescriptor


@dataclass
class SplitGraph:
    """A graph built for one part of its batch: the plan and the whole graph's input and output descriptors
    (what tensors bound to it must have)."""

    context: int
    plan: SplitPlan
    inputs: dict[str, OperandDescriptor]
    outputs: dict[str, OperandDescriptor]


SPLITS: dict[int, SplitGraph] = {}


@dataclass
class Planned:
    """A build between plan_build and build_planned: what the graph is built from, and its split plan."""

    graph_json: str
    constants: dict[int, Any]
    constant_tensors: dict[int, int]
    graph: Any = None
    plan: SplitPlan | None = None


PLANNED: dict[int, Planned] = {}


def plan_build(ctx: int, gid: int, graph_json: str, constants: dict[int, Any], constant_tensors: dict[int, int],
               parts: int, min_flops: float | None = None) -> str | None:
    """The first half of build_split: the part graph's JSON when the graph splits (the JavaScript side sends it
    to the peer, which then builds while this worker does), else None; build_planned finishes."""
    entry = PLANNED[gid] = Planned(graph_json, constants, constant_tensors)
    if parts >= 2 and not constant_tensors:  # a constant tensor lives in this worker only
        try:
            entry.graph = graph_from_json(loads(graph_json), constants)
            entry.plan = plan_split(entry.graph, parts, min_flops)
        except WebNNError:
            entry.plan = None  # build_planned reports it
    return entry.plan.graph_json if entry.plan is not None else None


def build_split(host: WorkerHost, ctx: int, gid: int, graph_json: str, constants: dict[int, Any],
                constant_tensors: dict[int, int], parts: int, min_flops: float | None = None) -> dict[str, Any]:
    """host.build, but a batch-separable graph is built for 1/parts of its batch (info "split": parts and
    "splitGraph": that graph's JSON, for the peer); anything else is built whole, as host.build does."""
    plan_build(ctx, gid, graph_json, constants, constant_tensors, parts, min_flops)
    return build_planned(host, ctx, gid)


def build_planned(host: WorkerHost, ctx: int, gid: int) -> dict[str, Any]:
    """The second half of build_split."""
    entry = PLANNED.pop(gid)
    plan, graph = entry.plan, entry.graph
    graph_json, constants, constant_tensors = entry.graph_json, entry.constants, entry.constant_tensors
    if plan is not None and graph is not None:
        try:
            # host.build takes the dict it is given: a copy, so the whole graph can still be built from them
            info = host.build(ctx, gid, plan.graph_json, dict(constants), {})
        except WebNNError:
            pass  # a part graph the builder rejects: build it whole
        else:
            SPLITS[gid] = SplitGraph(ctx, plan, {n: graph.operands[i].desc for n, i in graph.inputs.items()},
                                     {n: graph.operands[i].desc for n, i in graph.outputs.items()})
            return {**info, "flops": product_flops(graph), "split": plan.parts, "batch": plan.batch,
                    "splitGraph": plan.graph_json}
    return host.build(ctx, gid, graph_json, constants, constant_tensors)


def _split(host: WorkerHost, ctx: int, gid: int) -> SplitGraph:
    host._graph(gid, ctx)  # InvalidStateError when destroyed
    entry = SPLITS.get(gid)
    if entry is None or entry.context != ctx:
        raise OperationError("dispatch: the graph is not split")
    return entry


def _check(host: WorkerHost, entry: SplitGraph, ctx: int, inputs: dict[str, int], outputs: dict[str, int]) -> None:
    """The bindings against the whole graph's descriptors (as WorkerHost.dispatch checks the unsplit graph)."""
    if set(inputs) != set(entry.inputs):
        raise WebNNTypeError(f"inputs {sorted(inputs)} do not match the graph's inputs {sorted(entry.inputs)}")
    if set(outputs) != set(entry.outputs):
        raise WebNNTypeError(f"outputs {sorted(outputs)} do not match the graph's outputs {sorted(entry.outputs)}")
    for kind, bound, descs in (("input", inputs, entry.inputs), ("output", outputs, entry.outputs)):
        for name, tid in bound.items():
            desc = host._tensor(tid, ctx).desc
            if desc != descs[name]:
                raise WebNNTypeError(f"{kind} '{name}' is {desc}, the graph expects {descs[name]}")


def _store(host: WorkerHost, slot: Any, array: np.ndarray) -> None:
    """The tensor's new contents (WorkerHost._store keeps direct mode's address table in step)."""
    host._store(slot, array)


def _rows(array: np.ndarray, plan: SplitPlan, index: int) -> np.ndarray:
    return array[index * plan.part:(index + 1) * plan.part]


def input_parts(host: WorkerHost, ctx: int, gid: int, inputs: dict[str, int], outputs: dict[str, int],
                index: int) -> list[list[Any]]:
    """[[name, address, nbytes]] of each input's part `index` in the heap (contiguous rows), for the JavaScript
    side to copy out to the peer at once; checks the bindings first."""
    entry = _split(host, ctx, gid)
    _check(host, entry, ctx, inputs, outputs)
    out = []
    for name, tid in inputs.items():
        slot = host._tensor(tid, ctx)
        if not slot.array.flags.c_contiguous:  # a view a dispatch stored: keep the contiguous copy
            _store(host, slot, np.ascontiguousarray(slot.array).reshape(slot.array.shape))
        rows = _rows(slot.array, entry.plan, index)
        out.append([name, _address(rows), int(rows.nbytes)])
    return out


def run_part(host: WorkerHost, ctx: int, gid: int, inputs: dict[str, int], outputs: dict[str, int],
             index: int) -> None:
    """Run part `index` here, into rows `index` of the output tensors (part 0 gives them new arrays first, as a
    dispatch does); a failure is recorded on the outputs, as WorkerHost.dispatch does."""
    entry = _split(host, ctx, gid)
    exe = host._graph(gid, ctx)
    try:
        _check(host, entry, ctx, inputs, outputs)
        results = exe.run({name: _rows(host._tensor(tid, ctx).array, entry.plan, index)
                           for name, tid in inputs.items()})
    except WebNNError as e:
        mark_failed((host._tensor(tid, ctx) for tid in outputs.values()), e)
        raise
    for name, tid in outputs.items():
        slot = host._tensor(tid, ctx)
        if index == 0:  # a new array: another tensor may hold the old one (an unsplit dispatch's output)
            _store(host, slot, np.empty(slot.desc.shape, dtype=np.dtype(slot.desc.data_type.numpy_name)))
            slot.error = None
        _rows(slot.array, entry.plan, index)[...] = results[name]


def output_parts(host: WorkerHost, ctx: int, gid: int, outputs: dict[str, int], index: int) -> list[list[Any]]:
    """[[name, address, nbytes]] of each output's part `index`, after part 0 ran: where the peer's bytes go."""
    entry = _split(host, ctx, gid)
    out = []
    for name, tid in outputs.items():
        rows = _rows(host._tensor(tid, ctx).array, entry.plan, index)
        out.append([name, _address(rows), int(rows.nbytes)])
    return out


def compute_parts(host: WorkerHost, ctx: int, gid: int, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Legacy compute() of a split graph: whole-batch inputs in, every part run here, whole outputs out."""
    entry = _split(host, ctx, gid)
    exe = host._graph(gid, ctx)
    if set(inputs) != set(entry.inputs):
        raise WebNNTypeError(f"inputs {sorted(inputs)} do not match the graph's inputs {sorted(entry.inputs)}")
    for name, arr in inputs.items():
        desc = entry.inputs[name]
        if arr.dtype != np.dtype(desc.data_type.numpy_name) or tuple(arr.shape) != desc.shape:
            raise WebNNTypeError(f"input '{name}' is {arr.dtype}{list(arr.shape)}, the graph expects {desc}")
    parts = [exe.run({n: _rows(a, entry.plan, i) for n, a in inputs.items()}) for i in range(entry.plan.parts)]
    return {name: np.concatenate([p[name] for p in parts]) for name in entry.outputs}


def fail_outputs(host: WorkerHost, ctx: int, outputs: dict[str, int], message: str) -> None:
    slots = (host.tensors.get(tid) for tid in outputs.values())
    mark_failed((slot for slot in slots if slot is not None and slot.context == ctx), message)


def forget(gid: int) -> None:
    SPLITS.pop(gid, None)


def forget_context(ctx: int) -> None:
    for gid in [g for g, e in SPLITS.items() if e.context == ctx]:
        del SPLITS[gid]


# ------------------------------------------------------------------------------- JavaScript entry points


def plan(ctx: int, gid: int, graph_json: str, const_ids_json: str, const_buffers: Any,
         constant_tensors_json: str, parts: int, min_flops: float | None = None) -> list[Any]:
    """[error, the part graph's JSON or None]; the constants are copied here (the buffers may go to the peer)."""
    def _plan() -> str | None:
        ids = json.loads(const_ids_json)
        data = {int(i): buf.to_bytes() for i, buf in zip(ids, const_buffers, strict=True)}
        tensors = {int(k): int(v) for k, v in json.loads(constant_tensors_json).items()}
        return plan_build(ctx, gid, graph_json, data, tensors, parts, min_flops)

    return safe_call(_plan)


def build(ctx: int, gid: int) -> list[Any]:
    """[error, build info] of the graph plan() planned."""
    return safe_call(build_planned, HOST, ctx, gid)


def compute(ctx: int, gid: int, names_json: str, buffers: Any) -> list[Any]:
    """pyodide_glue.compute for a split graph (same reply)."""

    def _compute() -> list[Any]:
        entry = _split(HOST, ctx, gid)
        inputs = {}
        for name, buf in zip(json.loads(names_json), buffers, strict=True):
            desc = entry.inputs.get(name)
            if desc is None:
                raise WebNNTypeError(f"compute: the graph has no input named '{name}'")
            target = np.zeros(desc.shape, dtype=np.dtype(desc.data_type.numpy_name))
            buf.assign_to(target.reshape(-1).view(np.uint8))
            inputs[name] = target
        results = compute_parts(HOST, ctx, gid, inputs)
        return [json.dumps(list(results)), [memoryview(np.ascontiguousarray(a)).cast("B") for a in results.values()]]

    return safe_call(_compute)


def _bindings(text: str) -> dict[str, int]:
    return {str(k): int(v) for k, v in json.loads(text).items()}


def inputs_at(ctx: int, gid: int, inputs_json: str, outputs_json: str, index: int) -> list[Any]:
    return safe_call(lambda: json.dumps(input_parts(HOST, ctx, gid, _bindings(inputs_json),
                                                    _bindings(outputs_json), index)))


def run(ctx: int, gid: int, inputs_json: str, outputs_json: str, index: int) -> list[Any]:
    return safe_call(run_part, HOST, ctx, gid, _bindings(inputs_json), _bindings(outputs_json), index)


def outputs_at(ctx: int, gid: int, outputs_json: str, index: int) -> list[Any]:
    return safe_call(lambda: json.dumps(output_parts(HOST, ctx, gid, _bindings(outputs_json), index)))


def fail(ctx: int, outputs_json: str, message: str) -> list[Any]:
    return safe_call(fail_outputs, HOST, ctx, _bindings(outputs_json), message)


def drop(gid: int) -> list[Any]:
    return safe_call(forget, gid)


def drop_context(ctx: int) -> list[Any]:
    return safe_call(forget_context, ctx)


def count() -> int:
    return len(SPLITS)
