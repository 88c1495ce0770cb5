"""Work estimates used to choose kernels and backends at build time (no NumPy import)."""

from __future__ import annotations

import math

from py_core.graph import Graph

# SciPy + OpenBLAS cost about 19 MB and 1-2 s to load in the worker; sgemm saves about 0.15 ms per MFLOP
# against einsum (6.5 vs 3.5 GFLOP/s), so a graph with this much product work per run pays it back within
# a few dozen runs.
BLAS_MIN_FLOPS = 50e6


def product_flops(graph: Graph) -> float:
    """Floating-point operations per run spent in matrix products (conv2d, convTranspose2d, gemm, matmul)."""
    total = 0.0
    for op in graph.operations:
        if op.op not in ("conv2d", "convTranspose2d", "gemm", "matmul"):
            continue
        out = graph.operands[op.outputs[0]].desc
        if out.data_type.value not in ("float32", "float16"):
            continue
        if op.op in ("conv2d", "convTranspose2d"):
            f = graph.operands[op.operands["filter"]].desc.shape  # type: ignore[index]
            # every output element takes KH*KW*C/groups products (every input element, for the transpose):
            # the filter's element count over the output (input) channels
            per = math.prod(f)
            if op.op == "conv2d":
                out_c = out.shape[1] if op.options["inputLayout"] == "nchw" else out.shape[3]
                total += 2.0 * math.prod(out.shape) * per / out_c
            else:
                x = graph.operands[op.operands["input"]].desc.shape  # type: ignore[index]
                in_c = x[1] if op.options["inputLayout"] == "nchw" else x[3]
                total += 2.0 * math.prod(x) * per / in_c
        else:
            a = graph.operands[op.operands["a"]].desc.shape  # type: ignore[index]
            k = a[-2] if op.options.get("aTranspose") else a[-1]
            total += 2.0 * math.prod(out.shape) * k
    return total
