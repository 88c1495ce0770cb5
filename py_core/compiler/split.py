"""One graph over both cores: is a graph separable over its batch, and the same graph for one part of it.

Pyodide has no threads, so a second core means a second worker (a second Pyodide).  A graph is split when every
operation maps batch item i of its inputs to batch item i of its outputs along axis 0 (each operator's `batch`
rule in py_core/kernels, traits.py: conservative, an operator without one never splits), every graph input has
the same batch, a multiple of the number of parts, every graph output carries it, and the graph does enough
work per run to pay for the second worker's messages (`SPLIT_MIN_FLOPS`, from the `flops` traits).  Each worker
then runs the same graph built for one part of the batch (`SplitPlan.graph_json`: batched operands' axis 0 and
shape-carrying options such as reshape's newShape rewritten), and the parts' outputs are joined
(py_core/bridge/split_glue.py, polyfill/src/engine/split.js).  docs/performance.md, "One graph on both cores".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from py_core.bridge.jsonnum import dumps
from py_core.compiler.stats import product_flops
from py_core.graph import Graph, _jsonable
from py_core.kernels import traits
from py_core.kernels.traits import BatchSite

# Below this many FLOP of products per run (a few ms of work) a split cannot pay for its messages, copies and
# a cross-thread wake-up (0.1-1 ms each way on the loaded machine: docs/performance.md); a conservative
# setting, not a measured crossover (the machine was never quiet long enough to sweep one)
SPLIT_MIN_FLOPS = 100e6


@dataclass(frozen=True)
class SplitPlan:
    """How a graph splits: `parts` equal parts of `batch` items, each a graph built from `graph_json`."""

    batch: int
    parts: int
    graph_json: str

    @property
    def part(self) -> int:
        return self.batch // self.parts


def batch_of(graph: Graph) -> int | None:
    """The batch every graph input shares on axis 0, or None."""
    sizes = {graph.operands[i].desc.shape[0] if graph.operands[i].desc.shape else None for i in graph.inputs.values()}
    if len(sizes) != 1:
        return None
    (size,) = sizes
    return size


def plan_split(graph: Graph, parts: int = 2, min_flops: float | None = None) -> SplitPlan | None:
    """The plan splitting `graph` into `parts` equal parts of its batch, or None when it may not (or need not:
    fewer than `min_flops` FLOP of products per run, default SPLIT_MIN_FLOPS) split."""
    batch = batch_of(graph)
    if parts < 2 or not batch or batch < parts or batch % parts:
        return None
    if product_flops(graph) < (SPLIT_MIN_FLOPS if min_flops is None else min_flops):
        return None
    part = batch // parts
    batched: set[int] = set(graph.inputs.values())
    options: dict[int, dict[str, Any]] = {}
    for index, op in enumerate(graph.operations):
        shapes: dict[str, list[tuple[int, ...]]] = {}
        flags: dict[str, list[bool]] = {}
        for name, ref in op.operands.items():
            if ref is None:
                continue
            ids = ref if isinstance(ref, list) else [ref]
            shapes[name] = [tuple(graph.operands[i].desc.shape) for i in ids]
            flags[name] = [i in batched for i in ids]
        if not any(any(f) for f in flags.values()):
            continue  # computed from constants alone: the same in every part
        rule = traits(op.op).batch
        if rule is None:
            return None
        site = BatchSite(shapes, flags, [tuple(graph.operands[i].desc.shape) for i in op.outputs], op.options,
                         batch, part)
        new = rule(site)
        if new is None:
            return None
        if new is not op.options:
            options[index] = dict(new)
        batched.update(op.outputs)
    if not all(i in batched for i in graph.outputs.values()):
        return None
    data = graph.to_json()
    for o in data["operands"]:
        if o["id"] in batched:
            o["shape"] = [part, *o["shape"][1:]]
    for index, new in options.items():
        data["operations"][index]["options"] = _jsonable(new)
    return SplitPlan(batch, parts, dumps(data))  # the tags keep non-finite and -0 options exact
