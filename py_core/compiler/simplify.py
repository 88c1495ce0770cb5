"""No-op removal: identity, reshape to the same shape, identity transposes, same-type casts, full slices, zero
pads and same-shape expands read their input directly; reshape chains and transpose chains collapse to one.

A removed node's output is renamed to its input.  When that output is a graph output and its input is a graph
input or a constant, the node stays: a graph output is always a value the graph computed.
"""

from __future__ import annotations

from py_core.compiler.ir import Node, Program


def _is_noop(prog: Program, node: Node) -> int | None:
    """The operand id the node's single output equals, or None."""
    if len(node.outputs) != 1:
        return None
    x = node.operands.get("input")
    if not isinstance(x, int):
        return None
    out = node.outputs[0]
    same = prog.shape(x) == prog.shape(out) and prog.dtype(x) == prog.dtype(out)
    op, o = node.op, node.options
    if not same:
        return None
    if op in ("identity", "reshape", "cast", "expand"):
        return x
    if op == "transpose" and list(o["permutation"]) == list(range(len(o["permutation"]))):
        return x
    if op == "slice" and all(s == 1 for s in o["strides"]) and not any(o["starts"]):
        return x
    if op == "pad" and not any(o["beginningPadding"]) and not any(o["endingPadding"]):
        return x
    if op == "tile" and all(r == 1 for r in o["repetitions"]):
        return x
    return None


def remove_noops(prog: Program) -> None:
    """Drop no-op nodes and merge reshape->reshape and transpose->transpose chains."""
    outputs = prog.output_ids()
    removed = merged = 0
    kept: list[Node] = []
    producer: dict[int, Node] = {}
    users = prog.consumers()
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
        if node.op in ("reshape", "transpose") and isinstance(x, int) and x in producer:
            first = producer[x]
            if first.op == node.op == "reshape":
                node.operands["input"] = first.operands["input"]
                merged += 1
            elif first.op == node.op == "transpose":
                p1, p2 = first.options["permutation"], node.options["permutation"]
                node.options = {**node.options, "permutation": [p1[i] for i in p2]}
                node.operands["input"] = first.operands["input"]
                merged += 1
        kept.append(node)
        for o in node.outputs:
            producer[o] = node
    prog.nodes = kept
    _drop_dead(prog)
    if removed or merged:
        prog.note(f"simplify: {removed} no-op node(s) removed, {merged} reshape/transpose chain(s) merged")
    del users


def _drop_dead(prog: Program) -> None:
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
