"""Memory plan: every value is released right after its last reader, and a float32 element-wise node whose
input dies at that node writes its result into that input's buffer (`out=`) instead of a new array: operators
with an `in_place` trait (unary) or a `ufunc` trait (binary).

Ownership rules for writing in place: the buffer must come from a node that returns new arrays (`fresh`, or
the operator's `fresh` trait), and no other live value may share it (views made by reshape, slice, ... are
tracked as aliases); graph inputs, constants and graph outputs are never written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from py_core.compiler.ir import Program
from py_core.kernels import traits
from py_core.kernels.traits import InPlace


@dataclass
class MemoryPlan:
    """Per node index: operand ids to release after it; how many nodes write in place."""

    release: list[list[int]] = field(default_factory=list)
    in_place: int = 0


def _inplace_binary(fn: np.ufunc, target: str) -> Callable[..., np.ndarray]:
    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = a if target == "a" else b
        fn(a, b, out=out)
        return out

    return kernel


def _inplace_unary(apply: InPlace) -> Callable[..., np.ndarray]:
    def kernel(input: np.ndarray) -> np.ndarray:
        apply(input)
        return input

    return kernel


def plan_memory(prog: Program, in_place: bool = True) -> MemoryPlan:
    """Release points for every intermediate; in-place kernels where a float32 input dies at its reader."""
    pinned = set(prog.constants) | set(prog.inputs.values()) | set(prog.outputs.values())
    # alias groups: a node that may return a view joins its outputs to its inputs
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    fresh: set[int] = set()
    for node in prog.nodes:
        is_fresh = node.fresh or (node.kernel is None and traits(node.op).fresh)
        for o in node.outputs:
            if is_fresh:
                fresh.add(o)
            else:
                for i in node.input_ids():
                    parent[find(o)] = find(i)
    last: dict[int, int] = {}
    for s, node in enumerate(prog.nodes):
        for i in node.input_ids():
            last[i] = s
    group_last: dict[int, int] = {}
    group_pinned: set[int] = set()
    for i, s in last.items():
        r = find(i)
        group_last[r] = max(group_last.get(r, -1), s)
    for i in pinned:
        group_pinned.add(find(i))
    for node in prog.nodes:  # a value no one reads still belongs to its group
        for o in node.outputs:
            if o in pinned:
                group_pinned.add(find(o))

    plan = MemoryPlan(release=[[] for _ in prog.nodes])
    for i, s in last.items():
        if i not in pinned:
            plan.release[s].append(i)

    if not in_place:
        return plan
    for s, node in enumerate(prog.nodes):
        if node.kernel is not None or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        if prog.dtype(out) != np.float32:
            continue

        def writable(i: Any, s: int = s, out: int = out) -> bool:
            if not isinstance(i, int) or i not in fresh or i in pinned:
                return False
            r = find(i)
            return (r not in group_pinned and group_last.get(r) == s and prog.shape(i) == prog.shape(out)
                    and prog.dtype(i) == np.float32)

        t = traits(node.op)
        if t.ufunc is not None:
            a, b = node.operands["a"], node.operands["b"]
            target = "a" if writable(a) else "b" if writable(b) and a != b else None
            if target is None or prog.dtype(a) != prog.dtype(b):
                continue
            node.kernel = _inplace_binary(t.ufunc, target)
            node.operands = {"a": a, "b": b}
        elif t.in_place is not None and writable(node.operands.get("input")):
            node.kernel = _inplace_unary(t.in_place(node.options))
        else:
            continue
        node.variant = "in-place"
        node.unbound = (node.options, [])  # the options the in-place kernel holds (for the compiled plan)
        node.options = {}
        # the input dies here with every alias of it, so the output owns the buffer alone: fresh, ungrouped
        node.fresh = True
        fresh.add(out)
        plan.in_place += 1
    return plan
