"""The C kernels (py_core/kernels/native) against float64 NumPy formulas, on the host build of the same C source.

The wasm build of the same file is checked in Pyodide by tests/pyodide/test_pyodide_native.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from py_core.kernels import native

pytestmark = pytest.mark.skipif(not native.available(), reason="C kernels not built (make build)")

RNG = np.random.default_rng(7)


def _close(got: np.ndarray, want: np.ndarray, k: int) -> None:
    # float32 sums of k products in k order: error grows with k and the magnitude of the terms
    tol = 4 * k * np.finfo(np.float32).eps
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _ref_act(y: np.ndarray, act: int, lo: float, hi: float) -> np.ndarray:
    if act == native.ACT_CLAMP:
        return np.clip(y, lo, hi)
    if act == native.ACT_HARD_SWISH:
        return y * np.clip(y + 3, 0, 6) / 6
    return y


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (4, 8, 3), (5, 9, 17), (7, 3, 2), (64, 64, 64), (65, 130, 33),
                                   (3, 1000, 1280), (200, 12, 5)])
@pytest.mark.parametrize("layout", ["plain", "a_transposed", "b_strided"])
def test_sgemm_matches_float64(m: int, n: int, k: int, layout: str) -> None:
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    if layout == "a_transposed":
        a = np.asfortranarray(a)  # column-major A: row stride 1, column stride m
    elif layout == "b_strided":
        b = np.pad(b, ((0, 0), (0, 5)))[:, :n]  # rows of B further apart than n
    got = native.sgemm(a, b)
    _close(got, a.astype(np.float64) @ b.astype(np.float64), k)


@pytest.mark.parametrize("bias_mode", [native.BIAS_PER_ROW, native.BIAS_PER_COL])
@pytest.mark.parametrize("act,lo,hi", [(native.ACT_NONE, 0, 0), (native.ACT_CLAMP, 0.0, 6.0),
                                       (native.ACT_CLAMP, -0.5, np.inf), (native.ACT_HARD_SWISH, 0, 0)])
def test_sgemm_epilogue(bias_mode: int, act: int, lo: float, hi: float) -> None:
    m, n, k = 13, 21, 9
    a = (RNG.standard_normal((m, k)) * 2).astype(np.float32)
    b = (RNG.standard_normal((k, n)) * 2).astype(np.float32)
    bias = RNG.standard_normal(m if bias_mode == native.BIAS_PER_ROW else n).astype(np.float32)
    got = native.sgemm(a, b, bias=bias, bias_mode=bias_mode, act=act, lo=lo, hi=hi)
    y = a.astype(np.float64) @ b.astype(np.float64)
    y += bias[:, None] if bias_mode == native.BIAS_PER_ROW else bias[None, :]
    _close(got, _ref_act(y, act, lo, hi), k)


def test_epilogue_keeps_nan_like_the_numpy_post_ops() -> None:
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.ones((2, 8), np.float32)
    got = native.sgemm(a, b, act=native.ACT_CLAMP, lo=0.0, hi=6.0)
    assert np.isnan(got).all()


def _conv_ref(x: np.ndarray, w_oihw: np.ndarray, strides: tuple[int, int], dil: tuple[int, int],
              pad: tuple[int, int, int, int], groups: int) -> np.ndarray:
    """NCHW conv2d in float64 by its definition (a loop over taps)."""
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
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + (oh - 1) * strides[0] + 1:strides[0],
                           j * dil[1]:j * dil[1] + (ow - 1) * strides[1] + 1:strides[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w_oihw[g * og:(g + 1) * og, :, i, j])
    return y


CONV_CASES = [  # (n, c, h, w, kh, kw, strides, dilations, padding top/bottom/left/right)
    (1, 8, 9, 11, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (2, 5, 10, 7, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1)),
    (1, 16, 14, 14, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2)),
    (1, 12, 13, 13, 3, 3, (1, 2), (2, 1), (2, 0, 1, 3)),
    (1, 3, 6, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_depthwise_matches_float64(case: tuple, layout: str) -> None:
    n, c, h, w, kh, kw, strides, dil, pad = case
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    filt = RNG.standard_normal((c, 1, kh, kw)).astype(np.float32)
    bias = RNG.standard_normal(c).astype(np.float32)
    want = _conv_ref(x, filt, strides, dil, pad, c) + bias[None, :, None, None]
    want = _ref_act(want, native.ACT_CLAMP, 0.0, 6.0)
    if layout == "nhwc":
        xin, taps = np.ascontiguousarray(x.transpose(0, 2, 3, 1)), np.ascontiguousarray(filt[:, 0].transpose(1, 2, 0))
        out_shape = (n, want.shape[2], want.shape[3], c)
    else:
        xin, taps = x, np.ascontiguousarray(filt[:, 0])
        out_shape = want.shape
    got = native.depthwise(xin, taps, layout, strides, dil, (pad[0], pad[2]), out_shape, bias,
                           native.ACT_CLAMP, 0.0, 6.0)
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    _close(got, want, kh * kw)


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_im2col_product_is_the_convolution(case: tuple, layout: str) -> None:
    n, c, h, w, kh, kw, strides, dil, pad = case
    o = 6
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    filt = RNG.standard_normal((o, c, kh, kw)).astype(np.float32)
    want = _conv_ref(x, filt, strides, dil, pad, 1)
    oh, ow = want.shape[2:]
    if layout == "nhwc":
        cols = native.im2col_nhwc(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), kh, kw, strides, dil,
                                  (pad[0], pad[2]), oh, ow)
        wmat = np.ascontiguousarray(filt.transpose(2, 3, 1, 0).reshape(kh * kw * c, o))
        got = native.sgemm(cols, wmat).reshape(n, oh, ow, o).transpose(0, 3, 1, 2)
    else:
        got = np.empty(want.shape, np.float32)
        cols = np.empty((c * kh * kw, oh * ow), np.float32)
        wmat = np.ascontiguousarray(filt.reshape(o, c * kh * kw))
        for b in range(n):
            native.im2col_nchw(x[b], kh, kw, strides, dil, (pad[0], pad[2]), oh, ow, cols)
            got[b] = native.sgemm(wmat, cols).reshape(o, oh, ow)
    _close(got, want, c * kh * kw)


def test_switching_off_and_on() -> None:
    native.use_native(False)
    try:
        assert not native.available()
    finally:
        native.use_native(True)
    assert native.available()
