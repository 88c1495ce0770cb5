"""Work estimates used to choose kernels and backends at build time, from each operator's `flops` trait."""

from __future__ import annotations

from py_core.graph import Graph
from py_core.kernels import traits
from py_core.kernels.traits import Shape

# SciPy + OpenBLAS cost about 19 MB and 1-2 s to load in the worker; sgemm saves about 0.15 ms per MFLOP
# against einsum (6.5 vs 3.5 GFLOP/s), so a graph with this much product work per run pays it back within
# a few dozen runs.
BLAS_MIN_FLOPS = 50e6
FLOAT_TYPES = frozenset({"float32", "float16"})


def product_flops(graph: Graph) -> float:
    """Floating-point operations per run spent in operators with a `flops` trait (the matrix products: conv2d,
    convTranspose2d, gemm, matmul)."""
    total = 0.0
    for op in graph.operations:
        flops = traits(op.op).flops
        if flops is None:
            continue
        out = graph.operands[op.outputs[0]].desc
        if out.data_type.value not in FLOAT_TYPES:
            continue
        shapes: dict[str, Shape] = {name: tuple(graph.operands[ref].desc.shape)
                                    for name, ref in op.operands.items() if isinstance(ref, int)}
        total += flops(shapes, tuple(out.shape), op.options)
    return total
