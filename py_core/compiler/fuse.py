"""Fusion: element-wise work that follows a conv2d, gemm or matmul (a constant bias add, scale, or an
activation: relu, clamp, sigmoid, tanh, hardSwish, leakyRelu) runs in place on the product's output.

Only float32 chains fuse (float16 rounds after every operator, which a fused chain would skip), and only when
the intermediate value has a single reader and is not a graph output.  The fused node keeps the producer's
operator and records the absorbed operations as `_post` specs; the pack pass turns them into code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from py_core.compiler.ir import Node, Program

PRODUCERS = ("conv2d", "gemm", "matmul")
ACTIVATIONS = ("relu", "clamp", "sigmoid", "tanh", "hardSwish", "leakyRelu")
COMMUTATIVE = ("add", "mul")
BINARY = ("add", "sub", "mul", "div")


def _post_spec(prog: Program, node: Node, value: int) -> tuple[Any, ...] | None:
    """The post-op spec if `node` can run in place on `value` (its only varying input), else None."""
    if node.op in ACTIVATIONS:
        if node.operands.get("input") != value:
            return None
        o = node.options
        if node.op == "clamp":
            return ("clamp", float(o["minValue"]), float(o["maxValue"]))
        if node.op == "leakyRelu":
            return ("leakyRelu", float(o["alpha"]))
        return (node.op,)
    if node.op in BINARY:
        a, b = node.operands.get("a"), node.operands.get("b")
        if a == value and isinstance(b, int) and prog.is_constant(b):
            const = b
        elif b == value and node.op in COMMUTATIVE and isinstance(a, int) and prog.is_constant(a):
            const = a
        else:
            return None
        c = prog.constants[const]
        # in place only: the constant must broadcast to the value's shape without growing it
        if c.dtype != np.float32 or np.broadcast_shapes(c.shape, prog.shape(value)) != prog.shape(value):
            return None
        return (node.op, const)
    return None


def fuse_post_ops(prog: Program) -> None:
    """Absorb chains of in-place element-wise nodes into the conv2d/gemm/matmul that feeds them."""
    outputs = prog.output_ids()
    users = prog.consumers()
    absorbed: set[int] = set()  # id() of absorbed nodes
    fused = 0
    for node in prog.nodes:
        if node.op not in PRODUCERS or id(node) in absorbed or node.kernel is not None:
            continue
        out = node.outputs[0]
        if prog.dtype(out) != np.float32:
            continue
        posts: list[tuple[Any, ...]] = list(node.options.get("_post", []))
        while out not in outputs:
            readers = users.get(out, [])
            if len(readers) != 1:
                break
            nxt = readers[0]
            spec = _post_spec(prog, nxt, out)
            if spec is None or prog.shape(nxt.outputs[0]) != prog.shape(out):
                break
            posts.append(spec)
            absorbed.add(id(nxt))
            out = nxt.outputs[0]
        if out != node.outputs[0]:
            node.options = {**node.options, "_post": posts}
            node.outputs = [out]
            fused += 1
    if absorbed:
        prog.nodes = [n for n in prog.nodes if id(n) not in absorbed]
        prog.note(f"fuse: {len(absorbed)} element-wise node(s) fused into {fused} conv2d/gemm/matmul")
