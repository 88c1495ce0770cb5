"""Shrink a fuzz finding while it still holds: drop trailing operators, shrink input and constant shapes (a
dimension halved, a leading 1 dropped: only variants py_core's builder judges as it judged the finding, accepted
or refused with the same error), then (except for wrong values) zero input values chunk by chunk (halves,
quarters, ... down to single values), re-running the finding's implementation after every step.  `holds(case)`
says whether a variant still shows the finding; the budget bounds the runs."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from bench.cases.fuzz_defects import refused
from bench.cases.graphs import BenchCase

Holds = Callable[[BenchCase], bool]


def _used(graph: dict[str, Any]) -> set[str]:
    names: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            names.add(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk([op["arguments"] for op in graph["operators"]])
    walk(list((graph.get("buildOutputs") or {}).values()))
    return names


def _prefix(graph: dict[str, Any], keep: int) -> dict[str, Any] | None:
    """The graph's first `keep` operators, the last one's first result as the output."""
    g = copy.deepcopy(graph)
    dropped = g["operators"][keep:]
    g["operators"] = g["operators"][:keep]
    outs = g["operators"][-1]["outputs"]
    last = outs[0] if isinstance(outs, list) else outs
    old = graph["outputs"][0]
    g["outputs"] = [last]
    if "buildOutputs" in g:
        g["buildOutputs"] = {k: (last if v == old else v) for k, v in g["buildOutputs"].items()}
    dropped_names = {str(o) for op in dropped for o in (op["outputs"] if isinstance(op["outputs"], list)
                                                        else [op["outputs"]])}
    if dropped_names & _used(g):
        return None
    used = _used(g)
    g["inputs"] = {n: s for n, s in g["inputs"].items() if n in used}
    return g


def _zeroed(graph: dict[str, Any], name: str, lo: int, hi: int) -> dict[str, Any] | None:
    data = graph["inputs"][name]["data"]
    if not isinstance(data, list) or all(v in (0, 0.0) for v in data[lo:hi]):
        return None
    g = copy.deepcopy(graph)
    g["inputs"][name]["data"][lo:hi] = [0] * (hi - lo)
    return g


def _cuts(shape: list[int]) -> Iterator[tuple[list[int], tuple[slice, ...]]]:
    """Smaller shapes of one operand, each with the part of its values it keeps: a leading 1 dropped, then each
    dimension halved (its first half kept)."""
    if shape and shape[0] == 1:
        yield shape[1:], ()
    for axis, d in enumerate(shape):
        if d > 1:
            yield [*shape[:axis], d // 2, *shape[axis + 1:]], (slice(None),) * axis + (slice(0, d // 2),)


def _reshaped(graph: dict[str, Any], names: list[str], shape: list[int], keep: tuple[slice, ...]
              ) -> dict[str, Any]:
    """The graph with operands `names` (all of one shape) cut to `shape`, keeping the values at `keep`."""
    g = copy.deepcopy(graph)
    for name in names:
        spec = g["inputs"][name]
        old = spec["descriptor"]["shape"]
        if isinstance(spec["data"], list) and len(spec["data"]) == int(np.prod(old)):  # a scalar fill stays
            spec["data"] = np.array(spec["data"], dtype=object).reshape(old)[keep].reshape(-1).tolist()
        spec["descriptor"]["shape"] = list(shape)
    return g


def _shrunk(graph: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Variants with smaller input and constant shapes, largest operands first: each cut is applied to every
    operand of that shape at once (operands an operator needs alike), then to each alone."""
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for name, spec in graph["inputs"].items():
        by_shape.setdefault(tuple(spec["descriptor"]["shape"]), []).append(name)
    for shape, names in sorted(by_shape.items(), key=lambda kv: -int(np.prod(kv[0]))):
        for new, keep in _cuts(list(shape)):
            yield _reshaped(graph, names, new, keep)
            if len(names) > 1:
                for name in names:
                    yield _reshaped(graph, [name], new, keep)


def _candidates(graph: dict[str, Any], values: bool) -> Iterator[dict[str, Any] | None]:
    """Smaller variants, largest cuts first; the caller keeps the first that still holds and asks again.
    Shape variants py_core's builder judges otherwise than `graph` (accepted, or refused with another error)
    are left out.  `values`: zero input values too (not for a wrong-values finding: zeros make degenerate cases,
    a zero scale or all indices equal, that show another disagreement than the one found)."""
    for keep in range(1, len(graph["operators"])):
        yield _prefix(graph, keep)
    verdict = refused(graph)
    for g in _shrunk(graph):
        if refused(g) == verdict:
            yield g
    if not values:
        return
    for name, spec in graph["inputs"].items():
        n = len(spec["data"]) if isinstance(spec["data"], list) else 0
        size = max(n // 2, 1) if n else 0
        while size >= 1:
            for lo in range(0, n, size):
                yield _zeroed(graph, name, lo, min(n, lo + size))
            size //= 2


def minimize(case: BenchCase, holds: Holds, budget: int = 24, values: bool = True) -> tuple[BenchCase, int]:
    """The smallest variant of `case` found within `budget` runs for which `holds` stays true, and the runs
    spent (`values`: zero input values as well as drop operators and shrink shapes).  Variants are named
    `<id>~<step>` so no memo mistakes one for another."""
    current, runs, step = case, 0, 0
    progress = True
    while progress and runs < budget:
        progress = False
        for graph in _candidates(current.graph, values):
            if graph is None:
                continue
            if runs >= budget:
                break
            step += 1
            trial = dataclasses.replace(current, id=f"{case.id}~{step}", graph=graph)
            runs += 1
            if holds(trial):
                current, progress = trial, True
                break
    return current, runs
