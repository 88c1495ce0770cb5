"""Executor: runs a graph's operations over NumPy arrays.  https://www.w3.org/TR/webnn/#api-mlcontext-dispatch"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.compiler import CompiledPlan, CompileOptions, MemoryPlan, Program, Segment, build_plan, compile_graph
from py_core.compiler.plan import DirectRun, PlanError
from py_core.errors import LOG, OperationError, WebNNTypeError, internal_error
from py_core.graph import Graph
from py_core.kernels import KERNELS, native
from py_core.types import OperandDescriptor


@dataclass
class Step:
    """One kernel call: operand slots by parameter name, options bound, outputs checked, slots to release."""

    op: str
    call: Callable[..., Any]
    args: tuple[tuple[str, int | tuple[int, ...] | None], ...]
    outputs: tuple[int, ...]
    out_types: tuple[tuple[np.dtype, tuple[int, ...]], ...]
    release: tuple[int, ...]
    label: str
    variant: str = ""  # the compiler's bound kernel, if any (py_core.compiler.ir.Node.variant)
    # the fast path of Executable.run: the one operand's parameter name and slot, when the step has exactly one
    # operand (not a list) and one output
    one: str | None = None
    one_slot: int = 0


class Executable:
    """A compiled graph ready to run: constants in their slots, steps in order, a release plan."""

    def __init__(self, graph: Graph, prog: Program, plan: MemoryPlan, options: CompileOptions):
        # the graph without its constant data: the weights live in the steps (packed) and in `constants`
        self.graph = Graph(graph.operands, graph.operations, graph.inputs, graph.outputs)
        self.options = options
        self.input_descs = {name: graph.operands[i].desc for name, i in graph.inputs.items()}
        self.output_descs = {name: graph.operands[i].desc for name, i in graph.outputs.items()}
        slot: dict[int, int] = {}

        def slot_of(oid: int) -> int:
            if oid not in slot:
                slot[oid] = len(slot)
            return slot[oid]

        for oid in prog.constants:
            slot_of(oid)
        self._inputs = tuple((name, slot_of(i)) for name, i in prog.inputs.items())
        steps = []
        for node, release in zip(prog.nodes, plan.release, strict=True):
            args: list[tuple[str, int | tuple[int, ...] | None]] = []
            for pname, ref in node.operands.items():
                if isinstance(ref, list):
                    args.append((pname, tuple(slot_of(i) for i in ref)))
                else:
                    args.append((pname, None if ref is None else slot_of(ref)))
            kernel = node.kernel if node.kernel is not None else KERNELS[node.op]
            call = functools.partial(kernel, **node.options) if node.options else kernel
            outs = tuple(slot_of(o) for o in node.outputs)
            descs = [prog.operands[o].desc for o in node.outputs]
            types = tuple((np.dtype(d.data_type.numpy_name), tuple(d.shape)) for d in descs)
            one: str | None = None  # Step.one: one operand (not a list), one output
            one_slot = 0
            if len(args) == 1 and len(outs) == 1:
                only_name, only_ref = args[0]
                if isinstance(only_ref, int):
                    one, one_slot = only_name, only_ref
            steps.append(Step(node.op, call, tuple(args), outs, types, tuple(slot_of(i) for i in release),
                              node.label, node.variant, one, one_slot))
        self.steps = steps
        self._outputs = tuple((name, slot_of(i)) for name, i in prog.outputs.items())
        # graph outputs that are constants (folded) are copied out: a caller may write into its results
        copy_out = {slot[i] for i in prog.outputs.values() if i in prog.constants}
        # the compiled plan: runs of C-capable steps as one call each (py_core/compiler/plan.py)
        self.plan: CompiledPlan | None = None
        if options.plan:
            try:
                self.plan = build_plan(prog, plan.release, slot)
            except PlanError as e:  # a lowering bug must not cost the graph: every step stays Python
                LOG.error("compiled plan not built: %s", e)
        self._items: list[Step | Segment] = list(steps)
        if self.plan is not None:
            items: list[Step | Segment] = []
            segs = {seg.first: seg for seg in self.plan.segments}
            i = 0
            while i < len(steps):
                if i in segs:
                    items.append(segs[i])
                    i = segs[i].last + 1
                else:
                    items.append(steps[i])
                    i += 1
            self._items = items
            copy_out |= self.plan.copy_out
        self.notes = list(prog.notes)  # the compile passes' and the plan's (build_plan writes its own)
        self._copy_out = frozenset(copy_out)
        one = self._items[0] if len(self._items) == 1 else None
        self._one_segment: Segment | None = one if isinstance(one, Segment) else None
        self._template: list[Any] = [None] * len(slot)
        for oid, arr in prog.constants.items():
            self._template[slot[oid]] = arr
        self.constants = dict(prog.constants)

    def direct(self) -> DirectRun | None:
        """The whole graph as one C call with no Python (py_core.compiler.plan.DirectRun: addresses for the
        worker's JavaScript), or None when some step runs in Python (or a graph input is not float32).  Each call
        makes new input and output buffers: call it once per graph and keep the result."""
        if self.plan is None or any(d.data_type.numpy_name != "float32" for d in self.input_descs.values()):
            return None
        shapes = {s: tuple(self.input_descs[n].shape) for n, s in self._inputs}
        shapes.update({s: tuple(self.output_descs[n].shape) for n, s in self._outputs})
        return self.plan.direct(len(self.steps), dict(self._inputs), dict(self._outputs), shapes)

    @property
    def weight_bytes(self) -> int:
        """Bytes held for constants and pre-packed weights."""
        total = sum(int(a.nbytes) for a in self.constants.values())
        for step in self.steps:
            fn = step.call.func if isinstance(step.call, functools.partial) else step.call
            for attr in ("w", "b", "bias", "c"):
                a = getattr(fn, attr, None)
                if isinstance(a, np.ndarray):
                    total += int(a.nbytes)
        return total

    def memory(self, seen: set[int] | None = None) -> dict[str, int]:
        """Bytes this executable holds, each buffer counted once (also across executables sharing `seen`):
        `constants` (weights kept as given), `weights` (pre-packed copies inside the kernels), `plan` (the compiled
        plan's intermediates, scratch and tables)."""
        seen = set() if seen is None else seen
        out = {"constants": 0, "weights": 0, "plan": 0}
        for a in self.constants.values():
            out["constants"] += held_bytes(a, seen)
        for step in self.steps:
            for a in _arrays_of(step.call):
                out["weights"] += held_bytes(a, seen)
        if self.plan is not None:
            for a in self.plan.keep:
                out["plan"] += held_bytes(a, seen)
        return out

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Compute every output from named input arrays (shapes and types already checked)."""
        vals = self._template.copy()
        for name, s in self._inputs:
            vals[s] = inputs[name]
        # C kernels switched off since the build (native.use_native(False): comparisons, tests): the steps as built
        # run instead of the plan's segments, so "without C" never runs C
        c_on = self.plan is None or native.available()
        if self._one_segment is not None and c_on:  # the whole graph in one C call: no NumPy arithmetic to guard
            try:
                self.plan.run_segment(self._one_segment, vals)  # type: ignore[union-attr]
            except Exception as e:
                raise internal_error("compiled plan: " + ", ".join(self._one_segment.ops[:4]), e) from e
            return {name: (vals[s].copy() if s in self._copy_out else vals[s]) for name, s in self._outputs}
        # integer division by zero, overflow and NaN-producing math are defined by the data, not errors
        with np.errstate(all="ignore"):
            for step in self._items if c_on else self.steps:
                if type(step) is Segment:  # a run of C steps in one call
                    try:
                        self.plan.run_segment(step, vals)  # type: ignore[union-attr]
                    except Exception as e:
                        raise internal_error("compiled plan: " + ", ".join(step.ops[:4]), e) from e
                    continue
                one = step.one
                kw: dict[str, Any]
                if one is not None:  # one operand, one output: the element-wise bulk of small-op graphs
                    kw = {one: vals[step.one_slot]}
                else:
                    kw = {}
                    for pname, ref in step.args:
                        if ref is None:
                            kw[pname] = None
                        elif type(ref) is int:
                            kw[pname] = vals[ref]
                        else:
                            kw[pname] = [vals[i] for i in ref]  # type: ignore[union-attr]
                try:
                    result = step.call(**kw)
                except Exception as e:  # a kernel bug must not take the worker down: name the op and label
                    where = f"[{step.label}] {step.op}" if step.label else step.op
                    raise internal_error(where, e) from e
                if one is not None:
                    dtype, shape = step.out_types[0]
                    if type(result) is np.ndarray and result.shape == shape and result.dtype == dtype:
                        vals[step.outputs[0]] = result
                        for s in step.release:
                            vals[s] = None
                        continue
                results = result if isinstance(result, (list, tuple)) else (result,)
                for s, (dtype, shape), arr in zip(step.outputs, step.out_types, results, strict=True):
                    if type(arr) is not np.ndarray:
                        arr = np.asarray(arr)
                    if arr.dtype != dtype or arr.shape != shape:
                        raise OperationError(
                            f"{step.op}: kernel produced {arr.dtype}{list(arr.shape)}, expected "
                            f"{dtype.name}{list(shape)}")
                    vals[s] = arr
                for s in step.release:
                    vals[s] = None
        return {name: (vals[s].copy() if s in self._copy_out else vals[s]) for name, s in self._outputs}


def held_bytes(a: Any, seen: set[int]) -> int:
    """The bytes of the buffer that owns array `a` (a view counts its base: an array over a bytes object counts
    that object), 0 when `seen` already has that buffer."""
    owner = a
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    if id(owner) in seen:
        return 0
    seen.add(id(owner))
    return int(owner.nbytes) if isinstance(owner, (np.ndarray, memoryview)) else len(owner)


def _arrays_of(call: Any, depth: int = 2) -> list[np.ndarray]:
    """The arrays a step's kernel holds: bound options, attributes of the kernel object and of the objects it
    holds (a packed right-hand side's panels), `depth` levels down."""
    found: list[np.ndarray] = []
    values: list[Any] = []
    if isinstance(call, functools.partial):
        values += list(call.keywords.values())
        call = call.func
    values += list(getattr(call, "__dict__", {}).values())
    for v in values:
        if isinstance(v, np.ndarray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += [x for x in v if isinstance(x, np.ndarray)]
        elif depth > 1 and hasattr(v, "__dict__") and not callable(v):
            found += _arrays_of(v, depth - 1)
    return found


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


def prepare(graph: Graph, options: CompileOptions | None = None, *, take: bool = False) -> Executable:
    """Turn a validated graph into an executable: compiled (py_core.compiler) unless options disable it.  With
    `take` the executable takes the graph's constant data (graph.constants is emptied), so a weight the compiler
    replaces (packed, folded) is freed during the build, not after it."""
    constants = {i: constant_array(graph.operands[i].desc, graph.constants[i]) for i in graph.constants}
    missing = [i for i, o in graph.operands.items() if o.kind == "constant" and i not in constants]
    if missing:
        raise WebNNTypeError(f"build: constant operands {missing} have no data")
    if take:
        graph.constants.clear()
    opts = CompileOptions.default() if options is None else options
    prog, plan = compile_graph(graph, constants, opts, take=take)
    return Executable(graph, prog, plan, opts)


def check_inputs(exe: Executable, inputs: Mapping[str, np.ndarray]) -> None:
    """Named inputs must match the graph's inputs exactly, in type and shape."""
    expected = set(exe.input_descs)
    if set(inputs) != expected:
        raise WebNNTypeError(f"inputs {sorted(inputs)} do not match the graph's inputs {sorted(expected)}")
    for name, arr in inputs.items():
        desc = exe.input_descs[name]
        if arr.dtype != np.dtype(desc.data_type.numpy_name) or tuple(arr.shape) != desc.shape:
            raise WebNNTypeError(f"input '{name}' is {arr.dtype}{list(arr.shape)}, the graph expects {desc}")
