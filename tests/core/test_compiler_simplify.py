"""Compiler pass: no-op removal (py_core/compiler/simplify.py) against the unoptimized graph."""

from __future__ import annotations

import numpy as np
from compiler_check import compare, only, ops_of

SIMPLIFY = only(simplify=True)
F32 = {"dataType": "float32", "shape": [2, 3, 4]}


def test_noops_disappear() -> None:
    def make(b):
        x = b.input("x", F32)
        y = b.identity(b.reshape(x, [2, 3, 4]))
        y = b.transpose(b.cast(y, "float32"), permutation=[0, 1, 2])
        y = b.slice(b.pad(y, [0, 0, 0], [0, 0, 0]), [0, 0, 0], [2, 3, 4])
        return {"y": b.relu(b.expand(y, [2, 3, 4]))}

    assert ops_of(compare(make, SIMPLIFY)) == ["relu"]


def test_reshape_and_transpose_chains_merge() -> None:
    def make(b):
        x = b.input("x", F32)
        r = b.reshape(b.reshape(b.relu(x), [6, 4]), [4, 6])
        t = b.transpose(b.transpose(b.relu(x), permutation=[1, 2, 0]), permutation=[2, 0, 1])
        return {"r": r, "t": b.relu(t)}

    exe = compare(make, SIMPLIFY)
    assert ops_of(exe).count("reshape") == 1 and "transpose" not in ops_of(exe)


def test_a_graph_output_that_would_be_the_input_itself_stays() -> None:
    def make(b):
        return {"y": b.identity(b.input("x", F32))}

    exe = compare(make, SIMPLIFY)
    x = np.ones((2, 3, 4), np.float32)
    assert exe.run({"x": x})["y"] is not x
