"""Compiler pass: weight pre-packing (py_core/compiler/pack.py + kernels.py) against the unoptimized graph:
1x1 convs as one product, im2col, depthwise taps, both layouts, every filter layout, strides, dilations."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_check import compare, const, only, ops_of

PACK = only(pack=True)
FILTER = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("filter_layout", list(FILTER))
@pytest.mark.parametrize("kind", ["1x1", "3x3", "3x3-wide", "strided", "depthwise", "depthwise-strided",
                                  "depthwise-dilated"])
def test_conv2d_packed(layout: str, filter_layout: str, kind: str) -> None:
    # 6 channels: the few-channel im2col path; 10: the channels-last one
    n, c, h, w = 2, 10 if kind.endswith("wide") else 6, 9, 8
    if kind == "depthwise" and layout == "nchw" and filter_layout == "oihw":
        c = 64  # the channels-last path of channels-first depthwise (the planes path below 64 channels)
    depthwise = kind.startswith("depthwise")
    o, groups = (c, c) if depthwise else (5, 1)
    k = 1 if kind == "1x1" else 3
    opts = {"inputLayout": layout, "filterLayout": filter_layout, "groups": groups}
    if kind != "1x1":
        opts.update(padding=[1, 2, 0, 1], dilations=[1, 2] if kind.endswith(("3x3", "dilated")) else [1, 1])
    if "strided" in kind:
        opts["strides"] = [2, 2]
    oihw = np.random.default_rng(3).standard_normal((o, c // groups, k, k)).astype(np.float32)
    filt = oihw.transpose(FILTER[filter_layout])

    def make(b):
        shape = [n, c, h, w] if layout == "nchw" else [n, h, w, c]
        x = b.input("x", {"dataType": "float32", "shape": shape})
        f = b.constant({"dataType": "float32", "shape": list(filt.shape)}, filt.copy())
        return {"y": b.conv2d(x, f, bias=const(b, (o,), seed=4), **opts)}

    exe = compare(make, PACK, rtol=1e-4)
    want = "conv2d[depthwise]" if depthwise else "conv2d[gemm1x1]" if kind == "1x1" else "conv2d[im2col]"
    assert ops_of(exe) == [want]


def test_grouped_and_runtime_filters_keep_the_reference_kernel() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 4, 5, 5]})
        f = b.input("f", {"dataType": "float32", "shape": [4, 4, 3, 3]})
        return {"g": b.conv2d(x, const(b, (4, 2, 3, 3)), groups=2), "r": b.conv2d(x, f)}

    assert ops_of(compare(make, PACK, rtol=1e-4)) == ["conv2d", "conv2d"]


@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_packed(a_t: bool, b_t: bool) -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [5, 3] if a_t else [3, 5]})
        w = const(b, (4, 5) if b_t else (5, 4))
        c = const(b, (3, 4), seed=2)
        return {"y": b.gemm(x, w, c=c, alpha=1.5, beta=-0.5, aTranspose=a_t, bTranspose=b_t)}

    assert ops_of(compare(make, PACK)) == ["gemm[packed]"]


def test_batched_matmul_packed() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [2, 3, 7, 5]})
        return {"y": b.matmul(x, const(b, (5, 6)))}

    assert ops_of(compare(make, PACK)) == ["matmul[packed]"]
