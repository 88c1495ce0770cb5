"""Layout switching: a node whose operator runs natively in several input layouts (its `layouts` trait), read
through a transpose into its layout and read only through the inverse transpose (maybe after activations),
takes the other layout and reads and writes the transposes' far sides directly, so both transposing copies go.

    x (nhwc) -> transpose [0,3,1,2] -> conv2d(inputLayout nchw) -> relu -> transpose [0,2,3,1] -> y (nhwc)
    becomes x -> conv2d(inputLayout nhwc) -> relu -> y

which is the pattern converters emit around every convolution and pool of a channels-last model written for a
channels-first backend (and the reverse).  Unary element-wise nodes (an `in_place` trait: relu, clamp, ...)
between the node and its back transpose come along: they run the same in either layout.  The operator's options
other than its layout describe spatial axes only (padding, strides, window, output sizes), so they hold in either
layout; the result is the same tensor, so it equals the unoptimized graph's up to the kernels' own rounding
(tests/core/test_compiler_layout.py).  Transposes are recognised by their `permutation` trait.  Transposes that
become dead are dropped; one whose result something else reads stays.
"""

from __future__ import annotations

from dataclasses import replace

from py_core.compiler.ir import Node, Program
from py_core.compiler.simplify import drop_dead
from py_core.kernels import traits

# the permutation taking a tensor from one layout to another (output axis i is input axis perm[i])
_PERMUTATION: dict[tuple[str, str], tuple[int, ...]] = {
    ("nhwc", "nchw"): (0, 3, 1, 2),
    ("nchw", "nhwc"): (0, 2, 3, 1),
}


def _permutation(node: Node) -> tuple[int, ...] | None:
    perm = traits(node.op).permutation
    if perm is None or len(node.outputs) != 1 or not isinstance(node.operands.get("input"), int):
        return None
    return tuple(perm(node.options))


def _target(node: Node, producer: dict[int, Node]) -> tuple[str, Node] | None:
    """The layout `node` can take to read its transpose's input directly, and that transpose."""
    t = traits(node.op)
    current = node.options.get(t.layout_option)
    x = node.operands.get("input")
    if not t.layouts or current not in t.layouts or len(node.outputs) != 1 or not isinstance(x, int):
        return None
    before = producer.get(x)
    if before is None:
        return None
    perm = _permutation(before)
    for layout in t.layouts:
        if layout != current and perm == _PERMUTATION.get((layout, current)):
            return layout, before
    return None


def _elementwise(node: Node) -> bool:
    """A unary element-wise node (an `in_place` trait): it runs the same on either layout."""
    return traits(node.op).in_place is not None and len(node.outputs) == 1


def _path_back(node: Node, readers: dict[int, list[Node]], outputs: set[int],
               back: tuple[int, ...]) -> tuple[list[Node], list[Node]] | None:
    """The unary element-wise nodes after `node` (each the only reader of the one before) and the transposes
    that read the last of them, when those transposes, all with permutation `back`, are its only readers.  No
    value on the way may be a graph output (it would change layout), at most one of the transposes'."""
    between: list[Node] = []
    out = node.outputs[0]
    while out not in outputs:
        after = readers.get(out, [])
        if len(after) == 1 and _elementwise(after[0]) and after[0].operands.get("input") == out:
            between.append(after[0])
            out = after[0].outputs[0]
            continue
        ok = bool(after) and all(_permutation(r) == back for r in after)
        if ok and sum(r.outputs[0] in outputs for r in after) <= 1:
            return between, after
        return None
    return None


def switch_layouts(prog: Program) -> None:
    """Drop the transpose pairs around nodes that run natively in the layout on the pair's far side."""
    producer: dict[int, Node] = {o: n for n in prog.nodes for o in n.outputs}
    readers = prog.consumers()
    outputs = prog.output_ids()  # the same throughout: only non-output values are renamed below
    removed: set[int] = set()  # id() of the back transposes now computed by the switched node
    switched = 0
    for node in prog.nodes:
        if id(node) in removed:
            continue
        target = _target(node, producer)
        if target is None:
            continue
        layout, before = target
        option = traits(node.op).layout_option
        back = _PERMUTATION[(node.options[option], layout)]
        path = _path_back(node, readers, outputs, back)
        if path is None:
            continue
        between, after = path
        # the last node before the transposes computes what they did: the one graph output among them, else the
        # first; the values on the way change layout (their descriptors too)
        outs = [r.outputs[0] for r in after]
        keep = next((o for o in outs if o in outputs), outs[0])
        for r in after:
            removed.add(id(r))
            if r.outputs[0] != keep:
                prog.rename(r.outputs[0], keep)
        chain = [node, *between]
        for n in chain[:-1]:
            v = prog.operands[n.outputs[0]]
            prog.operands[v.id] = replace(v, desc=v.desc.with_shape([v.desc.shape[i] for i in back]))
        node.options = {**node.options, option: layout}
        node.operands["input"] = before.operands["input"]
        chain[-1].outputs = [keep]
        producer[keep] = chain[-1]
        switched += 1
    if not switched:
        return
    prog.nodes = [n for n in prog.nodes if id(n) not in removed]
    drop_dead(prog)  # transposes into the switched nodes that nothing else reads
    prog.note(f"layout: {switched} node(s) switched layout, the transposes around them dropped")
