"""Pooling and resample2d against a float64 spec-text reference, torch.nn.functional and onnxruntime Resize.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-pool2d"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_close_terms, assert_type_error
from onnx import TensorProto, helper

from py_core.builder import GraphBuilder
from py_core.runtime.executor import check_inputs, prepare

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
INTS = [np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64, np.int8, np.uint8)]
POOLS = {"average": "averagePool2d", "l2": "l2Pool2d", "max": "maxPool2d"}


def run(op: str, x: np.ndarray, label: str = "", **options) -> np.ndarray:
    """Build input -> op -> output and run it through the executor (which checks dtype and shape)."""
    b = GraphBuilder()
    inp = b.input("x", {"dataType": x.dtype.name, "shape": list(x.shape)})
    exe = prepare(b.build({"y": getattr(b, op)(inp, label=label, **options)}))
    check_inputs(exe, {"x": x})
    return exe.run({"x": x})["y"]


def taps(o: int, stride: int, pad: int, window: int, dilation: int, size: int) -> list[int]:
    """The input indices one output position's window reads along one axis (padding dropped)."""
    return [r for r in (o * stride - pad + i * dilation for i in range(window)) if 0 <= r < size]


def reference_pool(kind, x, window, padding, strides, dilations, out_sizes):
    """The spec text, one output position at a time (NCHW): float64, or exact integers for max."""
    n, c, h, w = x.shape
    exact = kind == "max" and x.dtype.kind in "iu"
    src = x if exact else x.astype(np.float64)
    empty = np.iinfo(x.dtype).min if exact else (-np.inf if kind == "max" else 0.0)
    ref = np.empty((n, c, *out_sizes), dtype=src.dtype)
    mag = np.zeros((n, c, *out_sizes))
    for oh in range(out_sizes[0]):
        rows = taps(oh, strides[0], padding[0], window[0], dilations[0], h)
        for ow in range(out_sizes[1]):
            cols = taps(ow, strides[1], padding[2], window[1], dilations[1], w)
            vals = src[:, :, rows][:, :, :, cols].reshape(n, c, -1)
            if vals.shape[-1] == 0:  # a window entirely in padding: 0 (average, l2) or the lowest value (max)
                ref[:, :, oh, ow] = empty
            elif kind == "max":
                ref[:, :, oh, ow] = vals.max(axis=-1)
            elif kind == "average":
                ref[:, :, oh, ow] = vals.mean(axis=-1)
                mag[:, :, oh, ow] = np.abs(vals).mean(axis=-1)
            else:
                ref[:, :, oh, ow] = mag[:, :, oh, ow] = np.sqrt((vals * vals).sum(axis=-1))
    return ref, mag


def random_pool_case(seed: int, kind: str):
    rng = np.random.default_rng(seed)
    dtype = rng.choice([F32, F16] + (INTS if kind == "max" else []))
    k = [int(v) for v in rng.integers(1, 4, size=2)]
    d = [int(v) for v in rng.integers(1, 3, size=2)]
    s = [int(v) for v in rng.integers(1, 4, size=2)]
    pad = [int(v) for v in rng.integers(0, 3, size=4)]
    hw = [int(rng.integers((k[i] - 1) * d[i] + 1, (k[i] - 1) * d[i] + 7)) for i in range(2)]
    options = dict(windowDimensions=k, padding=pad, strides=s, dilations=d)
    if rng.random() < 0.1:  # global pooling: window defaults to the spatial size
        options = dict(strides=s) if rng.random() < 0.5 else {}
        k, d, pad = hw, [1, 1], [0, 0, 0, 0]
    spans = [hw[i] - (k[i] - 1) * d[i] - 1 + pad[2 * i] + pad[2 * i + 1] for i in range(2)]
    floor = [spans[i] // s[i] + 1 for i in range(2)]
    ceil = [-(-spans[i] // s[i]) + 1 for i in range(2)]
    pick = rng.integers(0, 3)
    if pick == 0:
        out = floor
    elif pick == 1:
        options["outputShapeRounding"], out = "ceil", ceil
    else:
        out = ceil if rng.random() < 0.5 else floor
        options["outputSizes"] = out
        options["outputShapeRounding"] = str(rng.choice(["floor", "ceil"]))  # ignored when outputSizes is given
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *hw)
    if dtype.kind == "f":
        x = rng.uniform(-5, 5, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return x, options, (k, pad, s, d, out), str(rng.choice(["nchw", "nhwc"]))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("kind", list(POOLS))
def test_pool_random(kind, seed):
    x, options, (k, pad, s, d, out), layout = random_pool_case(seed + 100 * len(kind), kind)
    xin = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    got = run(POOLS[kind], xin, layout=layout, **options)
    if layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    ref, mag = reference_pool(kind, x, k, pad, s, d, out)
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref)  # integer max pooling is exact
    else:
        assert_close_terms(got, ref, mag, x.dtype, k[0] * k[1])


@pytest.mark.parametrize("dtype", [F32, F16])
def test_pools_against_torch(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 9, 8)).astype(dtype)
    xt = torch.from_numpy(x.astype(np.float64))
    # torch's ceil mode drops windows that start in the end padding; these shapes keep every window
    cases = [
        ("averagePool2d", dict(windowDimensions=[3, 3], padding=[1, 1, 1, 1], strides=[2, 2]),
         F.avg_pool2d(xt, 3, 2, 1, count_include_pad=False)),
        ("averagePool2d", dict(windowDimensions=[2, 3], strides=[2, 2], outputShapeRounding="ceil"),
         F.avg_pool2d(xt, (2, 3), 2, ceil_mode=True, count_include_pad=False)),
        ("maxPool2d", dict(windowDimensions=[3, 2], padding=[1, 1, 1, 1], strides=[2, 1],
                           dilations=[2, 3]),
         F.max_pool2d(xt, (3, 2), (2, 1), 1, dilation=(2, 3))),
        ("maxPool2d", dict(windowDimensions=[2, 2], strides=[2, 3], outputShapeRounding="ceil"),
         F.max_pool2d(xt, 2, (2, 3), ceil_mode=True)),
        ("l2Pool2d", dict(windowDimensions=[3, 2], strides=[1, 2]), F.lp_pool2d(xt, 2, (3, 2), (1, 2))),
        ("averagePool2d", {}, xt.mean(dim=(2, 3), keepdim=True)),
        ("maxPool2d", {}, xt.amax(dim=(2, 3), keepdim=True)),
    ]
    for op, options, want in cases:
        got = run(op, x, **options)
        rtol = 2e-3 if dtype == F16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want.numpy(), rtol=rtol, atol=rtol, err_msg=op)


def test_pool_special_values():
    x = np.array([[np.nan, 1, 2, 3], [np.inf, 0, -1, -2], [-np.inf, 5, 6, 7], [1, 2, 3, 4]], F32)[None, None]
    got = run("maxPool2d", x, windowDimensions=[2, 2], strides=[2, 2])
    assert np.isnan(got[0, 0, 0, 0])
    np.testing.assert_array_equal(got.ravel()[1:], [3, 5, 7])
    got = run("averagePool2d", x, windowDimensions=[2, 2], strides=[2, 2])
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 0, 1] == 0.5 and got[0, 0, 1, 0] == -np.inf
    # float16 sums in float32: 4 x 60000 averages to 60000 instead of overflowing, L2 of 300s stays finite
    big = np.full((1, 1, 2, 2), 60000, F16)
    assert run("averagePool2d", big).item() == 60000
    assert run("l2Pool2d", np.full((1, 1, 2, 2), 300, F16)).item() == 600


def test_pool_window_past_the_input():
    """ceil rounding can start a window in (or past) the end padding: it pools only the input taps."""
    x = np.arange(1, 6, dtype=F32).reshape(1, 1, 1, 5)
    got = run("averagePool2d", x, windowDimensions=[1, 2], padding=[0, 0, 0, 2], strides=[1, 3],
              outputShapeRounding="ceil")
    np.testing.assert_array_equal(got.ravel(), [1.5, 4.5, 0.0])  # [1, 2], [4, 5], then padding only
    got = run("maxPool2d", x, windowDimensions=[1, 2], padding=[0, 0, 0, 2], strides=[1, 3],
              outputShapeRounding="ceil")
    np.testing.assert_array_equal(got.ravel(), [2, 5, -np.inf])


# ------------------------------------------------------------------------------------------------ resample2d

def onnx_resize_nearest(x: np.ndarray, sizes: list[int]) -> np.ndarray:
    """onnxruntime Resize: half_pixel coordinates, nearest ties rounded down (the spec's ceil(c - 0.5))."""
    node = helper.make_node("Resize", ["X", "", "", "S"], ["Y"], mode="nearest",
                            coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor")
    graph = helper.make_graph(
        [node], "resize", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(sizes))],
        initializer=[helper.make_tensor("S", TensorProto.INT64, [4], sizes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x.astype(F32)})[0]


def nearest_formula(x: np.ndarray, axes, sizes) -> np.ndarray:
    """The spec's nearest-neighbor text in float64: ceil(clamp((o + 0.5) / scale - 0.5) - 0.5)."""
    for axis, out in zip(axes, sizes, strict=True):
        n = x.shape[axis]
        coord = np.clip((np.arange(out) + 0.5) / (out / n) - 0.5, 0, n - 1)
        x = x.take(np.ceil(coord - 0.5).astype(int), axis=axis)
    return x


@pytest.mark.parametrize("seed", range(24))
def test_resample2d_random(seed):
    rng = np.random.default_rng(300 + seed)
    dtype = F16 if seed % 3 == 0 else F32
    mode = "linear" if seed % 2 else "nearest-neighbor"
    shape = [int(v) for v in rng.integers(1, 7, size=4)]
    axes = [int(a) for a in rng.choice(4, size=2, replace=False)] if seed % 4 == 3 else [2, 3]
    options: dict = {"mode": mode}
    if seed % 4 != 3:
        options.pop("mode") if mode == "nearest-neighbor" and seed % 8 == 0 else None
    if rng.random() < 0.5:
        scales = [float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0, 0.75])) for _ in range(2)]
        sizes = [int(np.floor(shape[a] * np.float32(s))) for a, s in zip(axes, scales, strict=True)]
        if min(sizes) < 1:
            scales, sizes = [2.0, 2.0], [shape[a] * 2 for a in axes]
        options["scales"] = scales
    else:
        sizes = [int(v) for v in rng.integers(1, 11, size=2)]
        options["sizes"] = sizes
    if axes != [2, 3] or rng.random() < 0.3:
        options["axes"] = axes
    x = rng.uniform(-10, 10, shape).astype(dtype)
    got = run("resample2d", x, **options)
    # move the two axes last (in order) so torch / onnxruntime see them as [H, W]
    rest = [a for a in range(4) if a not in axes]
    perm = rest + axes
    inv = list(np.argsort(perm))
    xt = x.transpose(perm)
    out_shape = [*xt.shape[:2], *sizes]
    if mode == "linear":
        want = F.interpolate(torch.from_numpy(xt.astype(np.float64)), size=sizes, mode="bilinear",
                             align_corners=False).numpy()
        mag = F.interpolate(torch.from_numpy(np.abs(xt).astype(np.float64)), size=sizes, mode="bilinear",
                            align_corners=False).numpy()
        assert_close_terms(got, want.transpose(inv), mag.transpose(inv), dtype, 4)
    else:
        want = onnx_resize_nearest(xt, out_shape).transpose(inv)
        np.testing.assert_array_equal(got, want.astype(dtype))
        np.testing.assert_array_equal(got, nearest_formula(x, axes, sizes))


def test_resample2d_wpt_linear_and_ties():
    """WPT resample2d.https.any.js (BSD-3-Clause, W3C web-platform-tests): linear upsample x2."""
    x = np.array([59.92947006225586, 41.98918914794922, 66.39534759521484, 90.7006607055664,
                  86.95105743408203, 79.10005187988281], F32).reshape(1, 1, 2, 3)
    want = [59.92947006225586, 55.444400787353516, 46.47425842285156, 48.090728759765625, 60.29380798339844,
            66.39534759521484, 67.62226867675781, 64.02411651611328, 56.82780838012695, 57.31512451171875,
            65.48605346679688, 69.57152557373047, 83.00786590576172, 81.18354797363281, 77.534912109375,
            75.76390838623047, 75.87055206298828, 75.92387390136719, 90.7006607055664, 89.76325988769531,
            87.88845825195312, 84.9883041381836, 81.06280517578125, 79.10005187988281]
    got = run("resample2d", x, mode="linear", scales=[2.0, 2.0])
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-5)
    got = run("resample2d", x.transpose(3, 2, 0, 1).copy(), sizes=[6, 4], axes=[1, 0])
    assert got.shape == (4, 6, 1, 1)
    # downsampling by 2 puts every source coordinate on a tie: the spec's ceil(c - 0.5) picks the lower pixel
    y = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(run("resample2d", y, scales=[0.5, 0.5]).ravel(), [0, 2, 8, 10])
    # scales are floats: 0.7 is 0.699999988 in float32, so 10 * 0.7 floors to 6
    assert run("resample2d", np.zeros((1, 1, 10, 10), F32), scales=[0.7, 1.0]).shape == (1, 1, 6, 10)


def test_resample2d_nearest_tie_follows_the_draft():
    """[10, 20] to 5 columns: output column 2 maps to source coordinate 0.5 exactly.  The draft's ceil(c - 0.5)
    takes column 0 ([10, 10, 10, 20, 20]); Chromium 153 rounds halves up ([10, 10, 20, 20, 20]).  WPT's
    nearest-neighbor vectors are all at scale 2, where no coordinate is a tie and both rules agree (checked
    here too), so the draft decides; docs/compatibility.md has the row."""
    x = np.array([10, 20], F32).reshape(1, 1, 1, 2)
    np.testing.assert_array_equal(run("resample2d", x, sizes=[1, 5]).ravel(), [10, 10, 10, 20, 20])
    np.testing.assert_array_equal(run("resample2d", x.reshape(1, 1, 2, 1), sizes=[5, 1]).ravel(),
                                  [10, 10, 10, 20, 20])
    wpt = np.arange(6, dtype=F32).reshape(1, 1, 2, 3)
    c = np.arange(6)
    half_up = np.minimum(np.floor((c + 0.5) / 2), 2).astype(int)  # floor(c + 0.5) on the source coordinate
    np.testing.assert_array_equal(run("resample2d", wpt, sizes=[4, 6])[0, 0, 0], wpt[0, 0, 0, half_up])


# ------------------------------------------------------------------------------------------------ validation

def d(shape, dtype="float32"):
    return {"dataType": dtype, "shape": list(shape)}


ERRORS = [
    ("averagePool2d", d([1, 5, 5]), {}, "rank 3"),
    ("averagePool2d", d([1, 2, 3, 3], "int64"), {}, "data type int64"),
    ("l2Pool2d", d([1, 2, 4, 4], "uint8"), {}, "data type uint8"),
    ("maxPool2d", d([1, 2, 5, 5]), {"windowDimensions": [1, 1, 1, 1]}, "windowDimensions [1, 1, 1, 1]"),
    ("maxPool2d", d([1, 2, 5, 5]), {"windowDimensions": [0, 2]}, "greater than 0"),
    ("maxPool2d", d([1, 2, 5, 5]), {"windowDimensions": [8, 2]}, "not valid"),
    ("maxPool2d", d([1, 2, 5, 5]), {"windowDimensions": [3, 6]}, "not valid"),
    ("maxPool2d", d([1, 2, 5, 5]), {"padding": [2, 2]}, "padding [2, 2]"),
    ("maxPool2d", d([1, 2, 5, 5]), {"strides": [2]}, "strides [2]"),
    ("maxPool2d", d([1, 2, 5, 5]), {"strides": [0, 2]}, "strides [0, 2]"),
    ("maxPool2d", d([1, 2, 5, 5]), {"dilations": [1, 1, 2]}, "dilations [1, 1, 2]"),
    ("maxPool2d", d([1, 2, 5, 5]), {"dilations": [1, 0]}, "dilations [1, 0]"),
    ("averagePool2d", d([1, 2, 5, 5]),
     {"windowDimensions": [2, 2], "padding": [2, 2, 2, 2], "strides": [2, 2], "outputSizes": [3, 3]},
     "either [4, 4] (floor) or [5, 5] (ceil)"),
    ("averagePool2d", d([1, 2, 5, 5]), {"windowDimensions": [2, 2], "outputSizes": [1, 2, 4, 4]},
     "2 values"),
    ("l2Pool2d", d([1, 2, 5, 5]), {"windowDimensions": [2, 2], "outputSizes": [0, 4]}, "outputSizes [0, 4]"),
    ("l2Pool2d", d([1, 2, 5, 5]), {"layout": "nwhc"}, "not a valid value"),
    ("l2Pool2d", d([1, 2, 5, 5]), {"outputShapeRounding": "round"}, "not a valid value"),
    ("maxPool2d", d([1, 3, 5, 5]), {"padding": [2**32 - 1, 2**32 - 1, 0, 0]}, "output dimension"),
    ("resample2d", d([2, 4]), {}, "rank 2"),
    ("resample2d", d([1, 1, 2, 4], "int32"), {}, "data type int32"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [1.0, 1.0, 2.0, 2.0]}, "2 values"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [1.0, -2.0]}, "greater than 0"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [0, 2.0]}, "greater than 0"),
    ("resample2d", d([1, 1, 2, 4]), {"sizes": [1, 1, 4, 6]}, "sizes [1, 1, 4, 6]"),
    ("resample2d", d([1, 1, 2, 4]), {"sizes": [0, 1]}, "greater than 0"),
    ("resample2d", d([1, 1, 2, 4]), {"sizes": [2**32, 2**32]}, "unsigned long"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [2**32 - 1, 1]}, "output dimension"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [0.02, 0.8]}, "not a valid dimension"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [0.7, 0.1]}, "not a valid dimension"),
    ("resample2d", d([1, 1, 2, 4]), {"scales": [1e39, 1]}, "out of the float range"),
    ("resample2d", d([1, 1, 2, 4]), {"axes": [0, 1, 2]}, "axes [0, 1, 2]"),
    ("resample2d", d([1, 1, 2, 4]), {"axes": [3, 4]}, "out of range"),
    ("resample2d", d([1, 1, 2, 4]), {"axes": [0, 0]}, "duplicate"),
    ("resample2d", d([1, 1, 2, 4]), {"mode": "cubic"}, "not a valid value"),
]


@pytest.mark.parametrize("op, desc, options, fragment", ERRORS)
def test_validation_errors(op, desc, options, fragment):
    b = GraphBuilder()
    x = b.input("x", desc)
    assert_type_error(lambda: getattr(b, op)(x, label="pool_2d_xxx", **options), "pool_2d_xxx", op, fragment)


VALID = [  # WPT validation_tests/pooling.https.any.js and resample2d.https.any.js output shapes
    ([1, 3, 4, 4], {}, [1, 3, 1, 1]),
    ([1, 3, 4, 4], {"windowDimensions": [3, 3]}, [1, 3, 2, 2]),
    ([1, 3, 5, 5], {"windowDimensions": [5, 5], "padding": [2, 2, 2, 2]}, [1, 3, 5, 5]),
    ([1, 3, 7, 7], {"windowDimensions": [4, 4], "padding": [2, 1, 2, 1], "strides": [2, 2]}, [1, 3, 4, 4]),
    ([1, 3, 7, 7], {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputShapeRounding": "ceil"}, [1, 3, 4, 4]),
    ([1, 3, 7, 7], {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputShapeRounding": "ceil", "outputSizes": [3, 3]}, [1, 3, 3, 3]),
    ([1, 3, 7, 7], {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputSizes": [4, 4]}, [1, 3, 4, 4]),
    ([1, 5, 5, 2], {"windowDimensions": [3, 3], "layout": "nhwc"}, [1, 3, 3, 2]),
]


@pytest.mark.parametrize("shape, options, out", VALID)
def test_valid_pool_shapes(shape, options, out):
    b = GraphBuilder()
    for op in POOLS.values():
        x = b.input(f"x{op}", d(shape, "float16"))
        assert getattr(b, op)(x, **options).shape == out
    for dtype in ("int32", "uint32", "int8", "uint8", "int64", "uint64"):
        assert b.maxPool2d(b.input(f"i{dtype}", d([1, 3, 4, 4], dtype))).shape == [1, 3, 1, 1]
    r = b.input("r", d([1, 1, 2, 4]))
    assert b.resample2d(r, scales=[1.0, 2.0], axes=[0, 1]).shape == [1, 2, 2, 4]
    assert b.resample2d(r, scales=[2.0, 2.0], axes=[1, 2]).shape == [1, 2, 4, 4]
    assert b.resample2d(r, scales=[2.0, 2.0], sizes=[3, 6]).shape == [1, 1, 3, 6]
    assert b.resample2d(r, sizes=[3, 5], axes=[0, 2]).shape == [3, 1, 5, 4]
