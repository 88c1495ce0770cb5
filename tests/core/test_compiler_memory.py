"""Compiler pass: the memory plan (py_core/compiler/memory.py): release after last use, in-place writes
only into buffers nobody else can see, against the unoptimized graph."""

from __future__ import annotations

import numpy as np
from compiler_check import compare, const, only, ops_of

MEMORY = only(in_place=True)
F32 = {"dataType": "float32", "shape": [4, 6]}


def test_dying_intermediates_are_written_in_place() -> None:
    def make(b):
        x = b.input("x", F32)
        y = b.mul(x, x)  # fresh, read once by the add: add writes into it
        y = b.add(y, const(b, (6,)))
        y = b.relu(y)
        return {"y": b.sigmoid(b.sub(const(b, (4, 6), seed=2), y))}

    ops = ops_of(compare(make, MEMORY))
    assert ops == ["mul", "add[in-place]", "relu[in-place]", "sub[in-place]", "sigmoid[in-place]"]


def test_no_in_place_write_into_inputs_outputs_constants_or_shared_values() -> None:
    def make(b):
        x = b.input("x", F32)
        a = b.relu(x)  # input: never written
        s = b.add(a, a)
        keep = b.neg(s)  # s read twice: the first reader must not write into it
        view = b.reshape(s, [6, 4])  # an alias of s, alive after the add below
        t = b.add(s, const(b, (6,)))
        return {"a": a, "t": t, "keep": keep, "v": b.relu(view), "c": b.relu(const(b, (4, 6)))}

    exe = compare(make, MEMORY)
    assert ops_of(exe)[:3] == ["relu", "add", "neg"]
    assert not any("in-place" in op for op in ops_of(exe)[:5])


def test_values_are_released_after_their_last_reader() -> None:
    def make(b):
        x = b.input("x", F32)
        return {"y": b.relu(b.relu(b.relu(x)))}

    exe = compare(make, MEMORY)
    released = [len(s.release) for s in exe.steps]
    assert released == [0, 1, 1]  # the input stays (the caller owns it); each intermediate goes
    assert np.all(exe.run({"x": np.ones((4, 6), np.float32)})["y"] == 1)


def test_whole_compiler_on_a_small_network() -> None:
    from py_core.compiler import CompileOptions

    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 3, 12, 12]})
        y = b.clamp(b.conv2d(x, const(b, (8, 3, 3, 3)), padding=[1, 1, 1, 1], strides=[2, 2]), minValue=0,
                    maxValue=6)
        d = b.conv2d(y, const(b, (8, 1, 3, 3), seed=2), padding=[1, 1, 1, 1], groups=8, bias=const(b, (8,)))
        p = b.add(b.conv2d(b.relu(d), const(b, (8, 8, 1, 1), seed=3)), y)
        g = b.averagePool2d(p)
        return {"out": b.softmax(b.gemm(b.reshape(g, [1, 8]), const(b, (8, 10), seed=4)), axis=1)}

    exe = compare(make, CompileOptions(), rtol=1e-4)
    assert ops_of(exe) == ["conv2d[im2col]", "conv2d[depthwise]", "conv2d[gemm1x1]", "add[in-place]",
                           "averagePool2d", "reshape", "gemm[packed]", "softmax"]
