"""Shrink a fuzz finding while it still holds: drop trailing operators, then (except for wrong values) zero
input values chunk by chunk (halves, quarters, ... down to single values), re-running the finding's
implementation after every step.  `holds(case)` says whether a variant still shows the finding; the budget
bounds the runs."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

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


def _candidates(graph: dict[str, Any], values: bool) -> Iterator[dict[str, Any] | None]:
    """Smaller variants, largest cuts first; the caller keeps the first that still holds and asks again.
    `values`: zero input values too (not for a wrong-values finding: zeros make degenerate cases, a zero
    scale or all indices equal, that show another disagreement than the one found)."""
    for keep in range(1, len(graph["operators"])):
        yield _prefix(graph, keep)
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
    spent (`values`: zero input values as well as drop operators).  Variants are named `<id>~<step>` so no
    memo mistakes one for another."""
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
