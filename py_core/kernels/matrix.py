"""gemm and matmul kernels (NumPy).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-matmul"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping

import numpy as np

from py_core.kernels import native
from py_core.kernels.common import wide_type
from py_core.kernels.traits import KernelTraits, Options, Packed, PackSite, Shape, batch_gemm, batch_matmul, with_batch

# Pyodide's NumPy has no BLAS: there np.einsum('ij,jk->ik') measured ~10x faster than np.matmul on large
# float32 products; on CPython NumPy's matmul calls BLAS and wins.  Swap here only.
_USE_EINSUM = sys.platform == "emscripten"
# SciPy's OpenBLAS sgemm, once the worker has loaded SciPy (use_blas): measured 1.5-2.5x einsum on the
# [M, K] x [K, N] shapes of MobileNetV2 in Pyodide (5.5-7 vs 2-4.7 GFLOP/s).  The C kernels come first when
# built: 13-30 GFLOP/s on the same shapes, 3-4x SciPy (docs/performance.md).
_SGEMM: Callable[..., np.ndarray] | None = None


def use_blas(sgemm: Callable[..., np.ndarray] | None) -> None:
    """Route float32 products through a BLAS sgemm (scipy.linalg.blas.sgemm), or back to NumPy with None."""
    global _SGEMM
    _SGEMM = sgemm


def blas_enabled() -> bool:
    """Whether products go through a BLAS sgemm."""
    return _SGEMM is not None


def matmul2d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The one 2-D product [M, K] x [K, N] every matrix and convolution kernel goes through."""
    if native.available() and a.dtype == np.float32 and b.dtype == np.float32 and a.size and b.size:
        # the C SIMD product (py_core.kernels.native) reads B by rows: a copy costs K*N, the product M*K*N
        rows = b if b.strides[1] == 4 else np.ascontiguousarray(b)
        if native.gemm_ok(a, rows):
            return native.sgemm(a, rows)
    if _SGEMM is not None and a.dtype == np.float32 and b.dtype == np.float32 and a.size and b.size:
        # C-order [M, K] is Fortran-order [K, M]: B^T A^T = (A B)^T, Fortran-ordered, is A B in C order
        return _SGEMM(1.0, b.T, a.T).T
    if _USE_EINSUM:
        return np.einsum("ij,jk->ik", a, b)
    return np.matmul(a, b)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """matmul: batched matrix product with broadcast batch dimensions.
    https://www.w3.org/TR/webnn/#api-mlgraphbuilder-matmul"""
    wide = wide_type(a.dtype)
    # float16 is multiplied and accumulated in float32, then rounded once
    x, y = a.astype(wide, copy=False), b.astype(wide, copy=False)
    if y.ndim == 2:
        # [..., M, K] x [K, N]: one 2-D product over all the rows of a
        out = matmul2d(x.reshape(-1, x.shape[-1]), y).reshape(*x.shape[:-1], y.shape[-1])
    else:
        out = _batched(x, y)
    return out.astype(a.dtype, copy=False)


# Batched products go through the C product one matrix at a time when each is big enough for the call (about
# 20 us of Python per matrix in Pyodide) to pay: Pyodide's np.matmul has no BLAS (attention's [2, 32, 64] x
# [2, 64, 32]: 268 us in np.matmul, 110 us as two C products, measured under load).
_BATCH_MIN_MACS = 4096


def _batched(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[..., M, K] x [..., K, N] with broadcast batch dimensions."""
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    if not (native.available() and x.dtype == np.float32 and y.dtype == np.float32 and m * k * n >= _BATCH_MIN_MACS):
        return np.matmul(x, y)
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    xs = np.broadcast_to(x, batch + (m, k)).reshape(-1, m, k)
    ys = np.broadcast_to(y, batch + (k, n)).reshape(-1, k, n)
    out = np.empty(batch + (m, n), np.float32)
    for o, xi, yi in zip(out.reshape(-1, m, n), xs, ys, strict=True):
        rows = yi if yi.strides[1] == 4 else np.ascontiguousarray(yi)
        if native.gemm_ok(xi, rows):
            native.sgemm(xi, rows, out=o)
        else:
            o[...] = matmul2d(xi, yi)
    return out


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, alpha: float = 1.0, beta: float = 1.0,
         aTranspose: bool = False, bTranspose: bool = False) -> np.ndarray:
    """gemm: alpha * A @ B + beta * C.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gemm"""
    wide = wide_type(a.dtype)
    # the spec casts alpha and beta to a's data type first (float16 may round or overflow to inf)
    with np.errstate(over="ignore"):
        al = np.asarray(alpha, dtype=a.dtype).astype(wide)
        be = np.asarray(beta, dtype=a.dtype).astype(wide)
    x = a.astype(wide, copy=False)
    y = b.astype(wide, copy=False)
    out = matmul2d(x.T if aTranspose else x, y.T if bTranspose else y)
    # alpha scales the [M, N] product rather than A: the same value up to float32 rounding, fewer multiplies
    out = out * al
    if c is not None:
        out = out + be * c.astype(wide, copy=False)
    return np.asarray(out).astype(a.dtype, copy=False)


KERNELS: dict[str, Callable[..., object]] = {
    "gemm": gemm,
    "matmul": matmul,
}


def _product_flops(shapes: Mapping[str, Shape], out: Shape, o: Options) -> float:
    a = shapes["a"]
    k = a[-2] if o.get("aTranspose") else a[-1]
    return 2.0 * math.prod(out) * k


def _pack_gemm(site: PackSite) -> Packed | None:
    """gemm with a constant B (and C, if any): PackedMatmul with B as [K, N] and beta * C precomputed."""
    from py_core.compiler.kernels import PackedMatmul  # the compiler's plumbing (it imports no family module)

    o, b = site.options, site.constants["b"]
    c = site.constants.get("c")
    if b is None or b.ndim != 2 or ("c" in site.constants and c is None):
        return None
    if o["bTranspose"]:
        b = b.T
    # the spec casts alpha and beta to the operand type first; float32 here
    scaled_c = None if c is None else np.float32(o["beta"]) * c.astype(np.float32)
    packed = PackedMatmul(b, product=matmul2d, a_transpose=o["aTranspose"], alpha=float(np.float32(o["alpha"])),
                          c=scaled_c, epilogue=site.epilogue, out_shape=site.out_shape)
    return Packed(packed, ("a",), "packed")


def _pack_matmul(site: PackSite) -> Packed | None:
    """matmul with a constant 2-D B: PackedMatmul."""
    from py_core.compiler.kernels import PackedMatmul  # the compiler's plumbing (it imports no family module)

    b = site.constants["b"]
    if b is None or b.ndim != 2:
        return None
    return Packed(PackedMatmul(b, product=matmul2d, epilogue=site.epilogue, out_shape=site.out_shape), ("a",),
                  "packed")


TRAITS: dict[str, KernelTraits] = {
    "gemm": KernelTraits(fresh=True, epilogue_host=True, pack=_pack_gemm, flops=_product_flops),
    "matmul": KernelTraits(fresh=True, epilogue_host=True, pack=_pack_matmul, flops=_product_flops),
}
# one graph over both cores (compiler/split.py)
TRAITS = with_batch(TRAITS, {"gemm": batch_gemm, "matmul": batch_matmul})
