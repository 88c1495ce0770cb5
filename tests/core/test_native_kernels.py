"""The C kernels (py_core/kernels/native), host build of the same C source, against float64 NumPy formulas.

The cases live in py_core.testing.native_check; tests/pyodide/test_pyodide_native.py runs them on the wasm
build inside Pyodide.
"""

from __future__ import annotations

import numpy as np
import pytest

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


def test_switching_off_and_on() -> None:
    native.use_native(False)
    try:
        assert not native.available()
    finally:
        native.use_native(True)
    assert native.available()
