"""C kernel bounds in a real browser: the depthwise conv2d whose padding and dilations lie near 2^31 (and its
2^31 / 2^32 - 1 neighbours) computes the definition's values through the public API, on the worker's wasm C
kernels (constant filter: the pre-packed kernel) and on the NumPy reference (filter an input).  The C kernels
index in 64 bits: with 32-bit indices these cases copy worker heap bytes into the output or trap the worker.  Shares the one-op runner of pages.py and the booted page."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pages import RUN_ONE_OP_JS as RUN_JS

from py_core.testing import native_check, reference

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("constant_filter", [True, False], ids=["filter-constant", "filter-input"])
@pytest.mark.parametrize("index", [0, 1, 3], ids=["2^31-1", "2^31", "2^32-1"])
def test_edge_geometry_computes_the_definition(webnn_page: Any, index: int, constant_filter: bool) -> None:
    n, c, h, w, kh, kw, strides, dil, pad = native_check.EDGE_CASES[index]
    rng = np.random.default_rng(index)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    filt = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    bias = np.full(c, 0.5, np.float32)
    got = webnn_page.evaluate(RUN_JS, {
        "op": "conv2d", "x": x.ravel().tolist(), "xShape": list(x.shape), "w": filt.ravel().tolist(),
        "wShape": list(filt.shape), "bias": bias.tolist(), "constantFilter": constant_filter, "label": "edge",
        "options": {"padding": list(pad), "strides": list(strides), "dilations": list(dil), "groups": c}})
    assert "error" not in got, got
    want = reference.conv2d(x, filt, bias, pad, strides, dil, c, native_check.conv_out(native_check.EDGE_CASES[index]))
    assert got["shape"] == list(want.shape)
    np.testing.assert_allclose(np.array(got["y"]).reshape(want.shape), want, rtol=1e-5, atol=1e-5)
