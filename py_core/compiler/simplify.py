"""No-op removal: a node whose operator's `noop` trait holds (identity, reshape to the same shape, identity
transposes, same-type casts, full slices, zero pads, same-shape expands and tiles) reads its input directly;
chains of an operator with a `merge` trait (reshape, transpose) collapse to one node.

A removed node's output is renamed to its input.  When that output is a graph output and its input is a graph
input or a constant, the node stays: a graph output is always a value the graph computed.
"""

from __future__ import annotations

from py_core.compiler.ir import Node, Program
from py_core.kernels import traits


def _is_noop(prog: Program, node: Node) -> int | None:
    """The operand id the node's single output equals, or None."""
    noop = traits(node.op).noop
    if noop is None or len(node.outputs) != 1:
        return None
    x = node.operands.get("input")
    if not isinstance(x, int):
        return None
    out = node.outputs[0]
    same = prog.shape(x) == prog.shape(out) and prog.dtype(x) == prog.dtype(out)
    return x if same and noop(node.options) else None


def remove_noops(prog: Program) -> None:
    """Drop no-op nodes and merge chains (reshape->reshape, transpose->transpose)."""
    outputs = prog.output_ids()
    removed = merged = 0
    kept: list[Node] = []
    producer: dict[int, Node] = {}
    for node in prog.nodes:
        src = _is_noop(prog, node)
        out = node.outputs[0] if node.outputs else None
        if src is not None and out is not None:
            pinned = out in outputs and (src in prog.constants or src in prog.inputs.values())
            if not pinned:
                prog.rename(out, src)
                removed += 1
                continue
        # x -> reshape -> reshape: the second reads x (the first may then become dead)
        x = node.operands.get("input")
        merge = traits(node.op).merge
        if merge is not None and isinstance(x, int) and x in producer and producer[x].op == node.op:
            first = producer[x]
            options = merge(first.options, node.options)
            if options is not None:
                node.options = dict(options)
                node.operands["input"] = first.operands["input"]
                merged += 1
        kept.append(node)
        for o in node.outputs:
            producer[o] = node
    prog.nodes = kept
    drop_dead(prog)
    if removed or merged:
        prog.note(f"simplify: {removed} no-op node(s) removed, {merged} chain(s) merged")


def drop_dead(prog: Program) -> None:
    """Remove nodes none of whose outputs is read by a later node or the graph."""
    live = set(prog.outputs.values())
    kept: list[Node] = []
    for node in reversed(prog.nodes):
        if any(o in live for o in node.outputs):
            kept.append(node)
            live.update(node.input_ids())
    kept.reverse()
    prog.nodes = kept
    prog.constants = {i: c for i, c in prog.constants.items() if i in live}
