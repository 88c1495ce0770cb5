"""Pre-packing: a float32 node whose operator has a `pack` trait (conv2d, gemm, matmul) and constant weights gets
the kernel that trait builds, holding the weights in the layout it reads (conv filters as the GEMM matrix of
their layout or as depthwise taps; gemm/matmul right-hand sides as a contiguous [K, N]), with the node's
epilogue bound into it.  The original weight constants are dropped when nothing else reads them, so weights are
held once.  `bind_epilogues` then wraps the reference kernel of any node whose epilogue no packed kernel took.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from py_core.compiler.ir import Node, Program
from py_core.compiler.kernels import with_epilogue
from py_core.kernels import KERNELS, traits
from py_core.kernels.traits import PackSite, Shape


def _site(prog: Program, node: Node) -> PackSite:
    constants: dict[str, np.ndarray | None] = {}
    shapes: dict[str, Shape] = {}
    for name, ref in node.operands.items():
        if isinstance(ref, int):
            constants[name] = prog.constants.get(ref)
            shapes[name] = prog.shape(ref)
    return PackSite(constants, shapes, prog.shape(node.outputs[0]), node.options, tuple(node.epilogue))


def pack_weights(prog: Program) -> None:
    """Bind packed kernels to float32 nodes whose operator can pack its constant weights."""
    packed = 0
    readers = prog.readers()
    for node in prog.nodes:
        pack = traits(node.op).pack
        if pack is None or node.kernel is not None or prog.dtype(node.outputs[0]) != np.float32:
            continue
        bound = pack(_site(prog, node))
        if bound is None:
            continue
        node.kernel, node.variant, node.options = bound.kernel, bound.variant, {}
        lost = node.input_ids()
        node.operands = {name: node.operands[name] for name in bound.operands}
        for i in node.input_ids():
            lost.remove(i)
        prog.release(readers, lost)  # the weights the packed kernel holds in its own layout
        node.epilogue = []  # inside the packed kernel now
        node.fresh = True
        packed += 1
    # weights live inside the packed kernels: drop constants no node reads
    read = {i for n in prog.nodes for i in n.input_ids()} | set(prog.outputs.values())
    prog.constants = {i: c for i, c in prog.constants.items() if i in read}
    if packed:
        prog.note(f"pack: {packed} node(s) with pre-packed weights")


def bind_epilogues(prog: Program) -> None:
    """A node still carrying an epilogue (no packed kernel took it) runs its reference kernel, then the epilogue
    in place on the result (the reference kernels of epilogue hosts return new arrays)."""
    wrapped = 0
    for node in prog.nodes:
        if not node.epilogue:
            continue
        ref = KERNELS[node.op] if node.kernel is None else node.kernel
        options = dict(node.options)

        def call(_ref: Any = ref, _options: dict[str, Any] = options, **operands: Any) -> Any:
            return _ref(**operands, **_options)

        if node.kernel is None:
            node.unbound = (options, list(node.epilogue))
        node.kernel, node.options = with_epilogue(call, node.epilogue), {}
        node.variant = f"{node.variant}+fused" if node.variant else "fused"
        node.epilogue = []
        node.fresh = True
        wrapped += 1
    if wrapped:
        prog.note(f"fuse: {wrapped} fused node(s) on a reference kernel")
