"""The graph file: one format for every WebNN graph kept outside a builder (docs/graph-file.md).
https://www.w3.org/TR/webnn/#mlgraphbuilder

WPT cases on their way to the bench page, the bench's model graphs (bench/perf/models.py) and TFLite models
recorded by the loader (py_core/loaders/recording.py) are all a `GraphFile`: MLGraphBuilder calls by name with
their arguments, operands named, constants (and, for cases, input values) as bytes.  `web/lib/graphfile.js` is
the JS twin (reader, writer and the one replayer, for any MLGraphBuilder); `replay` here builds one with
py_core's GraphBuilder.  `Recorder` writes one: a GraphBuilder that records every validated call.

    {"format": "webnn-graph", "version": 1, "name": "...", "source": "...", "meta": {...},
     "inputs":     {"<name>": {"dataType": "float32", "shape": [1, 3], "data"?: <data>, "foreign"?: true}},
     "constants":  {"<name>": {"dataType": "float32", "shape": [3], "data": <data>, "foreign"?: true}},
     "operations": [{"op": "conv2d", "args": [<value>, ...], "options": {"<member>": <value>},
                     "outputs": ["<name>", ...], "descriptors"?: [{"dataType", "shape"}, ...]}],
     "outputs":    {"<output name>": "<operand name>"},
     "weights"?:   {"byteLength": <n>}}

<data> is `{"offset": o, "byteLength": n}` (a range of the weights: the side file `<stem>.bin`, or the buffer
sent beside the JSON), `{"base64": "..."}` (the bytes inline), or `{"base64": "...", "fill": true}` (one
element repeated over the shape).  Bytes are little-endian, offsets 16-byte aligned.
<value> is JSON, or `{"$op": "<name>"}` for an MLOperand, or `{"$n": "<text>"}` for a number JSON cannot
hold: an integer text is a bigint (JS BigInt; `BigInt` here), any other text ("Infinity", "-Infinity", "NaN",
"-0.0") a double.  The tag is the one py_core/bridge/jsonnum.py uses across the JS boundary.
`"foreign": true` makes that operand with a second builder, so the first refuses it (the bench's fuzzer writes it
as a defect; https://www.w3.org/TR/webnn/#mlgraphbuilder-validate-operand).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "webnn-graph"
VERSION = 1
ALIGN = 16  # the largest typed-array element is 8 bytes; 16 keeps views SIMD-friendly too
_INT_TEXT = re.compile(r"^-?\d+$")


class BigInt(int):
    """An integer the file marks as a bigint (`{"$n": "5"}`), so it goes back to JS as a BigInt."""


@dataclass(frozen=True)
class OperandRef:
    """An MLOperand argument, by the name the file gives the operand."""

    name: str


class GraphFileError(ValueError):
    """A graph file that does not follow the schema: names the file and the offending part."""


# -------------------------------------------------------------------------------------------- values


def encode_value(v: Any) -> Any:
    """One argument or option value as JSON (see the module docstring)."""
    if isinstance(v, OperandRef):
        return {"$op": v.name}
    if isinstance(v, BigInt) or (isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53):
        return {"$n": str(int(v))}
    if isinstance(v, float) and (not math.isfinite(v) or (v == 0 and math.copysign(1, v) < 0)):
        return {"$n": "NaN" if math.isnan(v) else ("-0.0" if v == 0 else ("Infinity" if v > 0 else "-Infinity"))}
    if isinstance(v, (list, tuple)):
        return [encode_value(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): encode_value(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # NumPy scalars
        return encode_value(v.item())
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"graph file: cannot write a {type(v).__name__} value: {v!r}")


def decode_value(v: Any) -> Any:
    """Undo encode_value: operands as OperandRef, tagged numbers as BigInt or float."""
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1 and "$op" in v:
            return OperandRef(str(v["$op"]))
        if len(v) == 1 and "$n" in v:
            text = str(v["$n"])
            return BigInt(int(text)) if _INT_TEXT.match(text) else float(text.replace("Infinity", "inf"))
        return {k: decode_value(x) for k, x in v.items()}
    return v


# ------------------------------------------------------------------------------------------ the file


@dataclass
class Operation:
    """One MLGraphBuilder method call: positional arguments, the options dictionary, named results."""

    op: str
    args: list[Any]
    options: dict[str, Any]
    outputs: list[str]
    descriptors: list[dict[str, Any]] | None = None  # what the writer's builder inferred, checked on replay

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "args": encode_value(self.args),
                               "options": encode_value(self.options), "outputs": list(self.outputs)}
        if self.descriptors is not None:
            out["descriptors"] = self.descriptors
        return out


@dataclass
class GraphFile:
    """A graph file in memory: the JSON part as dataclasses and plain dicts, plus the weights buffer."""

    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {dataType, shape, data?}
    constants: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {dataType, shape, data}
    operations: list[Operation] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # output name -> operand name
    weights: bytes = b""
    name: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object (strict JSON: no NaN/Infinity literals anywhere)."""
        out: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.name:
            out["name"] = self.name
        if self.source:
            out["source"] = self.source
        if self.meta:
            out["meta"] = self.meta
        out.update({"inputs": self.inputs, "constants": self.constants,
                    "operations": [op.to_json() for op in self.operations], "outputs": self.outputs})
        if self.weights:
            out["weights"] = {"byteLength": len(self.weights)}
        return out

    def dumps(self, indent: int | None = None) -> str:
        """The JSON text; compact unless `indent`."""
        seps = (",", ":") if indent is None else None
        return json.dumps(self.to_json(), indent=indent, separators=seps, allow_nan=False)

    def save(self, stem: str | os.PathLike[str]) -> tuple[Path, Path | None]:
        """Write `<stem>.json` and, when there are weights, `<stem>.bin`; returns both paths."""
        stem = Path(stem)
        js = stem.with_name(stem.name + ".json") if stem.suffix not in ("", ".json") else stem.with_suffix(".json")
        js.write_text(self.dumps(indent=1) + "\n")
        if not self.weights:
            return js, None
        bin_ = js.with_suffix(".bin")
        bin_.write_bytes(self.weights)
        return js, bin_

    # ---------------------------------------------------------------- reading

    def array(self, name: str) -> Any:
        """The values of input or constant `name` as a NumPy array of its type and shape (None: no data)."""
        import numpy as np

        entry = self.inputs.get(name) or self.constants.get(name)
        if entry is None:
            raise KeyError(name)
        data = entry.get("data")
        if data is None:
            return None
        shape = tuple(int(d) for d in entry["shape"])
        dtype = np.dtype(entry["dataType"]).newbyteorder("<")
        count = math.prod(shape)
        if "offset" in data:
            start, length = int(data["offset"]), int(data["byteLength"])
            if start < 0 or start + length > len(self.weights):
                raise GraphFileError(f"graph file {self.name!r}: '{name}' bytes [{start}, +{length}) are outside "
                                     f"the {len(self.weights)}-byte weights")
            raw: bytes | memoryview = memoryview(self.weights)[start:start + length]
        elif "base64" in data:
            raw = base64.b64decode(data["base64"])
        else:
            raise GraphFileError(f"graph file {self.name!r}: '{name}' has data {sorted(data)}; "
                                 "expected offset/byteLength or base64")
        arr = np.frombuffer(raw, dtype)
        if data.get("fill"):
            if arr.size != 1:
                raise GraphFileError(f"graph file {self.name!r}: '{name}' fills with {arr.size} values, not one")
            arr = np.full(count, arr[0], dtype)
        if arr.size != count:
            raise GraphFileError(f"graph file {self.name!r}: '{name}' holds {arr.size} {entry['dataType']} values, "
                                 f"shape {list(shape)} needs {count}")
        return arr.astype(dtype.newbyteorder("="), copy=False).reshape(shape)


def from_json(obj: Mapping[str, Any], weights: bytes = b"", where: str = "") -> GraphFile:
    """A GraphFile from its JSON object (and the weights buffer its offsets point into)."""
    where = where or str(obj.get("name", "")) or "<graph>"
    if obj.get("format") != FORMAT or obj.get("version") != VERSION:
        raise GraphFileError(f"{where}: not a {FORMAT} version {VERSION} file "
                             f"(format {obj.get('format')!r}, version {obj.get('version')!r})")
    want = int(obj.get("weights", {}).get("byteLength", 0))
    if want != len(weights):
        raise GraphFileError(f"{where}: the file names {want} bytes of weights, {len(weights)} were given")
    try:
        ops = [Operation(str(o["op"]), list(decode_value(o.get("args", []))),
                         dict(decode_value(o.get("options") or {})), [str(n) for n in o["outputs"]],
                         o.get("descriptors")) for o in obj["operations"]]
        return GraphFile(dict(obj["inputs"]), dict(obj.get("constants", {})), ops, dict(obj["outputs"]),
                         bytes(weights), str(obj.get("name", "")), str(obj.get("source", "")),
                         dict(obj.get("meta", {})))
    except (KeyError, TypeError) as e:
        raise GraphFileError(f"{where}: malformed graph file ({type(e).__name__}: {e})") from e


def loads(text: str | bytes, weights: bytes = b"", where: str = "") -> GraphFile:
    """A GraphFile from JSON text."""
    return from_json(json.loads(text), weights, where)


def load(path: str | os.PathLike[str]) -> GraphFile:
    """Read `<stem>.json` and, when it names weights, the `<stem>.bin` beside it."""
    path = Path(path)
    js = path if path.suffix == ".json" else path.with_name(path.name + ".json")
    obj = json.loads(js.read_text(encoding="utf-8"))
    weights = js.with_suffix(".bin").read_bytes() if obj.get("weights") else b""
    return from_json(obj, weights, str(js))


# ------------------------------------------------------------------------------------------ replayer


def replay(graph: GraphFile, builder: Any = None) -> Any:
    """Build the file with a GraphBuilder (py_core's by default): what its build() returns.

    The Python twin of web/lib/graphfile.js's replay(), used to check files and run them in CPython.  Inputs and
    constants marked `foreign` are made with a second GraphBuilder."""
    from py_core.builder import GraphBuilder

    b = builder if builder is not None else GraphBuilder()
    other = GraphBuilder()
    operands: dict[str, Any] = {}

    def resolve(v: Any) -> Any:
        if isinstance(v, OperandRef):
            if v.name not in operands:
                raise GraphFileError(f"graph file {graph.name!r}: operand '{v.name}' is used before it is defined")
            return operands[v.name]
        if isinstance(v, list):
            return [resolve(x) for x in v]
        if isinstance(v, dict):
            return {k: resolve(x) for k, x in v.items()}
        return int(v) if isinstance(v, BigInt) else v

    for name, entry in graph.inputs.items():
        owner = other if entry.get("foreign") else b
        operands[name] = owner.input(name, {"dataType": entry["dataType"], "shape": entry["shape"]})
    for name, entry in graph.constants.items():
        owner = other if entry.get("foreign") else b
        operands[name] = owner.constant({"dataType": entry["dataType"], "shape": entry["shape"]}, graph.array(name))
    for op in graph.operations:
        result = getattr(b, op.op)(*resolve(op.args), **resolve(op.options))
        results = result if isinstance(result, list) else [result]
        if len(results) != len(op.outputs):
            raise GraphFileError(f"graph file {graph.name!r}: {op.op} gave {len(results)} operands, "
                                 f"the file names {len(op.outputs)}")
        operands.update(zip(op.outputs, results, strict=True))
    return b.build({k: operands[v] for k, v in graph.outputs.items()})


# ------------------------------------------------------------------------------------------ recorder


class Recorder:
    """A GraphBuilder that writes what it builds as a GraphFile: every call is validated by py_core's
    GraphBuilder, then recorded as made (arguments as given, not as the validator normalized them).

    It has GraphBuilder's methods (`input`, `constant`, `conv2d`, ..., `build`) and the TFLite loader's builder
    interface (`op(name, *args, **options)`, see py_core/loaders/tflite.py); operands are GraphBuilder's own
    handles, and `build()` returns the GraphFile.  Operands are named at build(): inputs by their names, the
    rest `t<id>`."""

    def __init__(self, name: str = "", source: str = "") -> None:
        from py_core.builder import GraphBuilder

        self.builder = GraphBuilder()
        self.name, self.source = name, source
        self._weights = bytearray()
        self._inputs: dict[str, tuple[int, dict[str, Any]]] = {}
        self._constants: list[tuple[int, dict[str, Any]]] = []
        # (op, args, options, output ids, output descriptors); operands as _Id until build() names them
        self._ops: list[tuple[str, Any, Any, list[int], list[dict[str, Any]]]] = []

    def input(self, name: str, descriptor: Mapping[str, Any]) -> Any:
        """input(name, descriptor), recorded.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-input"""
        handle = self.builder.input(name, descriptor)
        self._inputs[name] = (handle.id, handle.desc.to_json())
        return handle

    def constant(self, descriptor: Mapping[str, Any], data: Any) -> Any:
        """constant(descriptor, buffer); the bytes go to the weights.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constant"""
        import numpy as np

        handle = self.builder.constant(descriptor, data)
        raw = np.ascontiguousarray(data).data.cast("B")
        offset = len(self._weights) + (-len(self._weights) % ALIGN)
        self._weights.extend(bytes(offset - len(self._weights)))
        self._weights.extend(raw)
        data = {"offset": offset, "byteLength": raw.nbytes}
        self._constants.append((handle.id, {**handle.desc.to_json(), "data": data}))
        return handle

    def op(self, name: str, *args: Any, **options: Any) -> Any:
        """One MLGraphBuilder method call, validated and recorded.  https://www.w3.org/TR/webnn/#mlgraphbuilder"""
        result = getattr(self.builder, name)(*_plain(args), **_plain(options))
        handles = result if isinstance(result, list) else [result]
        self._ops.append((name, _ids(list(args)), _ids(options), [h.id for h in handles],
                          [h.desc.to_json() for h in handles]))
        return result

    def __getattr__(self, name: str) -> Any:
        from py_core.spec import OPS

        if name.startswith("_") or name not in OPS:
            raise AttributeError(name)
        return lambda *args, **options: self.op(name, *args, **options)

    def build(self, outputs: Mapping[str, Any]) -> GraphFile:
        """build(outputs): validated by GraphBuilder, returned as the GraphFile.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build"""
        self.builder.build(dict(outputs))
        names = {oid: n for n, (oid, _) in self._inputs.items()}
        taken = set(names.values())

        def name(oid: int) -> str:
            if oid not in names:
                n = f"t{oid}"
                while n in taken:  # an input already has this name
                    n += "_"
                names[oid] = n
                taken.add(n)
            return names[oid]

        def named(v: Any) -> Any:
            if isinstance(v, _Id):
                return OperandRef(name(v.id))
            if isinstance(v, list):
                return [named(x) for x in v]
            if isinstance(v, dict):
                return {k: named(x) for k, x in v.items()}
            return v

        return GraphFile(
            {n: d for n, (_, d) in self._inputs.items()},
            {name(oid): entry for oid, entry in self._constants},
            [Operation(op, named(args), named(options), [name(o) for o in outs], descs)
             for op, args, options, outs, descs in self._ops],
            {k: name(h.id) for k, h in outputs.items()},
            bytes(self._weights), self.name, self.source)


@dataclass(frozen=True)
class _Id:
    """An operand of the recording by GraphBuilder id, named at build()."""

    id: int


def _ids(v: Any) -> Any:
    """Recorded arguments: GraphBuilder handles as _Id, NumPy scalars as numbers."""
    from py_core.builder import BuilderOperand

    if isinstance(v, BuilderOperand):
        return _Id(v.id)
    if isinstance(v, (list, tuple)):
        return [_ids(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _ids(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        return v.item()
    return v


def _plain(v: Any) -> Any:
    """Arguments as a JS caller passes them: NumPy scalars as numbers."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)) and not hasattr(v, "builder"):
        return v.item()
    return v
