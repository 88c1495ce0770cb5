"""One defect in a valid fuzz graph (bench/cases/fuzz.py), so the error the draft requires is known.

Each defect edits the case graph (WPT form) in place and says what it did, or returns None when the graph
has nothing it applies to.  `apply_defect` keeps a defect only when py_core's builder then refuses the
graph: the CPython reference's error (a TypeError for every defect here) is the expectation of the others.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

from py_core.spec import OPS
from py_core.spec.table import ENUM, ENUMS, ULONG, ULONG_OR_ULONGS, ULONGS, Param
from py_core.types import DataType

Graph = dict[str, Any]


def _operands(graph: Graph) -> list[str]:
    return list(graph["inputs"])


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _retype(rng: random.Random, graph: Graph) -> str | None:
    """An input or constant of a data type its operator does not take."""
    name = rng.choice(_operands(graph))
    spec = graph["inputs"][name]
    old = spec["descriptor"]["dataType"]
    new = rng.choice([t.value for t in DataType if t.value != old])
    spec["descriptor"]["dataType"] = new
    spec["data"] = [1] * _count(spec["descriptor"]["shape"])
    return f"operand '{name}' {old} -> {new}"


def _rerank(rng: random.Random, graph: Graph) -> str | None:
    """An input or constant with one more (or one less) dimension."""
    name = rng.choice(_operands(graph))
    spec = graph["inputs"][name]
    shape = spec["descriptor"]["shape"]
    new = shape[1:] if shape and rng.random() < 0.5 else [2, *shape]
    spec["descriptor"]["shape"] = new
    spec["data"] = [1] * _count(new)
    return f"operand '{name}' shape {shape} -> {new}"


def _descriptor(rng: random.Random, graph: Graph) -> str | None:
    """An input descriptor the builder must refuse: a zero dimension, rank 9, or an unknown data type."""
    name = rng.choice(_operands(graph))
    d = graph["inputs"][name]["descriptor"]
    kind = rng.choice(("zero", "rank", "type"))
    if kind == "zero":
        d["shape"] = [*d["shape"], 0]
        graph["inputs"][name]["data"] = []
        return f"operand '{name}' with a zero dimension {d['shape']}"
    if kind == "rank":
        d["shape"] = [1] * 9
        graph["inputs"][name]["data"] = [1]
        return f"operand '{name}' of rank 9"
    d["dataType"] = "float64"
    return f"operand '{name}' of dataType 'float64' (not an MLOperandDataType)"


def _values(graph: Graph) -> Iterator[tuple[dict[str, Any], str, Param]]:
    """Every non-operand argument and option of the graph's operators: (holder dict, key, its Param)."""
    for op in graph["operators"]:
        spec = OPS[op["name"]]
        for arg in op["arguments"]:
            for key, value in arg.items():
                holders = [(value, k) for k in value] if key == "options" else [(arg, key)]
                for holder, k in holders:
                    try:
                        p = spec.param(k)
                    except KeyError:
                        continue
                    if not p.is_operand:
                        yield holder, k, p


def _integer(bad: Callable[[random.Random, Any, int], Any], what: str) -> Callable[[random.Random, Graph], str | None]:
    def defect(rng: random.Random, graph: Graph) -> str | None:
        spots = [s for s in _values(graph) if s[2].kind in (ULONG, ULONGS, ULONG_OR_ULONGS)]
        if not spots:
            return None
        holder, key, _ = rng.choice(spots)
        old = holder[key]
        rank = max((len(i["descriptor"]["shape"]) for i in graph["inputs"].values()), default=1)
        if isinstance(old, list) and old:
            new = list(old)
            new[rng.randrange(len(new))] = bad(rng, old, rank)
        else:
            new = bad(rng, old, rank)
        holder[key] = new
        return f"{key} {old} -> {new} ({what})"
    return defect


def _length(rng: random.Random, graph: Graph) -> str | None:
    """A sequence option (padding, strides, axes, ...) one element too long or too short."""
    spots = [s for s in _values(graph) if s[2].kind == ULONGS and isinstance(s[0][s[1]], list)]
    if not spots:
        return None
    holder, key, _ = rng.choice(spots)
    old = holder[key]
    holder[key] = old[:-1] if old and rng.random() < 0.5 else [*old, 1]
    return f"{key} {old} -> {holder[key]} (length)"


def _enum(rng: random.Random, graph: Graph) -> str | None:
    """An enum member no IDL enum has."""
    spots = [s for s in _values(graph) if s[2].kind in (ENUM, ENUMS)]
    if not spots:
        for op in graph["operators"]:  # an operator with an enum the case left at its default
            spec = OPS[op["name"]]
            for p in spec.options:
                if p.kind == ENUM:
                    if not op["arguments"] or "options" not in op["arguments"][-1]:
                        op["arguments"].append({"options": {}})
                    op["arguments"][-1]["options"][p.name] = "bogus"
                    return f"{p.name} 'bogus' (not a {p.enum_name})"
        return None
    holder, key, p = rng.choice(spots)
    old = holder[key]
    holder[key] = ["bogus"] if p.kind == ENUMS else "bogus"
    return f"{key} {old!r} -> 'bogus' (not a {p.enum_name})"


def _build_outputs(rng: random.Random, graph: Graph) -> str | None:
    """build() given an empty output name, no outputs, or an input operand as an output."""
    out = graph["outputs"][0]
    kind = rng.choice(("empty name", "none", "input"))
    if kind == "empty name":
        graph["buildOutputs"] = {"": out}
    elif kind == "none":
        graph["buildOutputs"] = {}
    else:
        name = next((n for n, s in graph["inputs"].items() if not s.get("constant")), None)
        if name is None:
            return None
        graph["buildOutputs"] = {"y": name}
    return f"build() outputs: {kind}"


def _foreign(rng: random.Random, graph: Graph) -> str | None:
    """An operand of a second MLGraphBuilder of the same context (`foreign` in the case graph) passed to an
    operator, or given to build() beside the graph's outputs.
    https://www.w3.org/TR/webnn/#mlgraphbuilder-validate-operand"""
    name = rng.choice(_operands(graph))
    if rng.random() < 0.5:
        graph["inputs"][name]["foreign"] = True
        return f"operand '{name}' of another builder passed to an operator"
    extra = next(f"{name}_other{k}" for k in range(len(graph["inputs"]) + 1)
                 if f"{name}_other{k}" not in graph["inputs"])
    graph["inputs"][extra] = {**copy.deepcopy(graph["inputs"][name]), "foreign": True}
    graph["buildOutputs"] = {**(graph.get("buildOutputs") or {n: n for n in graph["outputs"]}), extra: extra}
    return f"build() output '{extra}' of another builder"


DEFECTS: dict[str, Callable[[random.Random, Graph], str | None]] = {
    "data type": _retype,
    "rank": _rerank,
    "descriptor": _descriptor,
    "axis out of range": _integer(lambda rng, old, rank: rank + rng.randint(0, 3), "out of range"),
    "NaN integer": _integer(lambda rng, old, rank: "NaN", "NaN for an integer"),
    "negative unsigned": _integer(lambda rng, old, rank: -1, "negative for an unsigned long"),
    "integer overflow": _integer(lambda rng, old, rank: 2**32, "beyond unsigned long"),
    "sequence length": _length,
    "enum": _enum,
    "build outputs": _build_outputs,
    "foreign operand": _foreign,
}


def refused(graph: Graph) -> str | None:
    """The error py_core's builder gives for the graph (its DOM name), or None when it builds."""
    from py_core.errors import WebNNError
    from py_core.testing import wpt

    g = {**graph, "expectedOutputs": {n: {} for n in graph["outputs"]}}
    try:
        wpt.build_graph(g)
    except WebNNError as e:
        return e.dom_name
    except (ValueError, TypeError, KeyError, OverflowError, wpt.InvalidCase):
        return "TypeError"  # the case cannot even be read: what a JS builder's IDL conversion throws
    return None


def apply_defect(rng: random.Random, graph: Graph) -> str | None:
    """Give `graph` one defect py_core refuses (tried in a seeded order); None if none applies."""
    kinds = list(DEFECTS)
    rng.shuffle(kinds)
    for kind in kinds:
        trial = copy.deepcopy(graph)
        what = DEFECTS[kind](rng, trial)
        if what is not None and refused(trial) is not None:
            graph.clear()
            graph.update(trial)
            return f"{kind}: {what}"
    return None
