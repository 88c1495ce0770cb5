"""The graph IR: operands and operations as plain data, with JSON (de)serialization.
https://www.w3.org/TR/webnn/#api-mlgraph"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from py_core.types import DataType, OperandDescriptor

OperandRefs = dict[str, "int | list[int] | None"]


@dataclass
class Operand:
    """A node's value: graph input, constant, or the output of an operation."""

    id: int
    desc: OperandDescriptor
    kind: str  # "input" | "constant" | "output"
    name: str = ""  # the input name, for kind == "input"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name, **self.desc.to_json()}


@dataclass
class Operation:
    """One builder call: operator name, operand ids by parameter name, normalized options, outputs."""

    op: str
    operands: dict[str, int | list[int] | None]
    options: dict[str, Any]
    outputs: list[int]
    label: str = ""

    def input_ids(self) -> list[int]:
        return operand_ids(self.operands)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "operands": self.operands, "options": _jsonable(self.options),
                "outputs": self.outputs, "label": self.label}


@dataclass
class Graph:
    """A whole graph: operands by id, operations in build order, named inputs and outputs."""

    operands: dict[int, Operand] = field(default_factory=dict)
    operations: list[Operation] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    # constant data by operand id: NumPy arrays in CPython, opaque handles elsewhere
    constants: dict[int, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Everything but the constant bytes, which travel separately (transfer lists)."""
        return {
            "operands": [o.to_json() for o in self.operands.values()],
            "operations": [op.to_json() for op in self.operations],
            "inputs": dict(self.inputs),
            "outputs": dict(self.outputs),
        }

    def producers(self) -> dict[int, Operation]:
        return {out: op for op in self.operations for out in op.outputs}

    def pruned(self, outputs: dict[str, int]) -> Graph:
        """The subgraph that computes `outputs`: unreachable operations, inputs and constants dropped."""
        producers = self.producers()
        needed: set[int] = set()
        stack = list(outputs.values())
        while stack:
            oid = stack.pop()
            if oid in needed:
                continue
            needed.add(oid)
            op = producers.get(oid)
            if op is not None:
                stack.extend(op.input_ids())
        ops = [op for op in self.operations if any(o in needed for o in op.outputs)]
        for op in ops:  # a multi-output op keeps all its outputs
            needed.update(op.outputs)
        return Graph(
            operands={i: o for i, o in self.operands.items() if i in needed},
            operations=ops,
            inputs={n: i for n, i in self.inputs.items() if i in needed},
            outputs=dict(outputs),
            constants={i: c for i, c in self.constants.items() if i in needed},
        )


def operand_ids(operands: dict[str, int | list[int] | None]) -> list[int]:
    """The operand ids an operation reads, flattening sequences and skipping absent optional operands."""
    ids: list[int] = []
    for v in operands.values():
        if isinstance(v, list):
            ids.extend(v)
        elif v is not None:
            ids.append(v)
    return ids


def _jsonable(v: Any) -> Any:
    if isinstance(v, DataType):
        return v.value
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v
