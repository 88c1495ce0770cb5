"""Compiler pass: bias/activation fusion (py_core/compiler/fuse.py, bound by pack.py) against the
unoptimized graph."""

from __future__ import annotations

import pytest
from compiler_check import compare, const, only, ops_of

FUSE = only(fuse=True, pack=True)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "hardSwish", "relu6", "leakyRelu"])
def test_conv_bias_activation_fuse(act: str) -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 5, 6, 3]})
        y = b.conv2d(x, const(b, (4, 3, 3, 3)), padding=[1, 1, 1, 1], inputLayout="nhwc", filterLayout="ohwi")
        y = b.add(y, const(b, (4,), seed=2))
        if act == "relu6":
            y = b.clamp(y, minValue=0, maxValue=6)
        elif act == "leakyRelu":
            y = b.leakyRelu(y, alpha=0.1)
        else:
            y = getattr(b, act)(y)
        return {"y": b.mul(const(b, (1, 1, 1, 4), seed=3), y)}

    assert len(compare(make, FUSE).steps) == 1


def test_gemm_and_matmul_fuse_and_a_shared_value_does_not() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [3, 5]})
        g = b.relu(b.gemm(x, const(b, (4, 5)), c=const(b, (4,), seed=2), bTranspose=True, alpha=0.5, beta=2))
        m = b.matmul(x, const(b, (5, 4), seed=3))  # read twice: nothing fuses into it
        return {"g": b.sub(g, const(b, (3, 4), seed=4)), "m": b.relu(m), "n": b.sigmoid(m)}

    assert len(compare(make, FUSE).steps) == 4


def test_sigmoid_keeps_tiny_values_where_exp_overflows() -> None:
    import numpy as np

    from py_core.kernels.activation import sigmoid_inplace

    x = np.array([-100.0, -88.5, -20.0, 0.0, 20.0, 100.0, np.inf, -np.inf, np.nan], np.float32)
    y = x.copy()
    sigmoid_inplace(y)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6)


def test_float16_chains_do_not_fuse() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float16", "shape": [3, 5]})
        return {"y": b.relu(b.matmul(x, const(b, (5, 4), dtype="float16")))}

    assert ops_of(compare(make, FUSE, rtol=1e-3, atol=1e-3)) == ["matmul", "relu"]


def test_fusion_without_packing_runs_the_epilogue_after_the_reference_kernel() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 3, 6, 6]})
        y = b.conv2d(x, const(b, (4, 3, 3, 3)), padding=[1, 1, 1, 1])
        y = b.mul(const(b, (1, 4, 1, 1), seed=2), b.add(y, const(b, (1, 4, 1, 1), seed=3)))
        return {"y": b.sigmoid(b.clamp(y, minValue=-1, maxValue=2))}

    assert ops_of(compare(make, only(fuse=True))) == ["conv2d[fused]"]


def test_a_computed_operand_or_a_growing_constant_ends_the_chain() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [3, 5]})
        z = b.input("z", {"dataType": "float32", "shape": [3, 4]})
        m = b.add(b.matmul(x, const(b, (5, 4))), z)  # z is not a constant: the add stays
        n = b.sub(const(b, (4,), seed=2), b.matmul(x, const(b, (5, 4), seed=3)))  # constant - y: not in place
        return {"m": m, "n": n}

    assert ops_of(compare(make, FUSE)) == ["matmul[packed]", "add", "matmul[packed]", "sub"]
