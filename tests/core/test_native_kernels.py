"""The C kernels (py_core/kernels/native), host build of the same C source, against float64 NumPy formulas.

The cases live in py_core.testing.native_check (the edge geometry near 2^31 and 2^32 included);
tests/pyodide/test_pyodide_wpt.py runs them on the wasm build inside Pyodide.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import wpt_dir

from py_core.kernels import native
from py_core.testing import native_check

pytestmark = pytest.mark.skipif(not native.available(), reason="C kernels not built (make build)")

CASES = list(native_check.cases())


@pytest.mark.parametrize("name,check", CASES, ids=[name for name, _ in CASES])
def test_kernel_matches_float64(name: str, check) -> None:  # type: ignore[no-untyped-def]
    err, tol = check()
    assert err <= tol, f"{name}: error {err:.3g} above {tol:.3g}"


def test_epilogue_keeps_nan_like_the_numpy_post_ops() -> None:
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.ones((2, 8), np.float32)
    got = native.sgemm(a, b, act=native.ACT_CLAMP, lo=0.0, hi=6.0)
    assert np.isnan(got).all()


@pytest.mark.parametrize("shape,axes,sizes", [((1, 9, 13, 16), (1, 2), (18, 26)), ((1, 6, 5, 7), (2, 3), (3, 11)),
                                              ((2, 4, 4, 3), (1, 2), (4, 9))])
def test_resample_is_bit_identical_to_the_numpy_kernel(shape: tuple[int, ...], axes: tuple[int, int],
                                                      sizes: tuple[int, int]) -> None:
    from py_core.kernels.pooling import resample2d

    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    x[0, 0, 0, 0], x[-1, -1, -1, -1] = np.inf, np.nan
    with np.errstate(invalid="ignore"):  # inf * 0 = NaN next to the inf, in both kernels alike
        fast = resample2d(x, mode="linear", sizes=sizes, axes=axes)
        native.use_native(False)
        try:
            slow = resample2d(x, mode="linear", sizes=sizes, axes=axes)
        finally:
            native.use_native(True)
    np.testing.assert_array_equal(fast, slow)


def test_wpt_passes_the_same_with_and_without_the_c_kernels() -> None:
    """The NumPy kernels stay conformant where the C kernels are not built: the same WPT pass list both ways."""
    from py_core.testing import wpt

    data = wpt_dir()
    with_c = {r.id for r in wpt.run_dir(data) if r.status == wpt.PASS}
    native.use_native(False)
    try:
        without = {r.id for r in wpt.run_dir(data) if r.status == wpt.PASS}
    finally:
        native.use_native(True)
    assert with_c == without
    assert len(with_c) > 1000


def test_sigmoid_inplace_on_a_strided_view_writes_only_the_view() -> None:
    base = np.random.default_rng(5).standard_normal((6, 8)).astype(np.float32) * 10
    want = base.copy()
    view = want[:, ::2]
    expected = 1 / (1 + np.exp(-view.astype(np.float64)))
    native.sigmoid_inplace(view)
    np.testing.assert_allclose(want[:, ::2], expected, rtol=1e-6)
    np.testing.assert_array_equal(want[:, 1::2], base[:, 1::2])


def test_switching_off_and_on() -> None:
    native.use_native(False)
    try:
        assert not native.available()
    finally:
        native.use_native(True)
    assert native.available()


# The NumPy path of the edge geometry, in one child process whose address space is capped at 3 GiB: a kernel
# that copied the input into its padding (16 GiB for the first case) fails here
# with a MemoryError instead of taking the machine's memory.
_NUMPY_CHILD = """
import json, sys
import numpy as np
from py_core.testing import native_check
out = {}
for i, case in enumerate(native_check.EDGE_CASES):
    for layout, kind in (("nchw", "depthwise"), ("nhwc", "im2col")):
        try:
            err, tol = native_check.edge_graph_case(np.random.default_rng(0), case, layout, kind, numpy_path=True)
            out[f"{i} {layout} {kind}"] = {"error": err, "tolerance": tol}
        except Exception as e:
            out[f"{i} {layout} {kind}"] = {"exception": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def numpy_edge_results() -> dict[str, dict[str, object]]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    proc = subprocess.run([sys.executable, "-c", _NUMPY_CHILD], capture_output=True, text=True, timeout=300,
                          preexec_fn=cap, cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


@pytest.mark.parametrize("index", range(len(native_check.EDGE_CASES)))
@pytest.mark.parametrize("layout,kind", [("nchw", "depthwise"), ("nhwc", "im2col")])
def test_edge_geometry_numpy_path_matches_the_definition(numpy_edge_results: dict[str, dict[str, object]],
                                                         index: int, layout: str, kind: str) -> None:
    out = numpy_edge_results[f"{index} {layout} {kind}"]
    assert "exception" not in out, out["exception"]
    assert out["error"] <= out["tolerance"], out


def test_conv_fits_accepts_every_valid_webnn_geometry_and_refuses_past_2_62() -> None:
    """Valid options are unsigned longs (< 2^32) and outputs are bounded by them: always in range.  Past 2^62 a
    coordinate could overflow int64 in C, and ctypes would wrap a value past 2^63 without a word."""
    u = 2**32 - 1
    # height: input u, window 2 dilated by u, stride u, padding [u, u] -> 2 rows; width: input 5, window 3
    # dilated by u, padding [u, u] -> 5 columns (the largest coordinates valid options can make)
    assert native.conv_fits((u, 5), (2, 3), (u, 1), (u, u), (u, u), (2, 5))
    assert not native.conv_fits((4, 4), (3, 3), (1, 1), (2**61, 1), (0, 0), (1, 1))
    assert not native.conv_fits((4, 4), (3, 3), (1, 1), (1, 1), (2**63, 0), (1, 1))
    assert not native.conv_fits((4, 4), (3, 3), (0, 1), (1, 1), (0, 0), (1, 1))


def test_the_wrappers_refuse_what_the_kernels_cannot_handle_in_bounds() -> None:
    x = np.zeros((1, 2, 5, 5), np.float32)
    taps = np.ones((2, 3, 3), np.float32)
    args = ((1, 1), (1, 1), (1, 1), (1, 2, 5, 5), None, native.ACT_NONE, 0.0, 0.0)
    assert native.depthwise(x, taps, "nchw", *args).shape == (1, 2, 5, 5)
    # a strided view: the kernel indexes it as contiguous
    with pytest.raises(native.NativeRangeError, match=r"^C kernel depthwise_nchw: refused before the call"):
        native.depthwise(np.zeros((1, 2, 5, 10), np.float32)[..., ::2], taps, "nchw", *args)
    # padding past 2^63: ctypes.c_int64 would wrap it negative
    with pytest.raises(native.NativeRangeError, match=r"^C kernel depthwise_nchw: refused before the call"):
        native.depthwise(x, taps, "nchw", (1, 1), (1, 1), (2**63, 1), *args[3:])
    # an output shape the input does not have
    with pytest.raises(native.NativeRangeError, match=r"^C kernel depthwise_nchw: refused before the call"):
        native.depthwise(x, taps, "nchw", (1, 1), (1, 1), (1, 1), (1, 3, 5, 5), None, native.ACT_NONE, 0.0, 0.0)
    # operands that do not chain
    with pytest.raises(native.NativeRangeError, match=r"^C kernel sgemm operands: refused"):
        native.sgemm(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(native.NativeRangeError):  # a packed B of another K
        native.sgemm_packed(np.ones((2, 3), np.float32), native.PackedB(np.ones((4, 5), np.float32)))
    tables = [np.array([0, 7], np.int32), np.array([1, 7], np.int32), np.ones(2, np.float32), np.zeros(2, np.float32)]
    # a source index past the input
    with pytest.raises(native.NativeRangeError, match=r"^C kernel resample_linear tables: refused"):
        native.resample_linear(np.zeros((1, 4, 4), np.float32), 1, tuple(tables), tuple(tables))


@pytest.mark.parametrize("n,k", [(1, 1), (15, 3), (16, 256), (17, 257), (300, 600), (4096, 64)])
def test_the_python_side_sizes_the_packing_buffers_as_the_c_file_does(n: int, k: int) -> None:
    assert native._LIB is not None
    assert native.sgemm_work_size(n, k) == native._LIB.wk_sgemm_work(n, k)
    assert native.packed_b_size(n, k) == native._LIB.wk_packed_b_size(n, k)
    assert native.depthwise_work_size(3, 3, (2, 1), (1, 1), n, k) == native._LIB.wk_depthwise_nchw_work(n, k, 2, 1)


def test_packed_conv2d_keeps_numpy_when_the_geometry_does_not_fit() -> None:
    """The one check where the kernel is chosen: out of range, the NumPy kernel runs (never the C call)."""
    from py_core.compiler.kernels import PackedConv2d
    from py_core.kernels.convolution import conv2d_nhwc
    from py_core.kernels.matrix import matmul2d

    w = np.ones((3, 3, 1, 2), np.float32)
    common = {"padding": [1, 1, 1, 1], "strides": [1, 1], "groups": 2, "layout": "nchw", "in_shape": (1, 2, 4, 4),
              "out_shape": (1, 2, 4, 4), "reference": conv2d_nhwc, "product": matmul2d}
    assert PackedConv2d(w, None, dilations=[1, 1], **common).native_fits
    # not a valid WebNN dilation (> 2^32 - 1): only reachable from Python, and refused for the C kernels
    assert not PackedConv2d(w, None, dilations=[2**62, 1], **common).native_fits


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_depthwise_3x3_path_keeps_an_infinite_tap_out_of_the_padding(strides: tuple[int, int]) -> None:
    """The 3x3 path multiplies the zero padding by the taps: a plane with an infinite tap keeps the loop that
    skips taps outside the input, so the result is the reference's (inf), not 0 * inf = NaN."""
    from py_core.kernels.convolution import conv2d

    rng = np.random.default_rng(3)
    x = rng.random((1, 2, 9, 12), dtype=np.float32) + 0.5
    w = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = np.inf
    want = conv2d(x, w, padding=[1, 1, 1, 1], strides=list(strides), dilations=[1, 1], groups=2,
                  inputLayout="nchw", filterLayout="oihw")
    got = native.depthwise(x, np.ascontiguousarray(w[:, 0]), "nchw", strides, (1, 1), (1, 1), want.shape, None,
                           native.ACT_NONE, 0.0, 0.0)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("s,h,w", [(1, 3, 5), (1, 4, 6), (1, 7, 7), (1, 2, 8), (1, 3, 9), (1, 7, 12), (1, 8, 13),
                                   (1, 9, 56), (2, 2, 8), (2, 4, 10), (2, 6, 14), (2, 8, 16), (2, 10, 34),
                                   (2, 12, 112)])
def test_depthwise_3x3_read_in_place_is_bit_identical_to_the_padded_copy(s: int, h: int, w: int) -> None:
    """Stride 1 with one row and column of padding on each side, and stride 2 with one before on even sizes, read
    the input in place (wk_depthwise_nchw's `same` and `half` paths); the same input padded beforehand takes the
    padded-copy path: the same products, zeros, NaN and infinities included, in the same order, so the same bits."""
    rng = np.random.default_rng(s * 10000 + h * 100 + w)
    x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
    x[0, 0, 0, 0], x[0, 1, h - 1, w - 1], x[0, 2, h // 2, 0], x[0, 2, 1, 1] = np.nan, np.inf, -0.0, -np.inf
    taps = rng.standard_normal((3, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    args = (native.ACT_CLAMP, -0.5, 6.0)
    oh, ow = h // s, w // s
    got = native.depthwise(x, taps, "nchw", (s, s), (1, 1), (1, 1), (1, 3, oh, ow), bias, *args,
                           work=np.full(native.depthwise_work_size(3, 3, (s, s), (1, 1), oh, ow), np.nan, np.float32))
    after = 1 if s == 1 else 0
    padded = np.pad(x, ((0, 0), (0, 0), (1, after), (1, after)))
    want = native.depthwise(padded, taps, "nchw", (s, s), (1, 1), (0, 0), (1, 3, oh, ow), bias, *args)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_relaxed_build_is_chosen_by_the_switch_and_never_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """PYODIDE_WEBNN_RELAXED=0 keeps the plain build; CPython always loads the host build (no relaxed one)."""
    monkeypatch.setenv("PYODIDE_WEBNN_RELAXED", "0")
    assert not native._relaxed_wanted()
    monkeypatch.setenv("PYODIDE_WEBNN_RELAXED", "1")
    assert native._relaxed_wanted()
    monkeypatch.delenv("PYODIDE_WEBNN_RELAXED")
    assert native._relaxed_wanted()
    native.use_native(True)
    try:
        assert native.LOADED_FILE == native.LIB_FILE
    finally:
        native.use_native(True)
