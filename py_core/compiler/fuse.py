"""Fusion: element-wise work that follows a product (an operator with the `epilogue_host` trait: conv2d, gemm,
matmul) runs in place on the product's output: any operator with the `epilogue` trait, unary (activations)
or binary with a constant operand (bias add, scale).

Only float32 chains fuse (float16 rounds after every operator, which a fused chain would skip), and only when
the intermediate value has a single reader and is not a graph output.  The product node keeps its operator and
carries the absorbed operations in `Node.epilogue`; the pack pass binds them into its kernel.
"""

from __future__ import annotations

import numpy as np

from py_core.compiler.ir import Node, Program
from py_core.kernels import traits
from py_core.kernels.traits import Epilogue


def _epilogue(prog: Program, node: Node, value: int) -> Epilogue | None:
    """`node` as an epilogue step if it can run in place on `value` (its only varying input), else None."""
    t = traits(node.op)
    if not t.epilogue:
        return None
    if t.in_place is not None:
        return t.epilogue_of(node.op, node.options) if node.operands.get("input") == value else None
    a, b = node.operands.get("a"), node.operands.get("b")
    if a == value and isinstance(b, int) and prog.is_constant(b):
        const = b
    elif b == value and t.commutative and isinstance(a, int) and prog.is_constant(a):
        const = a
    else:
        return None
    c = prog.constants[const]
    # in place only: the constant must broadcast to the value's shape without growing it
    if c.dtype != np.float32 or np.broadcast_shapes(c.shape, prog.shape(value)) != prog.shape(value):
        return None
    return t.epilogue_of(node.op, node.options, c)


def fuse_epilogues(prog: Program) -> None:
    """Absorb chains of in-place element-wise nodes into the product that feeds them."""
    outputs = prog.output_ids()
    users = prog.consumers()
    absorbed: set[int] = set()  # id() of absorbed nodes
    fused = 0
    for node in prog.nodes:
        if not traits(node.op).epilogue_host or id(node) in absorbed or node.kernel is not None:
            continue
        out = node.outputs[0]
        if prog.dtype(out) != np.float32:
            continue
        steps = list(node.epilogue)
        while out not in outputs:
            readers = users.get(out, [])
            if len(readers) != 1:
                break
            nxt = readers[0]
            step = _epilogue(prog, nxt, out)
            if step is None or prog.shape(nxt.outputs[0]) != prog.shape(out):
                break
            steps.append(step)
            absorbed.add(id(nxt))
            out = nxt.outputs[0]
        if out != node.outputs[0]:
            node.epilogue = steps
            node.outputs = [out]
            fused += 1
    if absorbed:
        prog.nodes = [n for n in prog.nodes if id(n) not in absorbed]
        prog.note(f"fuse: {len(absorbed)} element-wise node(s) fused into {fused} product(s)")
