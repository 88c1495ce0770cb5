"""The compiler's working form of a graph: nodes that may carry their own kernel, constants as arrays.

A `Program` starts as a copy of a validated `Graph` (every node a spec operator, kernel None = the reference
kernel from py_core.kernels) and the passes rewrite it: folded nodes disappear into constants, no-op nodes
into renamed operands, fused nodes carry their `epilogue`, pre-packed and in-place nodes get a bound kernel of
their own (named by `variant`).  A node's `op` stays the operator it was built as: passes decide from its
traits (py_core.kernels.traits), and record what they decided in these typed fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from py_core.graph import Graph, Operand, operand_ids
from py_core.kernels.traits import Epilogue

Ref = int | list[int] | None


@dataclass
class Node:
    """One kernel call: an operator, its operands by parameter name, options; what the passes bound to it."""

    op: str
    operands: dict[str, Ref]
    options: dict[str, Any]
    outputs: list[int]
    label: str = ""
    # None: the reference kernel KERNELS[op] called with options; else called as kernel(**operands) only
    kernel: Callable[..., Any] | None = None
    # which bound kernel runs (e.g. "im2col", "packed", "in-place", "fused"; "" for the reference kernel):
    # for notes, profiles and tests, never for decisions
    variant: str = ""
    # element-wise operations fused after this node's result (fuse.py), run in place on it in order
    epilogue: list[Epilogue] = field(default_factory=list)
    # the output is a new array that aliases none of the inputs (so a later node may write into it)
    fresh: bool = False
    # what bind_epilogues wrapped into `kernel` for a reference kernel: its options and epilogue (the compiled
    # plan lowers the operator and the epilogue from these)
    unbound: tuple[dict[str, Any], list[Epilogue]] | None = None

    def input_ids(self) -> list[int]:
        return operand_ids(self.operands)

    def rename(self, old: int, new: int) -> None:
        for k, v in self.operands.items():
            if isinstance(v, list):
                self.operands[k] = [new if i == old else i for i in v]
            elif v == old:
                self.operands[k] = new


@dataclass
class Program:
    """A graph being compiled: operand descriptors, nodes in execution order, constant arrays."""

    operands: dict[int, Operand]
    nodes: list[Node]
    constants: dict[int, np.ndarray]
    inputs: dict[str, int]
    outputs: dict[str, int]
    notes: list[str] = field(default_factory=list)  # what each pass did, for stats and debugging

    @classmethod
    def from_graph(cls, graph: Graph, constants: dict[int, np.ndarray]) -> Program:
        nodes = [Node(op.op, dict(op.operands), dict(op.options), list(op.outputs), op.label)
                 for op in graph.operations]
        return cls(dict(graph.operands), nodes, dict(constants), dict(graph.inputs), dict(graph.outputs))

    def consumers(self) -> dict[int, list[Node]]:
        """Operand id -> the nodes that read it (a node reading it twice is listed twice)."""
        users: dict[int, list[Node]] = {}
        for node in self.nodes:
            for i in node.input_ids():
                users.setdefault(i, []).append(node)
        return users

    def readers(self) -> dict[int, int]:
        """Operand id -> how many node operands and graph outputs read it (for `release`)."""
        count: dict[int, int] = {}
        for i in [*(i for n in self.nodes for i in n.input_ids()), *self.outputs.values()]:
            count[i] = count.get(i, 0) + 1
        return count

    def release(self, readers: dict[int, int], ids: list[int]) -> None:
        """`ids` each lost one reader (a node folded or packed no longer reads them): a constant left with none is
        dropped now, not at the end of the pass, so the build never holds a weight and its replacement at once."""
        for i in ids:
            readers[i] = readers.get(i, 0) - 1
            if readers[i] <= 0:
                self.constants.pop(i, None)

    def output_ids(self) -> set[int]:
        return set(self.outputs.values())

    def is_constant(self, oid: int) -> bool:
        return oid in self.constants

    def dtype(self, oid: int) -> np.dtype:
        return np.dtype(self.operands[oid].desc.data_type.numpy_name)

    def shape(self, oid: int) -> tuple[int, ...]:
        return tuple(self.operands[oid].desc.shape)

    def rename(self, old: int, new: int) -> None:
        """Every reader of `old` reads `new` instead (graph outputs too)."""
        for node in self.nodes:
            node.rename(old, new)
        for name, oid in self.outputs.items():
            if oid == old:
                self.outputs[name] = new


    def note(self, msg: str) -> None:
        self.notes.append(msg)
