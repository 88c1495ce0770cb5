"""Constant folding: a node whose inputs are all constants runs once at build time and becomes a constant.

Typical wins: float16 weights cast to float32 (TFLite DEQUANTIZE), transposed or reshaped filters, scale and
bias arithmetic on weights.  The reference kernel computes the folded value, so folding never changes a
result.
"""

from __future__ import annotations

import numpy as np

from py_core.compiler.ir import Program
from py_core.kernels import KERNELS

# Folding must not blow constants up (an expand of a scalar to a huge tensor is cheaper to compute per run).
MAX_GROWTH_BYTES = 1 << 20


def fold_constants(prog: Program) -> None:
    """Evaluate every node whose operands are all constants (in order, so chains fold completely)."""
    kept = []
    folded = 0
    readers = prog.readers()
    for node in prog.nodes:
        ids = node.input_ids()
        if not ids or not all(prog.is_constant(i) for i in ids) or node.kernel is not None:
            kept.append(node)
            continue
        in_bytes = sum(prog.constants[i].nbytes for i in set(ids))
        out_bytes = sum(prog.operands[o].desc.byte_length for o in node.outputs)
        if out_bytes > in_bytes + MAX_GROWTH_BYTES:
            kept.append(node)
            continue
        args = dict(node.options)
        for name, ref in node.operands.items():
            if isinstance(ref, list):
                args[name] = [prog.constants[i] for i in ref]
            else:
                args[name] = None if ref is None else prog.constants[ref]
        try:
            with np.errstate(all="ignore"):
                result = KERNELS[node.op](**args)
        except Exception:  # leave it to run time, where the executor reports the error with the op name
            kept.append(node)
            continue
        outs = result if isinstance(result, (list, tuple)) else [result]
        for oid, arr in zip(node.outputs, outs, strict=True):
            # a view of another constant is fine (constants are never written); keep rank 0 as rank 0
            arr = np.asarray(arr)
            prog.constants[oid] = arr if arr.flags.c_contiguous else arr.copy()
        prog.release(readers, ids)
        folded += 1
    prog.nodes = kept
    if folded:
        prog.note(f"fold: {folded} node(s) computed at build time")
