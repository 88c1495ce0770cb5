"""The C kernels of `webnn_kernels.c` through ctypes: SIMD128 in Pyodide, SSE in CPython, when built.

`make build` compiles the one C source twice: `_webnn_kernels.wasm32.wasm` (a Pyodide side module, shipped in the
core wheel; not named .so, so Pyodide does not link it on install, and the page's Pyodide never does) and
`_webnn_kernels.host.so` (for CPython, so the core tests run the same code).  Without the file for this platform,
or with PYODIDE_WEBNN_NATIVE=0, `available()` is False and callers keep their NumPy kernels.
Every function here takes float32 arrays whose layout the caller has checked (`gemm_ok` for products).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import numpy as np

ACT_NONE, ACT_CLAMP, ACT_HARD_SWISH = 0, 1, 2  # the C file's act codes
BIAS_NONE, BIAS_PER_ROW, BIAS_PER_COL = 0, 1, 2  # its bias codes
F32 = np.dtype(np.float32)
LIB_FILE = "_webnn_kernels.wasm32.wasm" if sys.platform == "emscripten" else "_webnn_kernels.host.so"

_P, _I, _F = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
_SIGNATURES = {
    "wk_sgemm": [_I, _I, _I, _P, _I, _I, _P, _I, _P, _I, _P, _I, _I, _F, _F],
    "wk_im2col_nhwc": [_I] * 4 + [_P] + [_I] * 10 + [_P],
    "wk_im2col_nchw": [_I] * 3 + [_P] + [_I] * 10 + [_P],
    "wk_depthwise_nhwc": [_I] * 4 + [_P, _I, _I, _P] + [_I] * 8 + [_P, _P, _I, _F, _F],
    "wk_depthwise_nchw": [_I] * 4 + [_P, _I, _I, _P] + [_I] * 8 + [_P, _P, _I, _F, _F],
    "wk_resample_linear": [_I] * 4 + [_P, _I, _I] + [_P] * 9,
    "wk_sigmoid": [_P, ctypes.c_long],
    "wk_activation": [_P, _P, ctypes.c_long, _I, _F, _F],
}


def _load() -> ctypes.CDLL | None:
    if os.environ.get("PYODIDE_WEBNN_NATIVE", "1") == "0":
        return None
    path = Path(__file__).with_name(LIB_FILE)
    if not path.is_file():
        return None
    lib = ctypes.CDLL(str(path))
    for name, args in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, None
    return lib


_LIB = _load()


def available() -> bool:
    """Whether the C kernels are loaded (built for this platform and not switched off)."""
    return _LIB is not None


def use_native(on: bool) -> None:
    """Switch the C kernels off (False) or back on (True, if built): for comparisons and tests."""
    global _LIB
    _LIB = _load() if on else None


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.__array_interface__["data"][0]


def gemm_ok(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether sgemm can read these operands in place: float32, 2-D, element strides, B's rows contiguous."""
    return (_LIB is not None and a.dtype == F32 and b.dtype == F32 and a.ndim == 2 and b.ndim == 2
            and b.strides[1] == 4 and a.strides[0] % 4 == 0 and a.strides[1] % 4 == 0
            and b.strides[0] % 4 == 0 and a.size > 0 and b.size > 0)


def sgemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, bias: np.ndarray | None = None,
          bias_mode: int = BIAS_NONE, act: int = ACT_NONE, lo: float = 0.0, hi: float = 0.0) -> np.ndarray:
    """out[M, N] = act(a[M, K] @ b[K, N] + bias); bias per row (length M) or per column (length N)."""
    assert _LIB is not None
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = np.empty((m, n), F32)
    _LIB.wk_sgemm(m, n, k, _ptr(a), a.strides[0] // 4, a.strides[1] // 4, _ptr(b), b.strides[0] // 4,
                  _ptr(out), out.strides[0] // 4, _ptr(bias), bias_mode if bias is not None else BIAS_NONE,
                  act, lo, hi)
    return out


def im2col_nhwc(x: np.ndarray, kh: int, kw: int, strides: tuple[int, int], dilations: tuple[int, int],
                pad_top_left: tuple[int, int], oh: int, ow: int) -> np.ndarray:
    """The [N*OH*OW, KH*KW*C] column matrix of a contiguous NHWC input (zeros in the padding)."""
    assert _LIB is not None
    n, h, w, c = x.shape
    cols = np.empty((n * oh * ow, kh * kw * c), F32)
    _LIB.wk_im2col_nhwc(n, h, w, c, _ptr(x), kh, kw, *strides, *dilations, *pad_top_left, oh, ow, _ptr(cols))
    return cols


def im2col_nchw(x: np.ndarray, kh: int, kw: int, strides: tuple[int, int], dilations: tuple[int, int],
                pad_top_left: tuple[int, int], oh: int, ow: int, cols: np.ndarray) -> np.ndarray:
    """Fill cols [C*KH*KW, OH*OW] from one contiguous CHW image (zeros in the padding)."""
    assert _LIB is not None
    c, h, w = x.shape
    _LIB.wk_im2col_nchw(c, h, w, _ptr(x), kh, kw, *strides, *dilations, *pad_top_left, oh, ow, _ptr(cols))
    return cols


def depthwise(x: np.ndarray, taps: np.ndarray, layout: str, strides: tuple[int, int],
              dilations: tuple[int, int], pad_top_left: tuple[int, int], out_shape: tuple[int, ...],
              bias: np.ndarray | None, act: int, lo: float, hi: float) -> np.ndarray:
    """Depthwise conv2d of a contiguous float32 input; taps [KH, KW, C] for nhwc, [C, KH, KW] for nchw."""
    assert _LIB is not None
    y = np.empty(out_shape, F32)
    if layout == "nhwc":
        n, h, w, c = x.shape
        _, oh, ow, _ = out_shape
        kh, kw = taps.shape[0], taps.shape[1]
        fn = _LIB.wk_depthwise_nhwc
        dims = (n, h, w, c)
    else:
        n, c, h, w = x.shape
        _, _, oh, ow = out_shape
        kh, kw = taps.shape[1], taps.shape[2]
        fn = _LIB.wk_depthwise_nchw
        dims = (n, c, h, w)
    fn(*dims, _ptr(x), kh, kw, _ptr(taps), *strides, *dilations, *pad_top_left, oh, ow, _ptr(y), _ptr(bias),
       act, lo, hi)
    return y


def resample_linear(x: np.ndarray, axis: int, rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                    cols: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Bilinear resampling of the adjacent axes (axis, axis + 1) of a contiguous float32 array.

    rows and cols: (source index 0, source index 1, weight 0, weight 1) per output row / column, as int32 and
    float32 arrays."""
    assert _LIB is not None
    shape = x.shape
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
    flat = y if y.flags.c_contiguous else np.copy(y, order="C")
    _LIB.wk_sigmoid(_ptr(flat), flat.size)
    if flat is not y:
        y[...] = flat


def activation(x: np.ndarray, act: int, lo: float = 0.0, hi: float = 0.0) -> np.ndarray:
    """A new float32 array act(x) (ACT_CLAMP with [lo, hi], ACT_HARD_SWISH), same shape as x."""
    assert _LIB is not None
    src = x if x.flags.c_contiguous else np.copy(x, order="C")  # (ascontiguousarray makes rank 0 rank 1)
    y = np.empty(src.shape, F32)
    _LIB.wk_activation(_ptr(src), _ptr(y), src.size, act, lo, hi)
    return y


def sigmoid(x: np.ndarray) -> np.ndarray:
    """A new float32 array 1 / (1 + exp(-x))."""
    y = np.array(x, dtype=F32, order="C", copy=True)
    sigmoid_inplace(y)
    return y
