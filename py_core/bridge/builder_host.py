"""The page-side half of the bridge: synchronous graph building for MLGraphBuilder, JSON in and out.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

Runs in the page's own (NumPy-free) Pyodide so builder methods can validate synchronously and return
MLOperands whose shape and data type are known at once.  Constant bytes never enter this side.
"""

from __future__ import annotations

import json
from typing import Any

from py_core.bridge import console
from py_core.bridge.jsonnum import decode_numbers, dumps
from py_core.bridge.limits import op_support_limits
from py_core.builder import BuilderOperand, GraphBuilder
from py_core.errors import InvalidStateError, UnknownError, WebNNError, internal_error
from py_core.spec import OPS

console.install()


class BuilderHost:
    """Holds the builders of one page; every method takes and returns JSON-able values.

    An operand crosses to JavaScript as its id in its builder's graph (`GraphBuilder.operand(id)` turns it back
    into a handle): the graph is the one place that holds operands here."""

    def __init__(self) -> None:
        self.builders: dict[int, GraphBuilder] = {}
        self._next = 0

    def _builder(self, bid: int) -> GraphBuilder:
        b = self.builders.get(bid)
        if b is None:
            raise InvalidStateError("MLGraphBuilder: this builder has been released")
        return b

    @staticmethod
    def _out(h: BuilderOperand) -> dict[str, Any]:
        return {"id": h.id, **h.desc.to_json()}

    def new_builder(self, duplicate_names_at_build: bool = False) -> int:
        self._next += 1
        self.builders[self._next] = GraphBuilder(duplicate_names_at_build=duplicate_names_at_build)
        return self._next

    def release(self, bid: int) -> None:
        self.builders.pop(bid, None)

    def input(self, bid: int, name: str, desc: dict[str, Any]) -> dict[str, Any]:
        return self._out(self._builder(bid).input(name, desc))

    def constant(self, bid: int, desc: dict[str, Any]) -> dict[str, Any]:
        return self._out(self._builder(bid).constant(desc))

    def op(self, bid: int, name: str, args: dict[str, Any], label: str) -> list[dict[str, Any]]:
        args = {k: decode_numbers(v) for k, v in args.items()}
        b = self._builder(bid)
        spec = OPS.get(name)
        resolved: dict[str, Any] = {}
        for key, v in args.items():
            if spec is not None and key in {p.name for p in spec.operand_params} and v is not None:
                resolved[key] = [b.operand(i) for i in v] if isinstance(v, list) else b.operand(v)
            else:
                resolved[key] = v
        result = b.call(name, resolved, label)
        outs = result if isinstance(result, list) else [result]
        return [self._out(h) for h in outs]

    def build(self, bid: int, outputs: dict[str, int]) -> dict[str, Any]:
        """The built graph as the JSON text the page hands on to the worker unread, with what the page needs of
        it: the ids of its constant operands (whose bytes the page holds) and its inputs' and outputs'
        descriptors (MLGraph's)."""
        b = self._builder(bid)
        graph = b.build({name: b.operand(i) for name, i in outputs.items()})
        self.release(bid)

        def descs(names: dict[str, int]) -> dict[str, Any]:
            return {name: graph.operands[i].desc.to_json() for name, i in names.items()}

        return {"graph": dumps(graph.to_json()),
                "constants": [o.id for o in graph.operands.values() if o.kind == "constant"],
                "inputs": descs(graph.inputs), "outputs": descs(graph.outputs)}

    def op_table(self) -> list[dict[str, Any]]:
        return [spec.to_json() for spec in OPS.values()]

    def op_support_limits(self) -> dict[str, Any]:
        return op_support_limits()

    def call_json(self, method: str, args_json: str) -> str:
        """Entry point from JavaScript: {"ok": result} or {"error": {"name", "message"}}."""
        try:
            if method.startswith("_") or not hasattr(self, method):
                raise UnknownError(f"no such builder host method '{method}'")
            result = getattr(self, method)(*json.loads(args_json))
            return dumps({"ok": result})
        except WebNNError as e:
            return dumps({"error": e.to_json()})
        except Exception as e:  # a bug here must surface as a clear error (the traceback goes to the console)
            return dumps({"error": internal_error(method, e, UnknownError).to_json()})


HOST = BuilderHost()
