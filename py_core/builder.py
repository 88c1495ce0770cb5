"""GraphBuilder: validate each call against the spec table, append it to the graph, return its operands.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

Imports no NumPy, so the same code validates on the page's main thread and re-validates in the worker.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from py_core.errors import InvalidStateError, WebNNTypeError
from py_core.graph import Graph, Operand, Operation
from py_core.spec import OPS, OpSpec, bind, infer_outputs, normalize
from py_core.spec.table import OPERANDS, check_dimensions
from py_core.types import DataType, OperandDescriptor


class BuilderOperand:
    """MLOperand: a handle (builder, id) on an operand of the builder's graph, which alone holds its descriptor.
    https://www.w3.org/TR/webnn/#api-mloperand"""

    __slots__ = ("builder", "id")

    def __init__(self, builder: GraphBuilder, id: int):
        self.builder = builder
        self.id = id

    @property
    def desc(self) -> OperandDescriptor:
        return self.builder.graph.operands[self.id].desc

    @property
    def shape(self) -> list[int]:
        return list(self.desc.shape)

    @property
    def data_type(self) -> DataType:
        return self.desc.data_type

    def __repr__(self) -> str:
        return f"<MLOperand #{self.id} {self.desc}>"


def parse_descriptor(desc: Any, what: str = "descriptor") -> OperandDescriptor:
    """MLOperandDescriptor from a descriptor, a dict {dataType, shape} or a (dataType, shape) pair."""
    if isinstance(desc, OperandDescriptor):
        out = desc
    else:
        if isinstance(desc, Mapping):
            if "shape" not in desc:
                raise WebNNTypeError(f"{what}: required member shape is missing")
            dt, shape = desc.get("dataType"), desc["shape"]
        elif isinstance(desc, (tuple, list)) and len(desc) == 2:
            dt, shape = desc
        else:
            raise WebNNTypeError(f"{what} must be an MLOperandDescriptor, got {desc!r}")
        try:
            data_type = DataType.parse(dt)
        except ValueError as e:
            raise WebNNTypeError(f"{what}: {e}") from None
        if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape
        ):
            raise WebNNTypeError(f"{what}: shape must be a sequence of unsigned long, got {shape!r}")
        out = OperandDescriptor(data_type, tuple(shape))
    check_dimensions(what, out)
    return out


class GraphBuilder:
    """MLGraphBuilder over the Python graph IR.  https://www.w3.org/TR/webnn/#mlgraphbuilder

    `duplicate_names_at_build`: False refuses a repeated input name at input(), as the draft's steps say; True
    accepts it there and refuses it at build() when two inputs of that name feed the outputs, as Chromium does
    (docs/compatibility.md)."""

    def __init__(self, *, duplicate_names_at_build: bool = False) -> None:
        self.graph = Graph()
        self._next_id = 0
        self._built = False
        self._duplicate_names_at_build = duplicate_names_at_build

    # ---------------------------------------------------------------- operands

    def _new_operand(self, desc: OperandDescriptor, kind: str, name: str = "") -> BuilderOperand:
        oid = self._next_id
        self._next_id += 1
        self.graph.operands[oid] = Operand(oid, desc, kind, name)
        return BuilderOperand(self, oid)

    def operand(self, oid: int) -> BuilderOperand:
        """The handle of operand `oid` of this builder's graph (TypeError when there is none)."""
        if not isinstance(oid, int) or isinstance(oid, bool) or oid not in self.graph.operands:
            raise WebNNTypeError(f"MLGraphBuilder: no operand #{oid!r} in this builder")
        return BuilderOperand(self, oid)

    def _check_state(self) -> None:
        if self._built:
            raise InvalidStateError("MLGraphBuilder: build() has already been called on this builder")

    def input(self, name: str, descriptor: Any) -> BuilderOperand:
        """input(name, descriptor).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-input"""
        self._check_state()
        if not isinstance(name, str) or not name:
            raise WebNNTypeError(f"input: the name must be a non-empty string, got {name!r}")
        if name in self.graph.inputs and not self._duplicate_names_at_build:
            raise WebNNTypeError(f"input: an input named '{name}' already exists")
        desc = parse_descriptor(descriptor, f"input '{name}'")
        op = self._new_operand(desc, "input", name)
        self.graph.inputs.setdefault(name, op.id)  # a repeated name is an input operand too (build() refuses it)
        return op

    def constant(self, descriptor: Any, data: Any = None) -> BuilderOperand:
        """constant(descriptor, buffer).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constant"""
        self._check_state()
        desc = parse_descriptor(descriptor, "constant")
        nbytes = getattr(data, "nbytes", None)
        if nbytes is not None and nbytes != desc.byte_length:
            raise WebNNTypeError(
                f"constant: buffer has {nbytes} bytes but {desc} needs {desc.byte_length}")
        op = self._new_operand(desc, "constant")
        if data is not None:
            self.graph.constants[op.id] = data
        return op

    # ---------------------------------------------------------------- operations

    def _resolve(self, spec: OpSpec, name: str, v: Any) -> Any:
        if isinstance(v, BuilderOperand):
            if v.builder is not self:
                raise WebNNTypeError(f"{spec.name}: operand '{name}' was created by another MLGraphBuilder")
            return v
        if isinstance(v, (list, tuple)) and spec.param(name).kind == OPERANDS:
            return [self._resolve(spec, f"{name}[{i}]", x) if isinstance(x, BuilderOperand)
                    else _not_an_operand(spec, f"{name}[{i}]", x) for i, x in enumerate(v)]
        return _not_an_operand(spec, name, v)

    def call(self, op: str, args: Mapping[str, Any], label: str = "") -> BuilderOperand | list[BuilderOperand]:
        """Validate one operator call (operands and options by parameter name) and append it."""
        self._check_state()
        spec = OPS.get(op)
        if spec is None:
            raise WebNNTypeError(f"unknown operator '{op}'")
        handles: dict[str, Any] = {}
        descs: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for p in spec.params + spec.options:
            v = args.get(p.name)
            if p.is_operand:
                if v is None:
                    continue
                h = self._resolve(spec, p.name, v)
                handles[p.name] = h
                descs[p.name] = [x.desc for x in h] if isinstance(h, list) else h.desc
            elif v is not None:
                values[p.name] = v
        bound = bind(spec, descs, values, label)
        outs = infer_outputs(bound)
        options = normalize(bound)
        handles_out = [self._new_operand(d, "output") for d in outs]
        # every operand parameter is recorded, absent optional ones as None: kernels get them as None
        ids: dict[str, int | list[int] | None] = dict.fromkeys((p.name for p in spec.operand_params), None)
        for name, h in handles.items():
            ids[name] = [x.id for x in h] if isinstance(h, list) else h.id
        self.graph.operations.append(Operation(spec.name, ids, options, [h.id for h in handles_out], label))
        return handles_out if spec.returns == "operands" else handles_out[0]

    def _method(self, spec: OpSpec, *args: Any, **kwargs: Any) -> BuilderOperand | list[BuilderOperand]:
        if len(args) > len(spec.params):
            raise WebNNTypeError(f"{spec.name}: takes {len(spec.params)} positional arguments, got {len(args)}")
        merged: dict[str, Any] = {p.name: a for p, a in zip(spec.params, args, strict=False)}
        label = kwargs.pop("label", "") or ""
        options = kwargs.pop("options", None) or {}
        merged.update(options)
        merged.update(kwargs)
        label = merged.pop("label", label) or ""
        return self.call(spec.name, merged, str(label))

    def __getattr__(self, name: str) -> Any:
        spec = OPS.get(name)
        if spec is None:
            raise AttributeError(name)
        return functools.partial(self._method, spec)

    # ---------------------------------------------------------------- build

    def build(self, outputs: Mapping[str, BuilderOperand]) -> Graph:
        """build(outputs): the pruned, validated graph.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build"""
        self._check_state()
        if not outputs:
            raise WebNNTypeError("build: at least one output is required")
        ids: dict[str, int] = {}
        for name, h in outputs.items():
            if not isinstance(name, str) or not name:
                raise WebNNTypeError(f"build: output names must be non-empty strings, got {name!r}")
            if not isinstance(h, BuilderOperand) or h.builder is not self:
                raise WebNNTypeError(f"build: output '{name}' is not an MLOperand of this builder")
            if self.graph.operands[h.id].kind != "output":
                raise WebNNTypeError(
                    f"build: output '{name}' is an input or constant operand, not an operation's result")
            ids[name] = h.id
        graph = self.graph.pruned(ids)
        inputs: dict[str, int] = {}
        for oid in sorted(graph.operands):
            o = graph.operands[oid]
            if o.kind != "input":
                continue
            if o.name in inputs:
                raise WebNNTypeError(
                    f"build: two inputs named '{o.name}' feed the outputs (input names must be unique)")
            inputs[o.name] = oid
        graph.inputs = inputs
        self._built = True
        return graph


def _not_an_operand(spec: OpSpec, name: str, v: Any) -> Any:
    raise WebNNTypeError(f"{spec.name}: '{name}' must be an MLOperand, got {type(v).__name__}")


def graph_from_json(data: Mapping[str, Any], constants: Mapping[int, Any] | None = None) -> Graph:
    """Rebuild (and so re-validate) a graph serialized by Graph.to_json, keeping its operand ids."""
    builder = GraphBuilder()
    handles: dict[int, BuilderOperand] = {}
    constants = constants or {}
    for o in sorted(data["operands"], key=lambda o: o["id"]):
        if o["kind"] == "output":
            continue
        builder._next_id = o["id"]
        if o["kind"] == "input":
            handles[o["id"]] = builder.input(o["name"], o)
        else:
            handles[o["id"]] = builder.constant(o, constants.get(o["id"]))
    claimed = {o["id"]: o for o in data["operands"]}
    for op in data["operations"]:
        args: dict[str, Any] = dict(op["options"])
        for name, ref in op["operands"].items():
            if ref is None:
                continue
            args[name] = [handles[i] for i in ref] if isinstance(ref, list) else handles[ref]
        builder._next_id = min(op["outputs"])
        result = builder.call(op["op"], args, op.get("label", ""))
        outs = result if isinstance(result, list) else [result]
        if [h.id for h in outs] != list(op["outputs"]):
            raise WebNNTypeError(f"{op['op']}: serialized outputs {op['outputs']} do not match the operator")
        for h in outs:
            c = claimed.get(h.id)
            if c is None or list(h.desc.shape) != list(c["shape"]) or h.desc.data_type.value != c["dataType"]:
                where = f"[{op['label']}] {op['op']}" if op.get("label") else op["op"]
                claim = "none" if c is None else f"{c['dataType']}{list(c['shape'])}"
                raise WebNNTypeError(
                    f"{where}: serialized output #{h.id} ({claim}) does not match the inferred {h.desc}")
            handles[h.id] = h
    builder._next_id = max(claimed) + 1 if claimed else 0
    return builder.build({name: handles[i] for name, i in data["outputs"].items()})
