"""Compiler pass: layout switching (py_core/compiler/layout.py) against the unoptimized graph, and the layout
traits it reads."""

from __future__ import annotations

import pytest
from compiler_check import compare, const, only, ops_of

from py_core.bridge.limits import PREFERRED_INPUT_LAYOUT, op_support_limits
from py_core.kernels import TRAITS, preferred_layout

LAYOUT = only(layout=True)
ALL = only(fold=True, simplify=True, layout=True, fuse=True, pack=True, in_place=True)
NHWC = {"dataType": "float32", "shape": [1, 9, 8, 5]}
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def wrapped(b, layer, name: str = "x", desc=None):
    """x (nhwc) -> transpose -> layer (nchw) -> transpose back: what a converter emits around each layer."""
    x = b.input(name, desc or NHWC)
    return b.transpose(layer(b.transpose(x, permutation=TO_NCHW)), permutation=TO_NHWC)


LAYERS = {
    "conv2d": lambda b: lambda t: b.conv2d(t, const(b, (6, 5, 3, 3)), bias=const(b, (6,), seed=2),
                                           padding=[1, 0, 2, 1], strides=[2, 1], inputLayout="nchw"),
    "depthwise": lambda b: lambda t: b.conv2d(t, const(b, (5, 1, 3, 3)), padding=[1, 1, 1, 1], groups=5),
    "convTranspose2d": lambda b: lambda t: b.convTranspose2d(t, const(b, (5, 4, 3, 3)), strides=[2, 2],
                                                             padding=[1, 1, 0, 0], inputLayout="nchw"),
    "maxPool2d": lambda b: lambda t: b.maxPool2d(t, windowDimensions=[3, 2], strides=[2, 2], layout="nchw"),
    "averagePool2d": lambda b: lambda t: b.averagePool2d(t, windowDimensions=[3, 3], padding=[1, 1, 1, 1]),
    "l2Pool2d": lambda b: lambda t: b.l2Pool2d(t),  # global
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_transposes_around_a_layer_disappear(layer: str) -> None:
    def make(b):
        return {"y": b.relu(wrapped(b, LAYERS[layer](b)))}

    exe = compare(make, LAYOUT, rtol=1e-4, atol=1e-4)
    assert "transpose" not in ops_of(exe), ops_of(exe)


def test_activations_between_the_layer_and_its_back_transpose_come_along() -> None:
    def make(b):
        def layer(t):
            y = b.conv2d(t, const(b, (6, 5, 3, 3)), padding=[1, 1, 1, 1])
            return b.sigmoid(b.clamp(y, minValue=-1.0, maxValue=1.0))
        return {"y": b.add(wrapped(b, layer), const(b, (1, 9, 8, 6), seed=3))}

    exe = compare(make, LAYOUT, rtol=1e-4, atol=1e-4)
    assert ops_of(exe) == ["conv2d", "clamp", "sigmoid", "add"]
    exe = compare(make, ALL, rtol=1e-4, atol=1e-4)  # and then fuse and pack as usual
    assert "transpose" not in ops_of(exe) and ops_of(exe)[0].startswith("conv2d[")


def test_converter_blocks_lose_every_transpose() -> None:
    def make(b):
        y = b.input("x", {"dataType": "float32", "shape": [1, 10, 10, 8]})
        for i in range(3):  # transpose, conv, relu6, transpose back, residual add in nhwc
            c = b.conv2d(b.transpose(y, permutation=TO_NCHW), const(b, (8, 8, 3, 3), seed=i), padding=[1, 1, 1, 1])
            y = b.add(b.transpose(b.clamp(c, minValue=0.0, maxValue=6.0), permutation=TO_NHWC), y)
        return {"y": y}

    exe = compare(make, ALL, rtol=1e-4, atol=1e-4)
    assert "transpose" not in ops_of(exe) and len(ops_of(exe)) == 6


def test_the_switched_layer_may_be_a_graph_output_and_packs() -> None:
    def make(b):
        return {"y": wrapped(b, LAYERS["conv2d"](b))}

    exe = compare(make, ALL, rtol=1e-4, atol=1e-4)
    assert [op.split("[")[0] for op in ops_of(exe)] == ["conv2d"]


def test_nhwc_layers_in_a_channels_first_graph_switch_too() -> None:
    nchw = {"dataType": "float32", "shape": [1, 5, 9, 8]}

    def make(b):
        x = b.input("x", nchw)
        t = b.transpose(x, permutation=TO_NHWC)
        y = b.conv2d(t, const(b, (6, 3, 3, 5)), padding=[1, 1, 1, 1], inputLayout="nhwc", filterLayout="ohwi")
        return {"y": b.sigmoid(b.transpose(y, permutation=TO_NCHW))}

    exe = compare(make, LAYOUT, rtol=1e-4, atol=1e-4)
    assert ops_of(exe) == ["conv2d", "sigmoid"]


def test_a_chain_loses_every_transpose_after_simplify() -> None:
    def make(b):
        y = wrapped(b, LAYERS["conv2d"](b))
        z = b.transpose(b.relu(b.transpose(y, permutation=TO_NCHW)), permutation=TO_NHWC)  # relu in nchw
        return {"y": b.transpose(b.maxPool2d(b.transpose(z, permutation=TO_NCHW)), permutation=TO_NHWC)}

    exe = compare(make, only(simplify=True, layout=True), rtol=1e-4, atol=1e-4)
    # the relu's pair stays (relu has no layout), the conv's and the pool's go
    assert ops_of(exe).count("transpose") == 2 and ops_of(exe).count("conv2d") == 1


def test_transposes_something_else_reads_stay() -> None:
    def make(b):
        x = b.input("x", NHWC)
        t = b.transpose(x, permutation=TO_NCHW)
        y = b.maxPool2d(t, windowDimensions=[2, 2], layout="nchw")
        back = b.transpose(y, permutation=TO_NHWC)
        return {"y": back, "t": b.relu(t)}  # the front transpose is read by the relu too

    exe = compare(make, LAYOUT)
    assert ops_of(exe).count("transpose") == 1


@pytest.mark.parametrize("case", ["other reader", "graph output", "wrong permutation", "no layout",
                                  "activation read twice", "activation output", "binary between"])
def test_no_switch(case: str) -> None:
    def make(b):
        x = b.input("x", NHWC)
        t = b.transpose(x, permutation=TO_NCHW)
        if case == "no layout":
            y = b.relu(t)
        elif case == "wrong permutation":
            t = b.transpose(x, permutation=[0, 3, 2, 1])
            y = b.averagePool2d(t, windowDimensions=[2, 2], layout="nchw")
        else:
            y = b.averagePool2d(t, windowDimensions=[2, 2], layout="nchw")
        if case in ("activation read twice", "activation output"):
            y = b.relu(y)
        elif case == "binary between":  # a channel bias in nchw: not layout-free
            y = b.add(y, const(b, (1, 5, 1, 1)))
        out = {"y": b.transpose(y, permutation=TO_NHWC)}
        if case == "activation read twice":
            out["z"] = b.sigmoid(y)
        elif case == "activation output":
            out["z"] = y
        if case == "other reader":
            out["z"] = b.sigmoid(y)
        elif case == "graph output":
            out["z"] = y
        return out

    exe = compare(make, LAYOUT)
    assert ops_of(exe).count("transpose") == 2


def test_layout_traits_are_complete() -> None:
    for op, t in TRAITS.items():
        assert bool(t.layouts) == bool(t.layout_option), op
        assert set(t.layouts) <= {"nchw", "nhwc"} and len(set(t.layouts)) == len(t.layouts), op


def test_preferred_input_layout_is_the_one_most_layout_traits_put_first() -> None:
    firsts = [t.layouts[0] for t in TRAITS.values() if t.layouts]
    assert len(firsts) >= 5 and preferred_layout() == max(set(firsts), key=firsts.count)
    assert PREFERRED_INPUT_LAYOUT == preferred_layout() == op_support_limits()["preferredInputLayout"]
