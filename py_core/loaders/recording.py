"""A builder that records the loader's calls as a portable program: JSON steps plus one weights buffer.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

`RecordingBuilder` implements the loader's builder interface (`input`, `constant`, `op`, `build`; see
`py_core/loaders/tflite.py`).  Every call is validated by py_core's GraphBuilder as it is recorded, so a
program only holds calls that a conforming MLGraphBuilder accepts, and it knows every operand's descriptor.
`build()` returns a `Program`; `web/gallery/lib/replay.js` replays one against any MLGraphBuilder (the
polyfill's or a native one) to get an MLGraph.

Program JSON (`Program.json`, format "webnn-program", version 1):

    {"format": "webnn-program", "version": 1, "source": "<file name>",
     "inputs":  {"<name>": {"dataType": ..., "shape": [...]}},
     "outputs": {"<name>": {"operand": <id>, "dataType": ..., "shape": [...]}},
     "weights": {"byteLength": <n>},
     "steps": [
       {"id": 0, "input": "<name>", "desc": {...}},
       {"id": 1, "constant": {"offset": <byte offset>, "byteLength": <n>}, "desc": {...}},
       {"op": "conv2d", "args": [<value>, ...], "options": {"<member>": <value>, ...},
        "out": [<id>, ...], "descs": [{...}, ...]}]}

A <value> is a JSON number, boolean, string or list, `{"operand": <id>}` for an MLOperand, or
`{"number": "Infinity" | "-Infinity" | "NaN"}` for a float JSON cannot spell.  Operand ids count up in step
order; an op lists its output ids in "out" (one for most ops, several for `split`).  Constants are views of
the weights buffer at 16-byte aligned offsets (any typed array can view them), little-endian like every
WebNN implementation.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from py_core.builder import BuilderOperand, GraphBuilder

FORMAT = "webnn-program"
VERSION = 1
ALIGN = 16  # the largest typed-array element is 8 bytes; 16 keeps views SIMD-friendly too


@dataclass(frozen=True)
class Ref:
    """An operand handle as the loader sees it: the program's operand id and its descriptor."""

    id: int
    desc: dict[str, Any]
    handle: BuilderOperand

    @property
    def shape(self) -> list[int]:
        return list(self.desc["shape"])

    @property
    def data_type(self) -> str:
        return str(self.desc["dataType"])


@dataclass
class Program:
    """A recorded graph: `json` (the steps, see the module docstring) and `weights` (all constants)."""

    json: dict[str, Any]
    weights: bytes

    def dumps(self) -> str:
        """The program JSON as compact text."""
        return json.dumps(self.json, separators=(",", ":"), allow_nan=False)

    def save(self, stem: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write `<stem>.json` and `<stem>.bin`; returns both paths."""
        stem = Path(stem)
        js, bin_ = stem.with_suffix(".json"), stem.with_suffix(".bin")
        js.write_text(json.dumps(self.json, indent=1, allow_nan=False) + "\n")
        bin_.write_bytes(self.weights)
        return js, bin_


def _desc(handle: BuilderOperand) -> dict[str, Any]:
    return {"dataType": handle.data_type.value, "shape": list(handle.shape)}


class RecordingBuilder:
    """The loader's builder interface, validating through GraphBuilder and recording a `Program`."""

    def __init__(self, source: str = "") -> None:
        self.builder = GraphBuilder()
        self.source = source
        self.steps: list[dict[str, Any]] = []
        self.inputs: dict[str, dict[str, Any]] = {}
        self.weights = bytearray()
        self._next_id = 0

    def _ref(self, handle: BuilderOperand) -> Ref:
        ref = Ref(self._next_id, _desc(handle), handle)
        self._next_id += 1
        return ref

    def input(self, name: str, desc: Mapping[str, Any]) -> Ref:
        """input(name, descriptor), recorded.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-input"""
        ref = self._ref(self.builder.input(name, desc))
        self.inputs[name] = ref.desc
        self.steps.append({"id": ref.id, "input": name, "desc": ref.desc})
        return ref

    def constant(self, desc: Mapping[str, Any], data: Any) -> Ref:
        """constant(descriptor, buffer): the bytes go to the weights buffer.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constant"""
        ref = self._ref(self.builder.constant(desc, data))
        raw = memoryview(data).cast("B") if data.flags.c_contiguous else memoryview(data.tobytes())
        offset = -len(self.weights) % ALIGN + len(self.weights)
        self.weights.extend(bytes(offset - len(self.weights)))
        self.weights.extend(raw)
        self.steps.append({"id": ref.id, "constant": {"offset": offset, "byteLength": raw.nbytes},
                           "desc": ref.desc})
        return ref

    def op(self, name: str, *args: Any, **options: Any) -> Ref | list[Ref]:
        """One MLGraphBuilder method call, validated and recorded.  https://www.w3.org/TR/webnn/#mlgraphbuilder"""
        result = getattr(self.builder, name)(*_handles(args), **_handles(options))
        refs = [self._ref(h) for h in result] if isinstance(result, list) else [self._ref(result)]
        self.steps.append({"op": name, "args": [_encode(a) for a in args],
                           "options": {k: _encode(v) for k, v in options.items()},
                           "out": [r.id for r in refs], "descs": [r.desc for r in refs]})
        return refs if isinstance(result, list) else refs[0]

    def build(self, outputs: Mapping[str, Ref]) -> Program:
        """build(outputs): validated by GraphBuilder, returned as a Program.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build"""
        self.builder.build({k: v.handle for k, v in outputs.items()})
        program = {
            "format": FORMAT, "version": VERSION, "source": self.source,
            "inputs": self.inputs,
            "outputs": {k: {"operand": v.id, **v.desc} for k, v in outputs.items()},
            "weights": {"byteLength": len(self.weights)},
            "steps": self.steps,
        }
        return Program(program, bytes(self.weights))


def _handles(v: Any) -> Any:
    """Args/options as a JS caller passes them: Refs as GraphBuilder operands, NumPy scalars as numbers."""
    if isinstance(v, Ref):
        return v.handle
    if isinstance(v, (list, tuple)):
        return [_handles(x) for x in v]
    if isinstance(v, dict):
        return {k: _handles(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        return v.item()
    return v


def _encode(v: Any) -> Any:
    """One argument or option value as JSON (see the module docstring)."""
    if isinstance(v, Ref):
        return {"operand": v.id}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # NumPy scalars
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return {"number": "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"cannot record a {type(v).__name__} argument: {v!r}")


def record_tflite(source: str | os.PathLike[str] | bytes | bytearray | memoryview,
                  name: str = "") -> Program:
    """Read a .tflite model and record its WebNN builder calls as a Program."""
    from py_core.loaders.tflite import build_tflite, read_tflite

    model = read_tflite(source, name=name or None)  # errors name the model as the page knows it
    label = name or (os.path.basename(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else "")
    program: Program = build_tflite(model, RecordingBuilder(label))
    return program


def replay(program: Program, builder: Any) -> Any:
    """Replay a Program through any loader-interface builder (e.g. GraphBuilderAdapter): what build() returns.

    The Python twin of `web/gallery/lib/replay.js`, used to check programs in CPython."""
    import numpy as np

    from py_core.types import DataType

    weights = memoryview(program.weights)
    operands: dict[int, Any] = {}

    def decode(v: Any) -> Any:
        if isinstance(v, list):
            return [decode(x) for x in v]
        if isinstance(v, dict):
            if set(v) == {"operand"}:
                return operands[v["operand"]]
            if set(v) == {"number"}:
                return float(v["number"].lower().replace("infinity", "inf"))
            return {k: decode(x) for k, x in v.items()}
        return v

    for step in program.json["steps"]:
        if "input" in step:
            operands[step["id"]] = builder.input(step["input"], step["desc"])
        elif "constant" in step:
            c, desc = step["constant"], step["desc"]
            dtype = DataType.parse(desc["dataType"]).numpy_name
            data = np.frombuffer(weights[c["offset"]:c["offset"] + c["byteLength"]], dtype=dtype)
            operands[step["id"]] = builder.constant(desc, data.reshape(desc["shape"]))
        else:
            result = builder.op(step["op"], *decode(step["args"]), **decode(step["options"]))
            for i, r in zip(step["out"], result if isinstance(result, list) else [result], strict=True):
                operands[i] = r
    return builder.build({k: operands[v["operand"]] for k, v in program.json["outputs"].items()})
