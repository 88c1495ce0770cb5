"""Pre-packing: conv2d, gemm and matmul with constant weights get a kernel holding the weights in the layout
it reads (conv filters as the GEMM matrix of their layout or as depthwise taps; gemm/matmul right-hand sides
as a contiguous [K, N]); fused post-ops from the fusion pass are bound into it.  The original weight
constants are dropped when nothing else reads them, so weights are held once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from py_core.compiler.ir import Node, Program
from py_core.compiler.kernels import PackedConv2d, PackedMatmul, make_post_op, with_post_ops
from py_core.kernels import KERNELS
from py_core.kernels.convolution import _CONV2D_TO_HWIO


def _const(prog: Program, ref: Any) -> np.ndarray | None:
    return prog.constants.get(ref) if isinstance(ref, int) else None


def _pack_conv2d(prog: Program, node: Node, posts: list[Any], specs: list[Any]) -> bool:
    o = node.options
    w = _const(prog, node.operands["filter"])
    bias_ref = node.operands.get("bias")
    bias = _const(prog, bias_ref)
    if w is None or (bias_ref is not None and bias is None):
        return False
    hwio = w.transpose(_CONV2D_TO_HWIO[o["filterLayout"]])
    kh, kw, cg, out_c = hwio.shape
    groups = o["groups"]
    if groups != 1 and not (cg == 1 and out_c == groups):  # grouped but not depthwise: reference kernel
        return False
    packed = PackedConv2d(hwio, bias, padding=o["padding"], strides=o["strides"], dilations=o["dilations"],
                          groups=groups, layout=o["inputLayout"], in_shape=prog.shape(node.operands["input"]),
                          out_shape=prog.shape(node.outputs[0]),
                          posts=posts, post_specs=specs)
    node.kernel, node.operands, node.options = packed, {"input": node.operands["input"]}, {}
    node.op = f"conv2d[{packed.mode}]"
    return True


def _pack_matmul(prog: Program, node: Node, posts: list[Any], specs: list[Any]) -> bool:
    b = _const(prog, node.operands["b"])
    if b is None or b.ndim != 2:
        return False
    o = node.options
    if node.op == "gemm":
        c_ref = node.operands.get("c")
        c = _const(prog, c_ref)
        if c_ref is not None and c is None:
            return False
        if o["bTranspose"]:
            b = b.T
        # the spec casts alpha and beta to the operand type first; float32 here
        beta = np.float32(o["beta"])
        scaled_c = None if c is None else beta * c.astype(np.float32)
        packed = PackedMatmul(b, a_transpose=o["aTranspose"], alpha=float(np.float32(o["alpha"])), c=scaled_c,
                              posts=posts, out_shape=prog.shape(node.outputs[0]), post_specs=specs)
    else:
        packed = PackedMatmul(b, posts=posts, out_shape=prog.shape(node.outputs[0]), post_specs=specs)
    node.kernel, node.operands, node.options = packed, {"a": node.operands["a"]}, {}
    node.op = f"{node.op}[packed]"
    return True


def pack_weights(prog: Program) -> None:
    """Bind packed kernels to float32 conv2d/gemm/matmul nodes; wrap other fused nodes' reference kernels."""
    packed = wrapped = 0
    for node in prog.nodes:
        if node.kernel is not None or node.op not in ("conv2d", "gemm", "matmul"):
            continue
        if prog.dtype(node.outputs[0]) != np.float32:
            continue
        specs = node.options.get("_post", [])
        posts = [make_post_op(s, prog.constants) for s in specs]
        pack = _pack_conv2d if node.op == "conv2d" else _pack_matmul
        ok = pack(prog, node, posts, specs)
        if ok:
            packed += 1
        elif specs:
            ref = KERNELS[node.op]
            options = {k: v for k, v in node.options.items() if k != "_post"}

            def call(_ref: Any = ref, _options: dict[str, Any] = options, **operands: Any) -> Any:
                return _ref(**operands, **_options)

            node.kernel, node.options = with_post_ops(call, posts), {}
            node.op = f"{node.op}[fused]"
            wrapped += 1
        else:
            continue
        node.fresh = True
    # weights now live inside the kernels: drop constants no node reads any more
    read = {i for n in prog.nodes for i in n.input_ids()} | set(prog.outputs.values())
    prog.constants = {i: c for i, c in prog.constants.items() if i in read}
    if packed or wrapped:
        prog.note(f"pack: {packed} node(s) with pre-packed weights, {wrapped} fused on a reference kernel")
