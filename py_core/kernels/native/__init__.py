"""The C kernels of `webnn_kernels.c` through ctypes: SIMD128 in Pyodide, SSE in CPython, when built.

`make build` compiles the one C source twice: `_webnn_kernels.wasm32.wasm` (a Pyodide side module, shipped in the
core wheel; not named .so, so Pyodide does not link it on install, and the page's Pyodide never does) and
`_webnn_kernels.host.so` (for CPython, so the core tests run the same code).  Without the file for this platform,
or with PYODIDE_WEBNN_NATIVE=0, `available()` is False and callers keep their NumPy kernels.

Memory safety by construction: every count, stride and geometry value crosses as a C `int64` (`ctypes.c_int64`;
`long` is 32 bits in wasm32) and the C code forms its coordinates and offsets in 64 bits.  ctypes wraps an int
that does not fit its type without a word, so nothing reaches C unchecked: the caller asks `conv_fits` (or
`gemm_ok`, `resample_fits`) once where it chooses the C kernel and otherwise runs NumPy, and every function here
raises `NativeRangeError` before a call whose arrays or values the kernel could not handle in bounds.
"""

from __future__ import annotations

import ctypes
import operator
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH = 0, 1, 2  # the C file's act codes
BIAS_NONE, BIAS_PER_ROW, BIAS_PER_COL = 0, 1, 2  # its bias codes
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
# the float64 functions' codes in the C file (F64_*): the recurrent activations, and exp for the checks
F64_EXP = 0
RNN_ACTS = {"sigmoid": 1, "tanh": 2, "relu": 3}
LIB_FILE = "_webnn_kernels.wasm32.wasm" if sys.platform == "emscripten" else "_webnn_kernels.host.so"
RELAXED_FILE = "_webnn_kernels.relaxed.wasm32.wasm"  # the same kernels with f32x4.relaxed_madd (wasm only)
# Every integer passed to C, and every coordinate the C code forms from them (out * stride - pad + tap *
# dilation, a few vector lanes past the last output), stays below this: far from int64 overflow.
LIMIT = 2**62
INT32_MAX = 2**31 - 1

_P, _L, _E, _F = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float  # _E: the small act/bias codes
_SIGNATURES = {
    "wk_sgemm": [_L, _L, _L, _P, _L, _L, _P, _L, _P, _L, _P, _E, _E, _F, _F, _P],
    "wk_sgemm_work": [_L, _L],
    "wk_depthwise_nchw_work": [_L] * 4,
    "wk_packed_b_size": [_L, _L],
    "wk_pack_b": [_L, _L, _P, _L, _P],
    "wk_sgemm_packed": [_L, _L, _L, _P, _L, _L, _P, _P, _L, _P, _E, _E, _F, _F],
    "wk_im2col_nhwc": [_L] * 4 + [_P] + [_L] * 10 + [_P],
    "wk_im2col_nchw": [_L] * 3 + [_P] + [_L] * 10 + [_P],
    "wk_conv_nchw": [_L] * 3 + [_P] + [_L] * 10 + [_P, _L, _P, _P, _E, _F, _F, _P],
    "wk_conv_nchw_work": [_L] * 11,
    "wk_depthwise_nhwc": [_L] * 4 + [_P, _L, _L, _P] + [_L] * 8 + [_P, _P, _E, _F, _F],
    "wk_depthwise_nchw": [_L] * 4 + [_P, _L, _L, _P] + [_L] * 8 + [_P, _P, _E, _F, _F, _P],
    "wk_resample_linear": [_L] * 4 + [_P, _L, _L] + [_P] * 9,
    "wk_sigmoid": [_P, _L],
    "wk_activation": [_P, _P, _L, _E, _F, _F],
}
# the small-op kernels of transformer graphs (erf, layerNormalization, softmax): see the end of this file
_SIGNATURES.update({
    "wk_erf": [_P, _P, _L],
    "wk_layer_norm": [_P, _P, _L, _L, _P, _P, _F],
    "wk_softmax": [_P, _P, _L, _L],
})
# the recurrent loops in float64 (py_core/kernels/recurrent.py) and their element-wise functions
_SIGNATURES.update({
    "wk_map_f64": [_P, _P, _L, _E],
    "wk_project_f64": [_L] * 3 + [_P] * 4,
    "wk_gru_loop": [_L] * 3 + [_P] * 5 + [_L] + [_E] * 4 + [_P],
    "wk_lstm_loop": [_L] * 3 + [_P] * 7 + [_L] + [_E] * 4 + [_P],
})
# the compiled plan (webnn_plan.c, py_core/compiler/plan.py): words, their count, the address table
_SIGNATURES["wk_run_plan"] = [_P, _L, _P]


# the functions returning an int64
_SIZES = ("wk_sgemm_work", "wk_packed_b_size", "wk_depthwise_nchw_work", "wk_conv_nchw_work", "wk_run_plan")
# the packed product's blocking, as in webnn_kernels.c (tests/core/test_native_kernels.py checks they agree)
PANEL, KC, NC = 16, 256, 256


def sgemm_work_size(n: int, k: int) -> int:
    """Floats of the work buffer wk_sgemm packs B into (one block of KC rows x NC columns)."""
    return min(k, KC) * -(-min(n, NC) // PANEL) * PANEL


def depthwise_work_size(kh: int, kw: int, strides: Sequence[int], dilations: Sequence[int], oh: int,
                        ow: int) -> int:
    """Floats of the padded plane the NCHW depthwise kernel's 3x3 path copies each channel into; 0 where that
    path does not apply (other windows, dilations, a column stride past 2, or a plane past 2^24 floats)."""
    sh, sw = strides
    if (kh, kw) != (3, 3) or tuple(dilations) != (1, 1) or sw > 2:
        return 0
    size = ((oh - 1) * sh + 3) * ((ow - 1) * sw + 4)
    return size if size <= 2**24 else 0


def conv_nchw_work_size(c: int, h: int, w: int, kh: int, kw: int, strides: Sequence[int],
                        dilations: Sequence[int], oh: int, ow: int) -> int:
    """Floats of wk_conv_nchw's work buffer (the zero-padded copy of the image at strides of 1 or 2, else one
    packed block of the gathered columns), asked of the C file itself: the kernel picks its path by the same rule,
    so the buffer and what it writes can never disagree."""
    assert _LIB is not None
    sh, sw = strides
    dh, dw = dilations
    return int(_LIB.wk_conv_nchw_work(c, h, w, kh, kw, sh, sw, dh, dw, oh, ow))


def packed_b_size(n: int, k: int) -> int:
    """Floats of a whole [K, N] B packed by wk_pack_b."""
    return k * -(-n // PANEL) * PANEL


class NativeRangeError(ValueError):
    """A C kernel was called with arrays or values it cannot handle in bounds: a caller skipped its check."""


def _relaxed_wanted() -> bool:
    """Whether to try the relaxed-SIMD build first (wasm only): yes unless PYODIDE_WEBNN_RELAXED=0.  An engine
    without relaxed SIMD refuses to compile the file and the plain build loads instead."""
    return os.environ.get("PYODIDE_WEBNN_RELAXED", "1") != "0"


def _open() -> tuple[ctypes.CDLL, str] | None:
    """The kernels' library for this platform and its file name (relaxed SIMD first where wanted)."""
    plain = Path(__file__).with_name(LIB_FILE)
    relaxed = Path(__file__).with_name(RELAXED_FILE)
    if sys.platform == "emscripten" and relaxed.is_file() and _relaxed_wanted():
        try:
            return ctypes.CDLL(str(relaxed)), relaxed.name
        except OSError:  # the engine cannot compile relaxed SIMD
            pass
    if not plain.is_file():
        return None
    return ctypes.CDLL(str(plain)), plain.name


LOADED_FILE = ""  # which build _load() opened ("" when none)


def _load() -> ctypes.CDLL | None:
    global LOADED_FILE
    LOADED_FILE = ""
    if os.environ.get("PYODIDE_WEBNN_NATIVE", "1") == "0":
        return None
    opened = _open()
    if opened is None:
        return None
    lib, LOADED_FILE = opened
    for name, args in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, (_L if name in _SIZES else None)
    return lib


_LIB = _load()


def available() -> bool:
    """Whether the C kernels are loaded (built for this platform and not switched off)."""
    return _LIB is not None


def ensure_loaded() -> bool:
    """Load the C kernels if they are not (and not switched off): the build's snapshot of the worker imports the
    core with them off, since which build loads (relaxed SIMD or not) depends on the engine that restores it."""
    global _LIB
    if _LIB is None:
        _LIB = _load()
    return _LIB is not None


def use_native(on: bool) -> None:
    """Switch the C kernels off (False) or back on (True, if built): for comparisons and tests."""
    global _LIB
    _LIB = _load() if on else None


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.__array_interface__["data"][0]


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise NativeRangeError(f"C kernel {what}: refused before the call (the caller must check first)")


def _typed_c(dtype: np.dtype[Any], arrays: Sequence[np.ndarray | None]) -> bool:
    return all(a is None or (a.dtype == dtype and a.flags.c_contiguous) for a in arrays)


def _f32_c(*arrays: np.ndarray | None) -> bool:
    """float32 and C-contiguous (what the kernels index with their own strides)."""
    return _typed_c(F32, arrays)


def window_fits(size: int, window: int, stride: int, dilation: int, pad_begin: int, out: int) -> bool:
    """Whether the C kernels' coordinates along one spatial axis stay far from int64 overflow: they form
    o * stride - pad_begin + i * dilation for every output o (up to 3 past the last, vector loads) and tap i."""
    values = [operator.index(v) for v in (size, window, stride, dilation, pad_begin, out)]
    return (all(0 <= v < LIMIT for v in values) and stride > 0 and dilation > 0
            and (out + 3) * stride + pad_begin + (window - 1) * dilation + size < LIMIT)


def conv_fits(in_hw: Sequence[int], window: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
              pad_top_left: Sequence[int], out_hw: Sequence[int]) -> bool:
    """`window_fits` along both axes: the one check a caller makes where it picks im2col or depthwise."""
    return all(window_fits(*axis) for axis in zip(in_hw, window, strides, dilations, pad_top_left, out_hw,
                                                  strict=True))


def _fit(*values: int) -> bool:
    return all(-LIMIT < int(v) < LIMIT for v in values)


def gemm_ok(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether sgemm can read these operands in place: float32, 2-D, element strides, B's rows contiguous."""
    return (_LIB is not None and a.dtype == F32 and b.dtype == F32 and a.ndim == 2 and b.ndim == 2
            and b.strides[1] == 4 and a.strides[0] % 4 == 0 and a.strides[1] % 4 == 0
            and b.strides[0] % 4 == 0 and a.size > 0 and b.size > 0 and a.shape[1] == b.shape[0]
            and _fit(*a.shape, *b.shape, *a.strides, *b.strides))


def _product_out(m: int, n: int, out: np.ndarray | None, bias: np.ndarray | None, bias_mode: int, act: int,
                 what: str) -> tuple[np.ndarray, int]:
    """A product's checked output [m, n] (a new one when `out` is None) and its bias mode (none without a bias):
    the C store writes rows through a float32 stride and reads the bias per row or per column."""
    if out is None:
        out = np.empty((m, n), F32)
    _require(out.dtype == F32 and out.shape == (m, n) and out.strides[1] == 4 and out.strides[0] % 4 == 0
             and _fit(*out.strides), f"{what} output")
    if bias is None:
        bias_mode = BIAS_NONE
    _require(bias_mode in (BIAS_NONE, BIAS_PER_ROW, BIAS_PER_COL) and act in (ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH)
             and (bias is None or (_f32_c(bias) and bias.size == (m if bias_mode == BIAS_PER_ROW else n))),
             f"{what} bias/activation")
    return out, bias_mode


def sgemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, bias: np.ndarray | None = None,
          bias_mode: int = BIAS_NONE, act: int = ACT_NONE, lo: float = 0.0, hi: float = 0.0) -> np.ndarray:
    """out[M, N] = act(a[M, K] @ b[K, N] + bias); bias per row (length M) or per column (length N)."""
    assert _LIB is not None
    _require(gemm_ok(a, b), "sgemm operands")
    m, k = a.shape
    n = b.shape[1]
    out, bias_mode = _product_out(m, n, out, bias, bias_mode, act, "sgemm")
    work = np.empty(sgemm_work_size(n, k), F32) if m >= 2 and n >= PANEL else None
    _LIB.wk_sgemm(m, n, k, _ptr(a), a.strides[0] // 4, a.strides[1] // 4, _ptr(b), b.strides[0] // 4,
                  _ptr(out), out.strides[0] // 4, _ptr(bias), bias_mode, act, lo, hi, _ptr(work))
    return out


class PackedB:
    """A constant right-hand side [K, N] packed once into the panels the product reads (wk_pack_b)."""

    def __init__(self, b: np.ndarray):
        assert _LIB is not None
        _require(b.dtype == F32 and b.ndim == 2 and b.size > 0 and b.strides[1] == 4 and b.strides[0] % 4 == 0
                 and _fit(*b.shape, *b.strides), "pack_b")
        self.k, self.n = b.shape
        self.data = np.empty(packed_b_size(self.n, self.k), F32)
        _LIB.wk_pack_b(self.n, self.k, _ptr(b), b.strides[0] // 4, _ptr(self.data))

    def unpack(self) -> np.ndarray:
        """B [K, N] again, as a new array (for the NumPy kernels when the C kernels are off): the packed layout
        is K blocks of KC rows, each as panels of PANEL columns stored k-major."""
        width = -(-self.n // PANEL) * PANEL
        blocks = []
        for k0 in range(0, self.k, KC):
            kc = min(KC, self.k - k0)
            block = self.data[k0 * width:(k0 + kc) * width].reshape(width // PANEL, kc, PANEL)
            blocks.append(block.transpose(1, 0, 2).reshape(kc, width)[:, :self.n])
        return np.ascontiguousarray(np.concatenate(blocks))


def sgemm_packed_ok(a: np.ndarray) -> bool:
    """Whether sgemm_packed can read this left-hand side in place (float32, 2-D, element strides)."""
    return (_LIB is not None and a.dtype == F32 and a.ndim == 2 and a.size > 0 and a.strides[0] % 4 == 0
            and a.strides[1] % 4 == 0 and _fit(*a.shape, *a.strides))


def sgemm_packed(a: np.ndarray, b: PackedB, out: np.ndarray | None = None, bias: np.ndarray | None = None,
                 bias_mode: int = BIAS_NONE, act: int = ACT_NONE, lo: float = 0.0,
                 hi: float = 0.0) -> np.ndarray:
    """out[M, N] = act(a[M, K] @ B + bias) with B packed by PackedB."""
    assert _LIB is not None
    _require(sgemm_packed_ok(a) and a.shape[1] == b.k, "sgemm_packed operands")
    m, n = a.shape[0], b.n
    out, bias_mode = _product_out(m, n, out, bias, bias_mode, act, "sgemm_packed")
    _LIB.wk_sgemm_packed(m, n, b.k, _ptr(a), a.strides[0] // 4, a.strides[1] // 4, _ptr(b.data), _ptr(out),
                         out.strides[0] // 4, _ptr(bias), bias_mode, act, lo, hi)
    return out


def im2col_nhwc(x: np.ndarray, kh: int, kw: int, strides: tuple[int, int], dilations: tuple[int, int],
                pad_top_left: tuple[int, int], oh: int, ow: int) -> np.ndarray:
    """The [N*OH*OW, KH*KW*C] column matrix of a contiguous NHWC input (zeros in the padding)."""
    assert _LIB is not None
    n, h, w, c = x.shape
    _require(_f32_c(x) and conv_fits((h, w), (kh, kw), strides, dilations, pad_top_left, (oh, ow)), "im2col_nhwc")
    cols = np.empty((n * oh * ow, kh * kw * c), F32)
    _LIB.wk_im2col_nhwc(n, h, w, c, _ptr(x), kh, kw, *strides, *dilations, *pad_top_left, oh, ow, _ptr(cols))
    return cols


def im2col_nchw(x: np.ndarray, kh: int, kw: int, strides: tuple[int, int], dilations: tuple[int, int],
                pad_top_left: tuple[int, int], oh: int, ow: int, cols: np.ndarray) -> np.ndarray:
    """Fill cols [C*KH*KW, OH*OW] from one contiguous CHW image (zeros in the padding)."""
    assert _LIB is not None
    c, h, w = x.shape
    _require(_f32_c(x, cols) and cols.shape == (c * kh * kw, oh * ow)
             and conv_fits((h, w), (kh, kw), strides, dilations, pad_top_left, (oh, ow)), "im2col_nchw")
    _LIB.wk_im2col_nchw(c, h, w, _ptr(x), kh, kw, *strides, *dilations, *pad_top_left, oh, ow, _ptr(cols))
    return cols


def conv_nchw(x: np.ndarray, w: np.ndarray, kh: int, kw: int, strides: tuple[int, int],
              dilations: tuple[int, int], pad_top_left: tuple[int, int], oh: int, ow: int, out: np.ndarray,
              bias: np.ndarray | None, act: int, lo: float, hi: float) -> np.ndarray:
    """out[O, OH*OW] = act(w[O, C*KH*KW] x im2col(x) + bias per row) for one contiguous CHW image, the column
    matrix gathered block by block into the product's panels (never written whole)."""
    assert _LIB is not None
    c, h, wd = x.shape
    o = w.shape[0]
    _require(_f32_c(x, w, bias, out) and w.shape == (o, c * kh * kw) and out.shape == (o, oh * ow)
             and (bias is None or bias.size == o) and act in (ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH)
             and conv_fits((h, wd), (kh, kw), strides, dilations, pad_top_left, (oh, ow)), "conv_nchw")
    work = np.empty(conv_nchw_work_size(c, h, wd, kh, kw, strides, dilations, oh, ow), F32)
    _LIB.wk_conv_nchw(c, h, wd, _ptr(x), kh, kw, *strides, *dilations, *pad_top_left, oh, ow, _ptr(w), o,
                      _ptr(out), _ptr(bias), act, lo, hi, _ptr(work))
    return out


def depthwise(x: np.ndarray, taps: np.ndarray, layout: str, strides: tuple[int, int],
              dilations: tuple[int, int], pad_top_left: tuple[int, int], out_shape: tuple[int, ...],
              bias: np.ndarray | None, act: int, lo: float, hi: float,
              work: np.ndarray | None = None) -> np.ndarray:
    """Depthwise conv2d of a contiguous float32 input; taps [KH, KW, C] for nhwc, [C, KH, KW] for nchw.  `work`:
    the nchw 3x3 path's padded plane (allocated here when None; native_check passes one full of NaN)."""
    assert _LIB is not None
    if layout == "nhwc":
        n, h, w, c = x.shape
        kh, kw = taps.shape[0], taps.shape[1]
        want_out, want_taps = (n, out_shape[1], out_shape[2], c), (kh, kw, c)
        _, oh, ow, _ = out_shape
        fn = _LIB.wk_depthwise_nhwc
        dims = (n, h, w, c)
    else:
        n, c, h, w = x.shape
        kh, kw = taps.shape[1], taps.shape[2]
        want_out, want_taps = (n, c, out_shape[2], out_shape[3]), (c, kh, kw)
        _, _, oh, ow = out_shape
        fn = _LIB.wk_depthwise_nchw
        dims = (n, c, h, w)
        size = depthwise_work_size(kh, kw, strides, dilations, oh, ow)
        if work is None or not size:
            work = np.empty(size, F32) if size else None
        _require(work is None or (_f32_c(work) and work.size == size), "depthwise_nchw work")
    _require(_f32_c(x, taps, bias) and tuple(out_shape) == want_out and taps.shape == want_taps
             and (bias is None or bias.size == c) and act in (ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH)
             and conv_fits((h, w), (kh, kw), strides, dilations, pad_top_left, (oh, ow)), f"depthwise_{layout}")
    y = np.empty(out_shape, F32)
    fn(*dims, _ptr(x), kh, kw, _ptr(taps), *strides, *dilations, *pad_top_left, oh, ow, _ptr(y), _ptr(bias),
       act, lo, hi, *(() if layout == "nhwc" else (_ptr(work),)))
    return y


def resample_fits(in_sizes: Sequence[int]) -> bool:
    """Whether the bilinear kernel's int32 source tables can index these input sizes."""
    return all(0 < s <= INT32_MAX for s in in_sizes)


def resample_linear(x: np.ndarray, axis: int, rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                    cols: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Bilinear resampling of the adjacent axes (axis, axis + 1) of a contiguous float32 array.

    rows and cols: (source index 0, source index 1, weight 0, weight 1) per output row / column, as int32 and
    float32 arrays."""
    assert _LIB is not None
    shape = x.shape
    _require(_f32_c(x) and 0 <= axis <= x.ndim - 2 and resample_fits(shape[axis:axis + 2]), "resample_linear")
    for table, size in ((rows, shape[axis]), (cols, shape[axis + 1])):
        lo, hi, w0, w1 = table
        # indices in [0, size): checked here, since the kernel reads x at them (len(table) values each)
        _require(lo.dtype == hi.dtype == np.int32 and _f32_c(w0, w1) and lo.flags.c_contiguous
                 and hi.flags.c_contiguous and lo.shape == hi.shape == w0.shape == w1.shape and lo.ndim == 1
                 and (lo.size == 0 or (min(lo.min(), hi.min()) >= 0 and max(lo.max(), hi.max()) < size)),
                 "resample_linear tables")
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 2:], dtype=np.int64))
    oh, ow = len(rows[0]), len(cols[0])
    y = np.empty(shape[:axis] + (oh, ow) + shape[axis + 2:], F32)
    _LIB.wk_resample_linear(outer, shape[axis], shape[axis + 1], inner, _ptr(x), oh, ow,
                            *(_ptr(a) for a in rows), *(_ptr(a) for a in cols), _ptr(y))
    return y


def sigmoid_inplace(y: np.ndarray) -> None:
    """y <- 1 / (1 + exp(-y)) in place on a float32 array (subnormal results below -87 included); a strided
    view goes through a contiguous copy."""
    assert _LIB is not None
    _require(y.dtype == F32, "sigmoid")
    flat = y if y.flags.c_contiguous else np.copy(y, order="C")
    _LIB.wk_sigmoid(_ptr(flat), flat.size)
    if flat is not y:
        y[...] = flat


def activation(x: np.ndarray, act: int, lo: float = 0.0, hi: float = 0.0) -> np.ndarray:
    """A new float32 array act(x) (ACT_CLAMP with [lo, hi], ACT_HARD_SWISH), same shape as x."""
    assert _LIB is not None
    _require(x.dtype == F32 and act in (ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH), "activation")
    src = x if x.flags.c_contiguous else np.copy(x, order="C")  # (ascontiguousarray makes rank 0 rank 1)
    y = np.empty(src.shape, F32)
    _LIB.wk_activation(_ptr(src), _ptr(y), src.size, act, lo, hi)
    return y


def sigmoid(x: np.ndarray) -> np.ndarray:
    """A new float32 array 1 / (1 + exp(-x))."""
    y = np.array(x, dtype=F32, order="C", copy=True)
    sigmoid_inplace(y)
    return y


# ------------------------------------------------------------------------------------------- small-op kernels


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.copy(x, order="C")  # (ascontiguousarray makes rank 0 rank 1)


def erf(x: np.ndarray) -> np.ndarray:
    """A new float32 array erf(x) (absolute error below 5e-7, relative near 0)."""
    assert _LIB is not None
    _require(x.dtype == F32, "erf")
    src = _contiguous(x)
    y = np.empty(src.shape, F32)
    _LIB.wk_erf(_ptr(src), _ptr(y), src.size)
    return y


def layer_norm(x: np.ndarray, n: int, scale: np.ndarray | None, bias: np.ndarray | None,
               epsilon: float) -> np.ndarray:
    """A new float32 array: layerNormalization of x over its last axes, whose sizes multiply to n; scale and bias
    hold n floats each in those axes' order, or are None."""
    assert _LIB is not None
    _require(x.dtype == F32 and n > 0 and x.size % n == 0 and _fit(x.size), "layer_norm")
    for a in (scale, bias):
        _require(a is None or (a.dtype == F32 and a.size == n), "layer_norm")
    src = _contiguous(x)
    sc = None if scale is None else _contiguous(scale)
    bi = None if bias is None else _contiguous(bias)
    y = np.empty(src.shape, F32)
    _LIB.wk_layer_norm(_ptr(src), _ptr(y), src.size // n, n, _ptr(sc), _ptr(bi), epsilon)
    return y


def softmax_last(x: np.ndarray) -> np.ndarray:
    """A new float32 array: softmax of x along its last axis."""
    assert _LIB is not None
    _require(x.dtype == F32 and x.ndim >= 1 and x.shape[-1] > 0 and _fit(x.size), "softmax")
    src = _contiguous(x)
    y = np.empty(src.shape, F32)
    _LIB.wk_softmax(_ptr(src), _ptr(y), src.size // src.shape[-1], src.shape[-1])
    return y


def run_plan_fn() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """The compiled plan's entry point wk_run_plan(words, count, table) -> 0 or 1 + a refused word's offset
    (py_core/compiler/plan.py writes and checks the words), or None when the C kernels are off."""
    return None if _LIB is None else _LIB.wk_run_plan


# ------------------------------------------------------------------------------------ recurrent loops (float64)


def _f64_c(*arrays: np.ndarray | None) -> bool:
    """float64 and C-contiguous (the recurrent loops)."""
    return _typed_c(F64, arrays)


def map_f64(x: np.ndarray, code: int) -> np.ndarray:
    """A new float64 array f(x) for a code of RNN_ACTS or F64_EXP: the recurrent loops' own exp, sigmoid, tanh."""
    assert _LIB is not None
    _require(x.dtype == F64 and code in (F64_EXP, *RNN_ACTS.values()), "map_f64")
    src = _contiguous(x)
    y = np.empty(src.shape, F64)
    _LIB.wk_map_f64(_ptr(src), _ptr(y), src.size, code)
    return y


def project_ok(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> bool:
    """Whether wk_project_f64 can read these: x [..., K] and w [N, K], bias [N] or None, float64 and C-contiguous."""
    return (_LIB is not None and x.ndim >= 1 and w.ndim == 2 and x.size > 0 and w.size > 0
            and x.shape[-1] == w.shape[1] and _f64_c(x, w, bias) and (bias is None or bias.shape == (w.shape[0],))
            and _fit(x.size, w.size, x.size // w.shape[1] * w.shape[0]))


class Bound:
    """A C call whose operands were checked once, over buffers it keeps alive: calling it makes the call with no
    further checks, as long as the library it was bound to is the one loaded (`live`)."""

    def __init__(self, fn: Any, args: tuple[Any, ...], keep: tuple[np.ndarray | None, ...]):
        self.lib, self.fn, self.args, self.keep = _LIB, fn, args, keep

    def live(self) -> bool:
        return self.lib is not None and self.lib is _LIB

    def __call__(self) -> None:
        self.fn(*self.args)


def bind_project(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray) -> Bound:
    """wk_project_f64 writing x @ w.T (+ bias) into `out` [..., N] (float64, C-contiguous)."""
    assert _LIB is not None
    _require(project_ok(x, w, bias) and _f64_c(out) and out.shape == x.shape[:-1] + (w.shape[0],), "project_f64")
    n, k = w.shape
    return Bound(_LIB.wk_project_f64, (x.size // k, n, k, _ptr(x), _ptr(w), _ptr(bias), _ptr(out)), (x, w, bias, out))


def project(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """A new float64 array x @ w.T (+ bias), [..., N]: each row of x against each row of w."""
    out = np.empty(x.shape[:-1] + (w.shape[0],), F64)
    bind_project(x, w, bias, out)()
    return out


def recurrent_ok(gates: int, xw: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, peep: np.ndarray | None,
                 states: Sequence[np.ndarray], seq: np.ndarray | None, d: int, acts: Sequence[str]) -> bool:
    """Whether wk_gru_loop (3 gates) or wk_lstm_loop (4) can run these operands: xw [steps, batch, gates * hidden],
    r_w [gates * hidden, hidden], r_b [gates * hidden], peep [3 * hidden], the states [batch, hidden] and
    seq [steps, dirs, batch, hidden] with d < dirs, all float64 and C-contiguous; activations it has codes for."""
    if _LIB is None or xw.ndim != 3 or r_w.ndim != 2:
        return False
    steps, batch, width = xw.shape
    hidden = r_w.shape[1]
    return (gates in (3, 4) and steps > 0 and batch > 0 and hidden > 0 and width == gates * hidden
            and _f64_c(xw, r_w, r_b, peep, seq, *states) and r_w.shape == (width, hidden)
            and (r_b is None or r_b.shape == (width,))
            and (peep is None or (gates == 4 and peep.shape == (3 * hidden,)))
            and len(states) == gates - 2 and all(s.shape == (batch, hidden) for s in states)
            and (seq is None or (seq.ndim == 4 and seq.shape[0] == steps and seq.shape[2:] == (batch, hidden)
                                 and 0 <= d < seq.shape[1]))
            and len(acts) == gates - 1 and all(a in RNN_ACTS for a in acts)
            and _fit(xw.size, r_w.size, 0 if seq is None else seq.size))


def _sequence_at(seq: np.ndarray | None, d: int) -> tuple[int | None, int]:
    """The address of seq[0, d] and seq's step stride in doubles (None, 0 without a sequence output)."""
    return (None, 0) if seq is None else (_ptr(seq[0, d]), seq.strides[0] // 8)


def bind_gru_loop(xw: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, h: np.ndarray, seq: np.ndarray | None,
                  d: int, backward: bool, reset_after: bool, acts: Sequence[str]) -> Bound:
    """gru_loop as a Bound call over these buffers."""
    assert _LIB is not None
    _require(recurrent_ok(3, xw, r_w, r_b, None, [h], seq, d, acts), "gru_loop")
    steps, batch, _ = xw.shape
    f, g = (RNN_ACTS[a] for a in acts)
    work = np.empty(4 * r_w.shape[1], F64)
    return Bound(_LIB.wk_gru_loop, (steps, batch, r_w.shape[1], _ptr(xw), _ptr(r_w), _ptr(r_b), _ptr(h),
                                    *_sequence_at(seq, d), int(backward), int(reset_after), f, g, _ptr(work)),
                 (xw, r_w, r_b, h, seq, work))


def gru_loop(xw: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, h: np.ndarray, seq: np.ndarray | None,
             d: int, backward: bool, reset_after: bool, acts: Sequence[str]) -> None:
    """GRU over every step of one direction in place: h [batch, hidden] from the initial to the last state,
    seq[t, d] = the state after step t (seq None: not wanted).  Gates in canonical order (z, r, n)."""
    bind_gru_loop(xw, r_w, r_b, h, seq, d, backward, reset_after, acts)()


def bind_lstm_loop(xw: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, peep: np.ndarray | None,
                   h: np.ndarray, c: np.ndarray, seq: np.ndarray | None, d: int, backward: bool,
                   acts: Sequence[str]) -> Bound:
    """lstm_loop as a Bound call over these buffers."""
    assert _LIB is not None
    _require(recurrent_ok(4, xw, r_w, r_b, peep, [h, c], seq, d, acts), "lstm_loop")
    steps, batch, _ = xw.shape
    gate, cell, out = (RNN_ACTS[a] for a in acts)
    work = np.empty(4 * r_w.shape[1], F64)
    return Bound(_LIB.wk_lstm_loop, (steps, batch, r_w.shape[1], _ptr(xw), _ptr(r_w), _ptr(r_b), _ptr(peep),
                                     _ptr(h), _ptr(c), *_sequence_at(seq, d), int(backward), gate, cell, out,
                                     _ptr(work)),
                 (xw, r_w, r_b, peep, h, c, seq, work))


def lstm_loop(xw: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, peep: np.ndarray | None, h: np.ndarray,
              c: np.ndarray, seq: np.ndarray | None, d: int, backward: bool, acts: Sequence[str]) -> None:
    """LSTM over every step of one direction in place: h and c [batch, hidden] from the initial to the last
    states, seq[t, d] = the hidden state after step t (seq None: not wanted).  Gates in canonical order
    (i, o, f, g), peepholes (i, o, f)."""
    bind_lstm_loop(xw, r_w, r_b, peep, h, c, seq, d, backward, acts)()
