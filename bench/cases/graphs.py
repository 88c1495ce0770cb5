"""Bench cases: the vendored WPT vectors and JSON graph files, normalized to one form, plus the graph file
(py_core/graphfile.py, docs/graph-file.md) the page-side runner (pages/bench/bench.js) replays with any MLGraphBuilder.

A case's graph is the WPT conformance form (see py_core/testing/wpt.py and the README section "Graph JSON
format"): `inputs` (descriptor, data, constant), `operators` (name, arguments, outputs), `expectedOutputs`
(optional here) and `outputs` (names, when no expected values are given).  Loading resolves every data form
(list, scalar fill, base64, seeded random) to flat lists, so py_core.testing.wpt builds the same graph in
CPython that the browsers build from the wire case.  Selections: bench/cases/select.py.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from py_core import graphfile as gf
from py_core.testing import wpt
from web.settings import REPO_ROOT

WPT_DIR = REPO_ROOT / "tests" / "data" / "wpt"
GRAPHS_DIR = REPO_ROOT / "tests" / "data" / "graphs"
_NON_FINITE = {"Infinity", "-Infinity", "NaN", "inf", "-inf", "nan"}
_BIGINT_RE = re.compile(r"^-?\d+n$")


@dataclass(frozen=True)
class BenchCase:
    """One graph with its inputs and, optionally, expected outputs."""

    id: str  # "wpt:<op>/<name>" or "graph:<file stem>/<name>": stable, used in test ids and results
    graph: dict[str, Any]
    source: str = ""
    model: str | None = None  # groups the latency charts of model-sized graphs
    tolerance: dict[str, Any] | None = None  # {"ulp": N, "atol": x}: overrides the WPT rule
    invalid: str = ""  # why the case cannot run as written (kept, reported as "invalid")
    description: str = ""
    # a model run through a real WebNN client (bench/cases/frameworks.py): {kind, path, url, inputs, outputs, ...}
    client: dict[str, Any] | None = None
    # a fuzz case (bench/cases/fuzz.py): {seed, index, defect}; its verdict is agreement with the reference
    fuzz: dict[str, Any] | None = None

    @property
    def ops(self) -> list[str]:
        """Operator names in graph order, without repeats."""
        return list(dict.fromkeys(o["name"] for o in self.graph.get("operators", [])))

    @property
    def op(self) -> str:
        """The row this case is filed under in the report: the WPT file's operator ("conv2d"), else the
        graph file or model it comes from ("graph:tiny_cnn", "tflite:selfie_segmentation")."""
        group = self.id.split("/", 1)[0]
        return group.split(":", 1)[1] if group.startswith("wpt:") else group

    @property
    def outputs(self) -> list[str]:
        """Names of the operands the graph computes: those with expected values, else `outputs`."""
        expected = self.graph.get("expectedOutputs") or {}
        if "buildOutputs" in self.graph:  # names build() is given (fuzz cases: bench/cases/fuzz.py)
            return list(self.graph["buildOutputs"])
        return list(expected) if expected else list(self.graph.get("outputs", []))

    @property
    def has_expected(self) -> bool:
        """Whether the case carries its own expected values."""
        return bool(self.graph.get("expectedOutputs"))


# ------------------------------------------------------------------------------------------- data forms


def resolve_data(data: Any, dtype: str, shape: Sequence[int], where: str) -> Any:
    """A data field as WPT form (flat list or scalar): base64 and seeded random forms become flat lists."""
    if isinstance(data, Mapping):
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if "base64" in data:
            arr = np.frombuffer(base64.b64decode(data["base64"]), dtype=np.dtype(dtype).newbyteorder("<"))
            if arr.size != count:
                raise ValueError(f"{where}: base64 holds {arr.size} {dtype} values, shape {list(shape)} needs {count}")
            return arr.astype(dtype).tolist()
        if "random" in data:
            r = data["random"]
            rng = np.random.default_rng(int(r.get("seed", 0)))
            low, high = float(r.get("low", -1.0)), float(r.get("high", 1.0))
            if np.issubdtype(np.dtype(dtype), np.integer):
                return rng.integers(int(low), int(high), size=count, endpoint=True).astype(dtype).tolist()
            # drawn in float64, rounded once to the operand type
            return rng.uniform(low, high, size=count).astype(dtype).tolist()
        raise ValueError(f"{where}: unknown data form {sorted(data)} (use a list, a number, base64 or random)")
    if isinstance(data, list) and data and isinstance(data[0], list):
        return np.asarray(data).ravel().tolist()  # nested lists are accepted and flattened row-major
    return data


def _normalize_graph(graph: Mapping[str, Any], where: str) -> dict[str, Any]:
    g = copy.deepcopy(dict(graph))
    for name, spec in g.get("inputs", {}).items():
        d = spec["descriptor"]
        spec["data"] = resolve_data(spec.get("data"), d["dataType"], d["shape"], f"{where}: input '{name}'")
    for name, spec in (g.get("expectedOutputs") or {}).items():
        d = spec["descriptor"]
        spec["data"] = resolve_data(spec.get("data"), d["dataType"], d["shape"], f"{where}: output '{name}'")
    if not g.get("expectedOutputs") and not g.get("outputs"):
        raise ValueError(f"{where}: name the graph's outputs ('outputs') or give 'expectedOutputs'")
    return g


# ---------------------------------------------------------------------------------------------- loading


def graph_case(prefix: str, name: str, graph: Mapping[str, Any], source: str, meta: Mapping[str, Any]) -> BenchCase:
    where = f"{source}: {name}"
    invalid = ""
    try:
        g = _normalize_graph(graph, where)
    except (KeyError, ValueError, TypeError) as e:
        g, invalid = dict(graph), f"{type(e).__name__}: {e}"
    if not invalid and any(wpt.has_null(g.get(k) or {}) for k in ("inputs", "operators", "expectedOutputs")):
        invalid = "the case data holds null where the JSON conversion dropped a non-finite value"
    return BenchCase(
        f"{prefix}/{name}",
        g,
        source,
        meta.get("model"),
        meta.get("tolerance"),
        invalid,
        meta.get("description", ""),
        fuzz=meta.get("fuzz"),
    )


def load_graph_file(path: str | Path) -> list[BenchCase]:
    """The cases of one graph JSON file: a single graph, {"tests": [{"name", "graph", ...}]}, or a graph file
    (docs/graph-file.md: a recorded model, a bench graph) with its weights beside it."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") == gf.FORMAT:
        graph = gf.load(path)
        name = graph.name or path.stem
        return [graph_case(f"graph:{path.stem}", name, file_graph(graph), str(path), {"model": name, **graph.meta})]
    return load_graph_data(data, path.stem, str(path))


def load_graph_data(data: Mapping[str, Any], stem: str | None = None, source: str = "") -> list[BenchCase]:
    """The cases of graph-file content; without a file name the graph is "inline-<content hash>"."""
    if stem is None:
        digest = hashlib.sha1(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:8]
        stem = str(data.get("name") or f"inline-{digest}")
    prefix = f"graph:{stem}"
    if "tests" in data:
        return [graph_case(prefix, t["name"], t["graph"], source, {**data, **t}) for t in data["tests"]]
    graph = data.get("graph", data)
    return [graph_case(prefix, str(data.get("name", stem)), graph, source, data)]


def _case_value(v: Any) -> Any:
    """A graph-file value as a graph-case argument: operands by name, bigints as "<n>n" (WPT's spelling)."""
    if isinstance(v, gf.OperandRef):
        return v.name
    if isinstance(v, gf.BigInt):
        return f"{int(v)}n"
    if isinstance(v, list):
        return [_case_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _case_value(x) for k, x in v.items()}
    return v


def file_graph(graph: gf.GraphFile, value_range: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any]:
    """A graph file (docs/graph-file.md) as a case's graph: the file's input values, else seeded random ones in
    `value_range`; constants as base64."""
    renamed = {v: k for k, v in graph.outputs.items()}  # the case names outputs as the model does
    inputs: dict[str, Any] = {}
    low, high = value_range
    for name, entry in graph.inputs.items():
        data = graph.array(name)
        inputs[name] = {
            "descriptor": {"dataType": entry["dataType"], "shape": entry["shape"]},
            "data": {"random": {"seed": len(inputs), "low": low, "high": high}} if data is None
            else {"base64": base64.b64encode(data.astype(entry["dataType"]).tobytes()).decode()},
        }
    for name, entry in graph.constants.items():
        inputs[renamed.get(name, name)] = {
            "descriptor": {"dataType": entry["dataType"], "shape": entry["shape"]},
            "data": {"base64": base64.b64encode(graph.array(name).astype(entry["dataType"]).tobytes()).decode()},
            "constant": True,
        }

    def named(v: Any) -> Any:
        return gf.OperandRef(renamed.get(v.name, v.name)) if isinstance(v, gf.OperandRef) else v

    operators: list[dict[str, Any]] = []
    for op in graph.operations:
        outs = [renamed.get(o, o) for o in op.outputs]
        args = [{f"arg{i}": _case_value(_deep(a, named))} for i, a in enumerate(op.args)]
        if op.options:
            args.append({"options": _case_value(_deep(op.options, named))})
        operators.append({"name": op.op, "arguments": args, "outputs": outs if len(outs) > 1 else outs[0]})
    return {"inputs": inputs, "operators": operators, "outputs": list(graph.outputs)}


def _deep(v: Any, fn: Any) -> Any:
    if isinstance(v, list):
        return [_deep(x, fn) for x in v]
    if isinstance(v, dict):
        return {k: _deep(x, fn) for k, x in v.items()}
    return fn(v)


def load_wpt(
    directory: str | Path = WPT_DIR, ops: Iterable[str] | None = None, limit: int | None = None
) -> list[BenchCase]:
    """WPT cases through py_core.testing.wpt's loader: all, or those of `ops`, at most `limit` per file."""
    wanted = set(ops or ())
    out: list[BenchCase] = []
    for path in sorted(Path(directory).glob("*.json")):
        cases = wpt.load_file(path)
        names = {path.stem, wpt.snake_to_camel(path.stem)} | {c.op for c in cases}
        if wanted and not wanted & names:
            continue
        for c in cases[:limit] if limit else cases:
            out.append(graph_case(f"wpt:{c.op}", c.name, c.graph, str(path), {}))
    return out


# -------------------------------------------------------------------------------------------- wire form


def _value(value: Any, kind: str | None, operand_names: set[str]) -> Any:
    """One WPT argument as a graph-file value: operand names become OperandRefs, "5n" a BigInt, "Infinity" a
    float (py_core.graphfile then writes each in its one JSON form)."""
    from py_core.spec.table import OPERAND, OPERANDS

    if isinstance(value, str) and (kind == OPERAND or (kind is None and value in operand_names)):
        return gf.OperandRef(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, str) for v in value)
        and (kind == OPERANDS or (kind is None and all(v in operand_names for v in value)))
    ):
        return [gf.OperandRef(v) for v in value]
    if isinstance(value, str) and _BIGINT_RE.match(value):
        return gf.BigInt(int(value[:-1]))
    if isinstance(value, str) and value in _NON_FINITE:
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, str):
        return wpt.decode_scalar(value)
    if isinstance(value, list):
        return [_value(v, None, operand_names) for v in value]
    if isinstance(value, dict):
        return {k: _value(v, None, operand_names) for k, v in value.items()}
    return value


def _param_kind(spec: Any, name: str, position: int | None) -> str | None:
    if spec is None:
        return None
    if position is not None:
        return spec.params[position].kind if position < len(spec.params) else None
    try:
        return str(spec.param(name).kind)
    except KeyError:
        return None


def input_arrays(case: BenchCase) -> dict[str, np.ndarray]:
    """Every input and constant as an array of its operand type (WPT conversion rules)."""
    out = {}
    for name, spec in case.graph.get("inputs", {}).items():
        d = spec["descriptor"]
        out[name] = wpt.to_array(spec["data"], d["dataType"], tuple(d["shape"]))
    return out


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()).decode()


def wire_case(case: BenchCase) -> gf.GraphFile:
    """The case as the graph file the page-side runner (pages/bench/bench.js) replays: input values and constants
    inline as base64, operands by name.  It is transcribed, not validated: invalid calls must reach the
    builder under test."""
    from py_core.spec import OPS

    graph = gf.GraphFile(name=case.id, source=case.source)
    names: set[str] = set()
    for name, arr in input_arrays(case).items():
        spec = case.graph["inputs"][name]
        entry: dict[str, Any] = {"dataType": spec["descriptor"]["dataType"],
                                 "shape": list(spec["descriptor"]["shape"])}
        if arr.size > 1 and not isinstance(spec["data"], list):
            # one value filling the tensor (WPT's large-input cases): the page fills it, no bytes cross
            entry["data"] = {"base64": _b64(arr.reshape(-1)[:1]), "fill": True}
        else:
            entry["data"] = {"base64": _b64(arr)}
        if spec.get("foreign"):  # made by a second builder of the same context (a fuzz defect)
            entry["foreign"] = True
        (graph.constants if spec.get("constant") else graph.inputs)[name] = entry
        names.add(name)
    for op in case.graph.get("operators", []):
        spec = OPS.get(op["name"])
        args: list[Any] = []
        options: dict[str, Any] = {}
        for arg in op.get("arguments", []):
            for key, value in arg.items():
                if key == "options":
                    options = {k: _value(v, _param_kind(spec, k, None), names) for k, v in value.items()}
                else:
                    args.append(_value(value, _param_kind(spec, key, len(args)), names))
        outs = op.get("outputs")
        outs = [str(o) for o in outs] if isinstance(outs, list) else [str(outs)]
        names.update(outs)
        graph.operations.append(gf.Operation(op["name"], args, options, outs))
    named = case.graph.get("buildOutputs")
    graph.outputs = dict(named) if named is not None else {n: n for n in case.outputs}
    return graph
