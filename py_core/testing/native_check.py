"""Oracle checks of the C kernels (py_core.kernels.native) against float64 NumPy formulas.

Shared by tests/core/test_native_kernels.py (the host build, under pytest) and tests/pyodide (the wasm build,
run inside Pyodide by `run_wpt.mjs --native`, where pytest is not available): `check_all()` runs every case
and returns its error next to its tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from py_core.kernels import native
from py_core.testing import reference

GEMM_SHAPES = [(1, 1, 1), (4, 8, 3), (5, 9, 17), (7, 3, 2), (64, 64, 64), (65, 130, 33), (3, 1000, 1280),
               (200, 12, 5),
               # the packed product: several K blocks (KC 256) and N blocks (NC 256), a partial last panel,
               # an odd row left after the 2-row tiles, exactly one panel
               (33, 300, 600), (2, 16, 1), (3, 17, 257), (131, 49, 160), (1, 40, 7), (6, 40, 20), (4, 44, 9),
               # a last panel of 1 or 2 columns with rows in the lanes (32 at a time), over two K blocks
               (70, 274, 300)]
GEMM_LAYOUTS = ["plain", "a_transposed", "b_strided"]
EPILOGUES = [(native.ACT_NONE, 0.0, 0.0), (native.ACT_CLAMP, 0.0, 6.0), (native.ACT_CLAMP, -0.5, float("inf")),
             (native.ACT_HARD_SWISH, 0.0, 0.0)]
CONV_CASES = [  # (n, c, h, w, kh, kw, strides, dilations, padding top/bottom/left/right)
    (1, 8, 9, 11, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (2, 5, 10, 7, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
    (1, 16, 14, 14, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2)),
    (1, 12, 13, 13, 3, 3, (1, 2), (2, 1), (2, 0, 1, 3)),
    (1, 3, 6, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
    (1, 20, 17, 19, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),
    # the 3x3 depthwise fast path (rows whose taps are all inside, eight columns per step, an overlapping last
    # vector): wide rows, strides 1 and 2 in either direction, padding on one side only
    (1, 4, 30, 37, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (1, 3, 31, 40, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
    (1, 2, 12, 21, 3, 3, (2, 1), (1, 1), (1, 1, 0, 2)),
    (1, 2, 9, 26, 3, 3, (1, 2), (1, 1), (0, 0, 3, 0)),
    # two output rows per step and an odd one left (stride 1), rows of at least 8 columns
    (1, 3, 11, 19, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    # stride 1 with one row and column of padding all round, read in place: the narrowest rows, two rows
    (1, 3, 2, 5, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (1, 4, 7, 7, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    # stride 2 with one row and column of padding before, even sizes halved, read in place: 4-7 and 8+ columns
    (1, 3, 6, 12, 3, 3, (2, 2), (1, 1), (1, 0, 1, 0)),
    (1, 2, 10, 34, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),
    (1, 2, 5, 13, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
]


def tolerance(k: int) -> float:
    """Relative and absolute bound for float32 sums of k products taken in k order."""
    return 4 * k * float(np.finfo(np.float32).eps)


def error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest |got - want| / (1 + |want|): one number to compare with `tolerance`."""
    return float(np.max(np.abs(got.astype(np.float64) - want) / (1 + np.abs(want)))) if want.size else 0.0


def act_ref(y: np.ndarray, act: int, lo: float, hi: float) -> np.ndarray:
    """The post-op of a C kernel's store, in float64."""
    if act == native.ACT_CLAMP:
        return np.clip(y, lo, hi)
    if act == native.ACT_HARD_SWISH:
        return y * np.clip(y + 3, 0, 6) / 6
    return y


def conv_ref(x: np.ndarray, w_oihw: np.ndarray, strides: tuple[int, int], dil: tuple[int, int],
             pad: tuple[int, int, int, int], groups: int) -> np.ndarray:
    """NCHW conv2d in float64 by its definition: a sum over taps of shifted input slices."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w_oihw.shape
    t, b, l, r = pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (l, r)))
    oh = (h + t + b - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + l + r - dil[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dil[0], i * dil[0] + (oh - 1) * strides[0] + 1, strides[0])
                cols = slice(j * dil[1], j * dil[1] + (ow - 1) * strides[1] + 1, strides[1])
                patch = xp[:, g * cg:(g + 1) * cg, rows, cols]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                       w_oihw[g * og:(g + 1) * og, :, i, j].astype(np.float64))
    return y


def gemm_case(rng: np.random.Generator, shape: tuple[int, int, int], layout: str) -> tuple[float, float]:
    """(error, tolerance) of one plain product; A column-major or B with padded rows by layout."""
    m, n, k = shape
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    if layout == "a_transposed":
        a = np.asfortranarray(a)  # row stride 1, column stride m
    elif layout == "b_strided":
        b = np.pad(b, ((0, 0), (0, 5)))[:, :n]  # rows of B further apart than n
    return error(native.sgemm(a, b), a.astype(np.float64) @ b.astype(np.float64)), tolerance(k)


def epilogue_case(rng: np.random.Generator, bias_mode: int, act: int, lo: float, hi: float,
                  shape: tuple[int, int, int] = (13, 21, 9), prepacked: bool = False) -> tuple[float, float]:
    """(error, tolerance) of a product with a bias per row or column, or none, and a fused activation; with
    prepacked, B packed once (native.PackedB, the constant-weight path) and A read transposed."""
    m, n, k = shape
    a = (rng.standard_normal((m, k)) * 2).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 2).astype(np.float32)
    size = 0 if bias_mode == native.BIAS_NONE else m if bias_mode == native.BIAS_PER_ROW else n
    bias = rng.standard_normal(size).astype(np.float32) if size else None
    if prepacked:
        a = np.asfortranarray(a)
        got = native.sgemm_packed(a, native.PackedB(b), bias=bias, bias_mode=bias_mode, act=act, lo=lo, hi=hi)
    else:
        got = native.sgemm(a, b, bias=bias, bias_mode=bias_mode, act=act, lo=lo, hi=hi)
    y = a.astype(np.float64) @ b.astype(np.float64)
    if bias is not None:
        y += bias[:, None] if bias_mode == native.BIAS_PER_ROW else bias[None, :]
    return error(got, act_ref(y, act, lo, hi)), tolerance(k)


def depthwise_case(rng: np.random.Generator, case: tuple[Any, ...], layout: str) -> tuple[float, float]:
    """(error, tolerance) of a depthwise conv2d with bias and relu6, in either layout."""
    n, c, h, w, kh, kw, strides, dil, pad = case
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    filt = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    want = act_ref(conv_ref(x, filt, strides, dil, pad, c) + bias[None, :, None, None], native.ACT_CLAMP, 0, 6)
    if layout == "nhwc":
        xin = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        taps = np.ascontiguousarray(filt[:, 0].transpose(1, 2, 0))
        out_shape: tuple[int, ...] = (n, want.shape[2], want.shape[3], c)
    else:
        xin, taps, out_shape = x, np.ascontiguousarray(filt[:, 0]), want.shape
    # the padded-plane buffer starts as NaN: the kernel must write every zero it reads (it zeroes once per call)
    size = native.depthwise_work_size(kh, kw, strides, dil, *out_shape[2:]) if layout == "nchw" else 0
    got = native.depthwise(xin, taps, layout, strides, dil, (pad[0], pad[2]), out_shape, bias,
                           native.ACT_CLAMP, 0.0, 6.0, work=np.full(size, np.nan, np.float32) if size else None)
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    return error(got, want), tolerance(kh * kw)


def im2col_case(rng: np.random.Generator, case: tuple[Any, ...], layout: str) -> tuple[float, float]:
    """(error, tolerance) of a groups-1 conv2d as im2col followed by the product, in either layout."""
    n, c, h, w, kh, kw, strides, dil, pad = case
    o = 6
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    filt = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    want = conv_ref(x, filt, strides, dil, pad, 1)
    oh, ow = want.shape[2:]
    if layout == "nhwc":
        cols = native.im2col_nhwc(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), kh, kw, strides, dil,
                                  (pad[0], pad[2]), oh, ow)
        wmat = np.ascontiguousarray(filt.transpose(2, 3, 1, 0).reshape(kh * kw * c, o))
        got = native.sgemm(cols, wmat).reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
    else:
        got = np.empty(want.shape, np.float32)
        colbuf = np.empty((c * kh * kw, oh * ow), np.float32)
        wmat = np.ascontiguousarray(filt.reshape(o, c * kh * kw))
        for b in range(n):
            native.im2col_nchw(x[b], kh, kw, strides, dil, (pad[0], pad[2]), oh, ow, colbuf)
            got[b] = native.sgemm(wmat, colbuf).reshape(o, oh, ow)
    return error(got, want), tolerance(c * kh * kw)


def conv_gather_case(rng: np.random.Generator, case: tuple[Any, ...], o: int = 6,
                     reference_kernel: bool = False) -> tuple[float, float]:
    """(error, tolerance) of an NCHW groups-1 conv2d whose column matrix is gathered into the product's panels
    (native.conv_nchw), with a bias and relu6; reference_kernel: against py_core.testing.reference (bounded by
    the output, for edge geometry) instead of the padded float64 definition."""
    n, c, h, w, kh, kw, strides, dil, pad = case
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    filt = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    if reference_kernel:
        oh, ow = conv_out(case)
        want = reference.conv2d(x, filt, None, pad, strides, dil, 1, (oh, ow)).astype(np.float64)
    else:
        want = conv_ref(x, filt, strides, dil, pad, 1)
        oh, ow = want.shape[2:]
    want = act_ref(want + bias[None, :, None, None], native.ACT_CLAMP, 0.0, 6.0)
    got = np.empty(want.shape, np.float32)
    wmat = np.ascontiguousarray(filt.reshape(o, c * kh * kw))
    for b in range(n):
        native.conv_nchw(x[b], wmat, kh, kw, strides, dil, (pad[0], pad[2]), oh, ow, got[b].reshape(o, oh * ow),
                         bias, native.ACT_CLAMP, 0.0, 6.0)
    return error(got, want), tolerance(c * kh * kw)


# Geometry at the edges of unsigned long (a ctypes.c_int would wrap these and the kernels would read outside
# their buffers): (n, c, h, w, kh, kw, strides, dilations, padding top/bottom/left/right), outputs small.
EDGE = 2**31 - 1
EDGE_CASES = [
    (1, 2, 1, 33, 1, 2, (1, 2), (1, EDGE), (0, 0, EDGE, 1)),  # a dilated conv2d: tap 1 reads column 2 * ow
    (1, 3, 2, 5, 2, 2, (1, 1), (2**31, 2**31), (EDGE, 1, 2**31, 0)),  # 2^31 is INT_MIN as an int32
    (1, 4, 3, 3, 1, 1, (2**32 - 1, 2**32 - 1), (1, 1), (0, 2**32 - 1, 0, 2**32 - 1)),  # output 1 in padding
    (1, 9, 4, 4, 3, 3, (1, 1), (2**32 - 1, 2**32 - 1), (2**32 - 1,) * 4),  # middle tap reads, outer two pad
    (2, 8, 2, 3, 2, 3, (2, 2**31), (2**31 + 5, 2**16), (2**31 + 4, 1, 2**17, 2**31)),
]


def conv_out(case: tuple[Any, ...]) -> tuple[int, int]:
    """The conv2d output size (floor) of a case, exact in Python integers."""
    _, _, h, w, kh, kw, (sh, sw), (dh, dw), (t, b, l, r) = case
    return (h + t + b - (kh - 1) * dh - 1) // sh + 1, (w + l + r - (kw - 1) * dw - 1) // sw + 1


def edge_case(rng: np.random.Generator, case: tuple[Any, ...], layout: str, kind: str) -> tuple[float, float]:
    """(error, tolerance) of a depthwise or im2col conv2d with edge geometry against the float64 definition
    (py_core.testing.reference, bounded by the output: it never pads)."""
    n, c, h, w, kh, kw, strides, dil, pad = case
    oh, ow = conv_out(case)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    groups, o = (c, c) if kind == "depthwise" else (1, 5)
    filt = rng.standard_normal((o, c // groups, kh, kw)).astype(np.float32)
    want = reference.conv2d(x, filt, None, pad, strides, dil, groups, (oh, ow))
    nhwc = layout == "nhwc"
    xin = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if nhwc else x
    if kind == "depthwise":
        taps = np.ascontiguousarray(filt[:, 0].transpose(1, 2, 0) if nhwc else filt[:, 0])
        out_shape = (n, oh, ow, c) if nhwc else (n, c, oh, ow)
        got = native.depthwise(xin, taps, layout, strides, dil, (pad[0], pad[2]), out_shape, None,
                               native.ACT_NONE, 0.0, 0.0)
    elif nhwc:
        cols = native.im2col_nhwc(xin, kh, kw, strides, dil, (pad[0], pad[2]), oh, ow)
        wmat = np.ascontiguousarray(filt.transpose(2, 3, 1, 0).reshape(kh * kw * c, o))
        got = native.sgemm(cols, wmat).reshape(n, oh, ow, o)
    else:
        got = np.empty((n, o, oh, ow), np.float32)
        colbuf = np.empty((c * kh * kw, oh * ow), np.float32)
        wmat = np.ascontiguousarray(filt.reshape(o, c * kh * kw))
        for b in range(n):
            native.im2col_nchw(x[b], kh, kw, strides, dil, (pad[0], pad[2]), oh, ow, colbuf)
            got[b] = native.sgemm(wmat, colbuf).reshape(o, oh, ow)
    if nhwc:
        got = got.transpose(0, 3, 1, 2)
    return error(got, want), tolerance(c * kh * kw)


def edge_graph_case(rng: np.random.Generator, case: tuple[Any, ...], layout: str, kind: str,
                    numpy_path: bool = False) -> tuple[float, float]:
    """(error, tolerance) of the same conv2d built through GraphBuilder and compiled as build() does (the
    kernel choice and its range check included), constant filter, bias and relu6, against the definition.
    numpy_path: with the C kernels switched off (the NumPy kernels; they materialise the padding today)."""
    from py_core.builder import GraphBuilder
    from py_core.runtime.executor import prepare

    n, c, h, w, kh, kw, strides, dil, pad = case
    groups, o = (c, c) if kind == "depthwise" else (1, 5)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    filt = rng.standard_normal((o, c // groups, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    nhwc = layout == "nhwc"
    b = GraphBuilder()
    xin = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if nhwc else x
    y = b.call("conv2d", {"input": b.input("x", ("float32", list(xin.shape))),
                          "filter": b.constant(("float32", list(filt.shape)), filt),
                          "bias": b.constant(("float32", [o]), bias), "padding": list(pad), "strides": list(strides),
                          "dilations": list(dil), "groups": groups, "inputLayout": layout})
    exe = prepare(b.build({"y": b.call("clamp", {"input": y, "minValue": 0.0, "maxValue": 6.0})}))
    on = native.available()
    if numpy_path:
        native.use_native(False)
    try:
        got = exe.run({"x": xin})["y"]
    finally:
        if numpy_path and on:
            native.use_native(True)
    if nhwc:
        got = got.transpose(0, 3, 1, 2)
    want = act_ref(reference.conv2d(x, filt, bias, pad, strides, dil, groups, conv_out(case)), native.ACT_CLAMP, 0, 6)
    return error(got, want), tolerance(c // groups * kh * kw + 1)


RESAMPLE_CASES = [  # (shape, axis, output sizes)
    ((1, 5, 7, 16), 1, (10, 14)), ((2, 3, 4, 6), 2, (9, 2)), ((1, 8, 8, 3), 1, (16, 5)), ((3, 6, 1, 1), 0, (7, 11)),
]


def resample_case(rng: np.random.Generator, shape: tuple[int, ...], axis: int,
                  sizes: tuple[int, int]) -> tuple[float, float]:
    """(error, tolerance) of bilinear resampling against the half-pixel formula in float64."""
    from py_core.kernels.pooling import linear_tables

    x = rng.standard_normal(shape).astype(np.float32)
    tables = [linear_tables(i, o) for i, o in zip(shape[axis:axis + 2], sizes, strict=True)]
    got = native.resample_linear(x, axis, tables[0], tables[1])
    want = x.astype(np.float64)
    for ax, (lo, hi, _, tw) in zip((axis, axis + 1), tables, strict=True):
        shp = [1] * x.ndim
        shp[ax] = len(lo)
        t64 = tw.astype(np.float64).reshape(shp)
        want = want.take(lo, axis=ax) * (1 - t64) + want.take(hi, axis=ax) * t64
    return error(got, want), tolerance(4)


def sigmoid_case(rng: np.random.Generator, size: int, scale: float) -> tuple[float, float]:
    """(error in ulp, tolerance) of the in-place sigmoid against float64 (WPT allows 34 ulp), subnormal
    results (inputs below -87) and the overflow edges included."""
    x = (rng.standard_normal(size) * scale).astype(np.float32)
    edges = [0.0, 87.0, -87.0, -87.5, -95.0, -103.5, -110.0, 89.0, 200.0]
    x[:len(edges)] = edges[:size]
    y = x.copy()
    native.sigmoid_inplace(y)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    return float(np.max(np.abs(y - want) / ulp)), 4.0


def activation_case(rng: np.random.Generator, act: int, lo: float, hi: float) -> tuple[float, float]:
    """(error, tolerance) of the standalone element-wise activation, odd lengths and edge values included."""
    x = (rng.standard_normal(1003) * 8).astype(np.float32)
    x[:6] = [np.inf, -np.inf, -0.0, lo, hi, np.nan]  # NaN passes through clamp (pmax/pmin in wasm)
    with np.errstate(invalid="ignore"):
        got = native.activation(x, act, lo, hi)
        want = act_ref(x.astype(np.float64), act, lo, hi)
    finite = np.isfinite(want)
    # infinities and NaN must come out exactly (NaN where the formula gives NaN); finite values within tolerance
    same = np.array_equal(got[~finite], want[~finite].astype(np.float32), equal_nan=True)
    return (error(got[finite], want[finite]) if same else float("inf")), tolerance(2)


def erf_case(rng: np.random.Generator, size: int, scale: float) -> tuple[float, float]:
    """(absolute error, tolerance) of erf against math.erf in float64 (WPT allows 1/1024 absolute; the kernel
    promises 2e-7 plus float32 rounding), the branch edge at |x| = 0.5, zeros, infinities and NaN included."""
    x = (rng.standard_normal(size) * scale).astype(np.float32)
    edges = [0.0, -0.0, 0.5, -0.5, np.nextafter(np.float32(0.5), np.float32(0)), 1e-30, -3.0, 4.5, 10.0,
             np.inf, -np.inf, np.nan]
    x[:min(size, len(edges))] = edges[:size]
    got = native.erf(x)
    want = np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.astype(np.float64)])
    nan = np.isnan(want)
    if not np.array_equal(np.isnan(got), nan):
        return float("inf"), 5e-7
    # relative near 0 (the Taylor branch keeps erf(1e-30) = 1.128e-30), absolute above |erf| = 1e-3
    err = np.abs(got[~nan] - want[~nan]) / np.maximum(np.minimum(1.0, 1e3 * np.abs(want[~nan])), 1e-300)
    return float(err.max()) if err.size else 0.0, 5e-7


def layer_norm_case(rng: np.random.Generator, rows: int, n: int, affine: bool) -> tuple[float, float]:
    """(error, tolerance) of layer_norm over the last axis against its definition in float64."""
    x = (rng.standard_normal((rows, n)) * 3 + 5).astype(np.float32)
    scale = rng.standard_normal(n).astype(np.float32) if affine else None
    bias = rng.standard_normal(n).astype(np.float32) if affine else None
    got = native.layer_norm(x, n, scale, bias, 1e-5)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    want = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    if affine:
        want = want * scale + bias  # type: ignore[operator]
    return error(got, want), tolerance(2)


def softmax_case(rng: np.random.Generator, rows: int, n: int, scale: float) -> tuple[float, float]:
    """(error, tolerance) of softmax along the last axis against float64, a row with -inf and one whose terms
    fall into the subnormal range included."""
    x = (rng.standard_normal((rows, n)) * scale).astype(np.float32)
    if n > 1:
        x[0, 0] = -np.inf
        x[-1, :] = np.linspace(0, -100, n, dtype=np.float32)
    got = native.softmax_last(x)
    # x - max rounded to float32 as the kernel (and the NumPy reference) forms it; the rest in float64
    with np.errstate(invalid="ignore"):
        e = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64))
    want = e / e.sum(axis=1, keepdims=True)
    # relative to each value (subnormal results count), within a few float32 ulp of the float64 value
    floor = float(np.finfo(np.float32).smallest_subnormal)
    err = np.abs(got - want) / np.maximum(np.abs(want), floor * 2**23)
    return float(err.max()), 8 * float(np.finfo(np.float32).eps)


def _sigmoid_math(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


# the recurrent loops' float64 functions: their code, the math oracle, a dense sweep, the special values and what
# they must give exactly (NumPy's answers: NaN stays NaN, the limits at the infinities, the sign of zero)
F64_FUNCTIONS: dict[str, tuple[int, Any, tuple[float, float], list[float], list[float]]] = {
    "exp": (native.F64_EXP, math.exp, (-745.0, 709.78),
            [math.nan, math.inf, -math.inf, 710.0, -746.0, 0.0], [math.nan, math.inf, 0.0, math.inf, 0.0, 1.0]),
    "tanh": (native.RNN_ACTS["tanh"], math.tanh, (-25.0, 25.0),
             [math.nan, math.inf, -math.inf, -0.0, 5e-324], [math.nan, 1.0, -1.0, -0.0, 5e-324]),
    "sigmoid": (native.RNN_ACTS["sigmoid"], _sigmoid_math, (-750.0, 750.0),
                [math.nan, math.inf, -math.inf, -1000.0, 0.0], [math.nan, 1.0, 0.0, 0.0, 0.5]),
    "relu": (native.RNN_ACTS["relu"], lambda v: max(v, 0.0), (-5.0, 5.0),
             [math.nan, math.inf, -math.inf], [math.nan, math.inf, 0.0]),
}


def f64_function_case(name: str, count: int) -> tuple[float, float]:
    """(error in float64 ulp, tolerance) of one of the recurrent loops' functions against Python's math on a dense
    sweep of its range and on tiny magnitudes of both signs (relative precision near 0); inf unless the special
    values give exactly what NumPy gives."""
    code, oracle, (lo, hi), special, expect = F64_FUNCTIONS[name]
    tiny = np.geomspace(1e-300, 1.0, count // 8)
    x = np.concatenate([np.linspace(lo, hi, count), tiny, -tiny])
    got = native.map_f64(x, code)
    want = np.array([oracle(float(v)) for v in x])
    err = float(np.max(np.abs(got - want) / np.spacing(np.abs(want))))
    edge = native.map_f64(np.array(special), code)
    signed = ~np.isnan(edge)  # (a NaN's sign bit is not part of the answer)
    exact = (np.array_equal(edge, expect, equal_nan=True)
             and np.array_equal(np.signbit(edge[signed]), np.signbit(np.array(expect)[signed])))
    return (err if exact else math.inf), 4.0  # 4 ulp: below 1e-15 relative


def project_case(rng: np.random.Generator, m: int, n: int, k: int, bias: bool) -> tuple[float, float]:
    """(error, tolerance) of wk_project_f64 against NumPy's float64 product."""
    x, w = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (n, k))
    b = rng.uniform(-1, 1, n) if bias else None
    want = x @ w.T + (0.0 if b is None else b)
    return error(native.project(x, w, b), want), 4 * k * float(np.finfo(np.float64).eps)


RECURRENT_CASES = [  # (kind, steps, batch, hidden, backward, variant, activations)
    ("gru", 6, 1, 16, False, False, ["sigmoid", "tanh"]), ("gru", 4, 3, 9, True, True, ["relu", "sigmoid"]),
    ("gru", 1, 2, 5, False, True, ["tanh", "relu"]), ("lstm", 6, 1, 16, False, False, ["sigmoid", "tanh", "tanh"]),
    ("lstm", 5, 3, 7, True, True, ["tanh", "relu", "sigmoid"]), ("lstm", 1, 2, 1, True, True, ["relu"] * 3),
]


def recurrent_case(rng: np.random.Generator, kind: str, steps: int, batch: int, hidden: int, backward: bool,
                   variant: bool, acts: list[str]) -> tuple[float, float]:
    """(error, tolerance) of wk_gru_loop / wk_lstm_loop against recurrent.py's NumPy steps over one direction,
    written into the second direction of a sequence output.  variant: gru without resetAfter and without
    biases; lstm with peepholes."""
    from py_core.kernels import recurrent

    gates = 3 if kind == "gru" else 4
    xw = rng.uniform(-3, 3, (steps, batch, gates * hidden))
    r_w = rng.uniform(-1, 1, (gates * hidden, hidden))
    r_b = None if kind == "gru" and variant else rng.uniform(-1, 1, gates * hidden)
    peep = rng.uniform(-1, 1, 3 * hidden) if kind == "lstm" and variant else None
    states = [rng.uniform(-1, 1, (batch, hidden)) for _ in range(gates - 2)]
    fns = [recurrent._ACTS[a] for a in acts]
    want_seq = np.zeros((steps, batch, hidden))
    now = [s.copy() for s in states]
    for t in (range(steps - 1, -1, -1) if backward else range(steps)):
        if kind == "gru":
            now = [recurrent._gru_step(xw[t], now[0], r_w, r_b, hidden, not variant, *fns)]
        else:
            now = list(recurrent._lstm_step(xw[t], *now, r_w, r_b, peep, hidden, fns))
        want_seq[t] = now[0]
    seq = np.full((steps, 2, batch, hidden), np.nan)
    if kind == "gru":
        native.gru_loop(xw, r_w, r_b, states[0], seq, 1, backward, not variant, acts)
    else:
        native.lstm_loop(xw, r_w, r_b, peep, states[0], states[1], seq, 1, backward, acts)
    untouched = bool(np.isnan(seq[:, 0]).all())  # the other direction's rows stay as they were
    err = max(error(seq[:, 1], want_seq), *(error(s, w) for s, w in zip(states, now, strict=True)))
    return (err if untouched else math.inf), 64 * float(np.finfo(np.float64).eps) * hidden


def cases() -> Iterator[tuple[str, Any]]:
    """Every check as (name, zero-argument function returning (error, tolerance))."""
    rng = np.random.default_rng(7)
    for shape in GEMM_SHAPES:
        for layout in GEMM_LAYOUTS:
            yield f"sgemm {shape} {layout}", lambda s=shape, lay=layout: gemm_case(rng, s, lay)
    for mode in (native.BIAS_PER_ROW, native.BIAS_PER_COL, native.BIAS_NONE):
        for act, lo, hi in EPILOGUES:
            yield f"epilogue bias{mode} act{act} [{lo}, {hi}]", \
                lambda m=mode, a=act, lo_=lo, hi_=hi: epilogue_case(rng, m, a, lo_, hi_)
            for shape in ((7, 40, 300), (5, 270, 3), (1, 33, 20), (40, 49, 30), (9, 48, 600)):
                for pre in (False, True):
                    yield f"epilogue {shape} prepacked={pre} bias{mode} act{act} [{lo}, {hi}]", \
                        lambda m=mode, a=act, lo_=lo, hi_=hi, s=shape, p=pre: epilogue_case(rng, m, a, lo_, hi_, s, p)
    for case in CONV_CASES:
        for layout in ("nchw", "nhwc"):
            yield f"depthwise {case} {layout}", lambda c=case, lay=layout: depthwise_case(rng, c, lay)
            yield f"im2col {case} {layout}", lambda c=case, lay=layout: im2col_case(rng, c, lay)
        yield f"conv gather {case}", lambda c=case: conv_gather_case(rng, c)
    # several K blocks (C*KH*KW past 256), N blocks (OH*OW past 256), panels across output rows
    # the gather's whole-panel taps (16 columns of one output row inside the input; stride 2 reads 32): rows
    # wider than a panel in strides 1, 2 (also dilated) and 3, windows past the 64 taps with that path, K in
    # equal blocks (576 = 3 x 192)
    for case in ((1, 40, 23, 21, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
                 (2, 3, 37, 35, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
                 (1, 3, 36, 70, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),
                 (1, 2, 9, 80, 3, 3, (1, 2), (2, 2), (2, 2, 2, 2)),
                 (1, 5, 12, 56, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
                 (1, 3, 10, 50, 3, 3, (3, 3), (1, 1), (1, 1, 1, 1)),
                 (1, 2, 12, 40, 9, 9, (1, 1), (1, 1), (4, 4, 4, 4)),
                 (1, 64, 6, 20, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
                 # strides 1 and 2 read a padded copy in place (stride 2: even and odd columns apart): dilated,
                 # padding on some sides only or wider than the window (whole output rows of padding), rows of
                 # 8 and 9 outputs (a last segment of 1), an odd padded width at stride 2
                 (1, 6, 15, 30, 3, 3, (1, 1), (2, 3), (0, 3, 5, 0)),
                 (1, 3, 5, 9, 3, 3, (1, 1), (1, 1), (4, 4, 4, 4)),
                 (2, 4, 8, 10, 3, 3, (1, 1), (1, 1), (0, 0, 0, 0)),
                 (1, 7, 9, 9, 2, 4, (1, 1), (1, 1), (1, 0, 2, 1)),
                 (1, 4, 17, 19, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),
                 (1, 5, 20, 24, 3, 3, (2, 2), (1, 3), (0, 0, 3, 2))):
        yield f"conv gather {case} o=33", lambda c=case: conv_gather_case(rng, c, 33)
    for act, lo, hi in EPILOGUES[1:]:
        yield f"activation act{act} [{lo}, {hi}]", lambda a=act, lo_=lo, hi_=hi: activation_case(rng, a, lo_, hi_)
    for size, scale in ((1, 1.0), (7, 3.0), (1000, 10.0), (4096, 40.0)):
        yield f"sigmoid {size} x{scale}", lambda n=size, sc=scale: sigmoid_case(rng, n, sc)
    for case in EDGE_CASES:
        for layout in ("nchw", "nhwc"):
            for kind in ("depthwise", "im2col"):
                yield f"edge {kind} {case} {layout}", lambda c=case, lay=layout, k=kind: edge_case(rng, c, lay, k)
                yield f"edge graph {kind} {case} {layout}", \
                    lambda c=case, lay=layout, k=kind: edge_graph_case(rng, c, lay, k)
        yield f"edge conv gather {case}", lambda c=case: conv_gather_case(rng, c, 5, reference_kernel=True)
    for size, scale in ((1, 1.0), (7, 0.4), (1003, 2.0), (4096, 6.0)):
        yield f"erf {size} x{scale}", lambda n=size, sc=scale: erf_case(rng, n, sc)
    for rows, n, affine in ((1, 1, True), (3, 7, False), (32, 128, True), (5, 1000, True)):
        yield f"layer_norm {rows}x{n} affine={affine}", lambda r=rows, k=n, a=affine: layer_norm_case(rng, r, k, a)
    for rows, n, scale in ((1, 1, 1.0), (4, 7, 3.0), (64, 32, 5.0), (3, 1001, 30.0)):
        yield f"softmax {rows}x{n} x{scale}", lambda r=rows, k=n, sc=scale: softmax_case(rng, r, k, sc)
    for name in F64_FUNCTIONS:
        yield f"float64 {name}", lambda n=name: f64_function_case(n, 100_000)
    for m, n, k, bias in ((1, 1, 1, True), (50, 512, 128, True), (7, 9, 6, False), (3, 13, 3, True)):
        yield f"project {m}x{n}x{k} bias={bias}", lambda m_=m, n_=n, k_=k, b=bias: project_case(rng, m_, n_, k_, b)
    for kind, steps, batch, hidden, backward, variant, acts in RECURRENT_CASES:
        yield f"{kind} loop {steps}x{batch}x{hidden} backward={backward} variant={variant} {acts}", \
            lambda k=kind, s=steps, b=batch, h=hidden, bw=backward, v=variant, a=acts: \
            recurrent_case(rng, k, s, b, h, bw, v, a)
    for shape, axis, sizes in RESAMPLE_CASES:
        yield f"resample {shape} axis {axis} -> {sizes}", \
            lambda s=shape, a=axis, z=sizes: resample_case(rng, s, a, z)


def check_all() -> list[dict[str, Any]]:
    """Run every case: [{"case", "error", "tolerance"}] (sigmoid's error in ulp, the others relative)."""
    out = []
    for name, fn in cases():
        err, tol = fn()
        out.append({"case": name, "error": err, "tolerance": tol})
    return out
