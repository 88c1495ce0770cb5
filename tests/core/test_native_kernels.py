"""The C kernels (py_core/kernels/native), host build of the same C source, against float64 NumPy formulas.

The cases live in py_core.testing.native_check; tests/pyodide/test_pyodide_native.py runs them on the wasm
build inside Pyodide.
"""

from __future__ import annotations

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
