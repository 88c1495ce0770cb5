"""conv2d and convTranspose2d against torch.nn.functional in float64, plus the spec's validation errors.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch.nn.functional as F
from helpers import assert_close_terms, assert_type_error, run_op, t64, wpt_json

from py_core.builder import GraphBuilder, graph_from_json
from py_core.errors import OperationError
from py_core.runtime.executor import prepare

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)

# logical NCHW / OIHW (conv2d) or IOHW (convTranspose2d) -> each layout
INPUT_FROM_NCHW = {"nchw": (0, 1, 2, 3), "nhwc": (0, 2, 3, 1)}
CONV_FILTER_FROM_OIHW = {
    "oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}
TCONV_FILTER_FROM_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def torch_conv2d(x, w, b, padding, strides, dilations, groups):
    """Reference (NCHW, OIHW) and its magnitude (the same conv over |x|, |w|, |b|)."""
    top, bottom, left, right = padding
    outs = []
    for fx in (lambda a: a, np.abs):
        xt = F.pad(t64(fx(x)), (left, right, top, bottom))
        bt = None if b is None else t64(fx(b))
        outs.append(F.conv2d(xt, t64(fx(w)), bt, stride=strides, dilation=dilations, groups=groups).numpy())
    return outs


def torch_conv_transpose2d(x, w, b, padding, strides, dilations, groups, out_sizes):
    """Reference (NCHW, IOHW): torch's full (unpadded) transposed conv, cropped/extended to out_sizes."""
    top, _, left, _ = padding
    outs = []
    for fx in (lambda a: a, np.abs):
        full = F.conv_transpose2d(t64(fx(x)), t64(fx(w)), None, stride=strides, dilation=dilations,
                                  groups=groups).numpy()
        n, c, fh, fw = full.shape
        big = np.zeros((n, c, max(fh, top + out_sizes[0]), max(fw, left + out_sizes[1])))
        big[:, :, :fh, :fw] = full
        y = big[:, :, top:top + out_sizes[0], left:left + out_sizes[1]]
        outs.append(y if b is None else y + fx(b)[None, :, None, None])
    return outs


def random_conv_case(seed: int, transpose: bool) -> dict:
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 1, 2, 3]))
    depthwise = not transpose and rng.random() < 0.25
    cin_g = 1 if depthwise else int(rng.integers(1, 4))
    cout_g = int(rng.integers(1, 4))
    if depthwise:
        groups = int(rng.integers(2, 5))
    k = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    d = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    eff = [(k[i] - 1) * d[i] + 1 for i in range(2)]
    hw = [int(rng.integers(max(1, eff[i] - 1), eff[i] + 6)) for i in range(2)]
    pad = [int(v) for v in rng.integers(0, 3, size=4)]
    if not transpose:
        for i in range(2):  # the padded input must hold the dilated window
            pad[2 * i + 1] += max(0, eff[i] - hw[i] - pad[2 * i] - pad[2 * i + 1])
    return dict(rng=rng, n=int(rng.integers(1, 3)), groups=groups, cin=cin_g * groups, cout_g=cout_g,
                k=k, d=d, s=s, hw=hw, pad=pad, dtype=F16 if rng.random() < 0.4 else F32,
                layout=str(rng.choice(["nchw", "nhwc"])), bias=bool(rng.random() < 0.6))


@pytest.mark.parametrize("seed", range(48))
def test_conv2d_random(seed):
    c = random_conv_case(seed, transpose=False)
    rng, dtype, g = c["rng"], c["dtype"], c["groups"]
    flayout = str(rng.choice(list(CONV_FILTER_FROM_OIHW)))
    cout = c["cout_g"] * g
    x = rng.uniform(-2, 2, (c["n"], c["cin"], *c["hw"])).astype(dtype)
    w = rng.uniform(-1, 1, (cout, c["cin"] // g, *c["k"])).astype(dtype)
    b = rng.uniform(-1, 1, cout).astype(dtype) if c["bias"] else None
    arrays = {"input": x.transpose(INPUT_FROM_NCHW[c["layout"]]),
              "filter": w.transpose(CONV_FILTER_FROM_OIHW[flayout])}
    if b is not None:
        arrays["bias"] = b
    got = run_op("conv2d", arrays, padding=c["pad"], strides=list(c["s"]), dilations=list(c["d"]), groups=g,
                 inputLayout=c["layout"], filterLayout=flayout)
    ref, mag = torch_conv2d(x, w, b, c["pad"], c["s"], c["d"], g)
    perm = INPUT_FROM_NCHW[c["layout"]]
    assert_close_terms(got, ref.transpose(perm), mag.transpose(perm), dtype, c["cin"] // g * c["k"][0] * c["k"][1])


@pytest.mark.parametrize("seed", range(40))
def test_conv_transpose2d_random(seed):
    c = random_conv_case(seed + 1000, transpose=True)
    rng, dtype, g = c["rng"], c["dtype"], c["groups"]
    flayout = str(rng.choice(list(TCONV_FILTER_FROM_IOHW)))
    cout = c["cout_g"] * g
    x = rng.uniform(-2, 2, (c["n"], c["cin"], *c["hw"])).astype(dtype)
    w = rng.uniform(-1, 1, (c["cin"], c["cout_g"], *c["k"])).astype(dtype)
    b = rng.uniform(-1, 1, cout).astype(dtype) if c["bias"] else None
    full = [(c["hw"][i] - 1) * c["s"][i] + (c["k"][i] - 1) * c["d"][i] + 1 for i in range(2)]
    calc = [full[i] - c["pad"][2 * i] - c["pad"][2 * i + 1] for i in range(2)]
    if min(calc) < 1:
        c["pad"] = [0, 0, 0, 0]
        calc = full
    options = dict(padding=c["pad"], strides=list(c["s"]), dilations=list(c["d"]), groups=g,
                   inputLayout=c["layout"], filterLayout=flayout)
    extra = [int(rng.integers(0, s)) for s in c["s"]]
    if rng.random() < 0.5:
        options["outputPadding"] = extra
    else:
        options["outputSizes"] = [calc[0] + extra[0], calc[1] + extra[1]]
    arrays = {"input": x.transpose(INPUT_FROM_NCHW[c["layout"]]),
              "filter": w.transpose(TCONV_FILTER_FROM_IOHW[flayout])}
    if b is not None:
        arrays["bias"] = b
    got = run_op("convTranspose2d", arrays, **options)
    sizes = [calc[0] + extra[0], calc[1] + extra[1]]
    ref, mag = torch_conv_transpose2d(x, w, b, c["pad"], c["s"], c["d"], g, sizes)
    perm = INPUT_FROM_NCHW[c["layout"]]
    assert_close_terms(got, ref.transpose(perm), mag.transpose(perm), dtype, c["cin"] * c["k"][0] * c["k"][1])


@pytest.mark.parametrize("flayout", list(CONV_FILTER_FROM_OIHW))
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_conv2d_every_layout(layout, flayout, dtype):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, (2, 4, 6, 5)).astype(dtype)
    w = rng.uniform(-1, 1, (6, 2, 3, 2)).astype(dtype)
    b = rng.uniform(-1, 1, 6).astype(dtype)
    got = run_op("conv2d", {"input": x.transpose(INPUT_FROM_NCHW[layout]),
                            "filter": w.transpose(CONV_FILTER_FROM_OIHW[flayout]), "bias": b},
                 padding=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], groups=2, inputLayout=layout,
                 filterLayout=flayout)
    ref, mag = torch_conv2d(x, w, b, [1, 0, 2, 1], (2, 1), (1, 2), 2)
    perm = INPUT_FROM_NCHW[layout]
    assert_close_terms(got, ref.transpose(perm), mag.transpose(perm), dtype, 12)


@pytest.mark.parametrize("multiplier", [1, 2])
def test_conv2d_depthwise_and_pointwise(multiplier):
    rng = np.random.default_rng(multiplier)
    x = rng.standard_normal((1, 8, 9, 9)).astype(F32)
    w = rng.standard_normal((8 * multiplier, 1, 3, 3)).astype(F32)
    got = run_op("conv2d", {"input": x, "filter": w}, padding=[1, 1, 1, 1], groups=8)
    ref, mag = torch_conv2d(x, w, None, [1, 1, 1, 1], (1, 1), (1, 1), 8)
    assert_close_terms(got, ref, mag, F32, 9)
    w1 = rng.standard_normal((5, 8, 1, 1)).astype(F32)  # 1x1: the tap is the input itself
    got = run_op("conv2d", {"input": x, "filter": w1})
    ref, mag = torch_conv2d(x, w1, None, [0, 0, 0, 0], (1, 1), (1, 1), 1)
    assert_close_terms(got, ref, mag, F32, 8)


def test_conv2d_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 1, 2, 3, -65504, 65504, 0], dtype=F32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), F32)
    got = run_op("conv2d", {"input": x, "filter": w})
    ref, _ = torch_conv2d(x, w, None, [0, 0, 0, 0], (1, 1), (1, 1), 1)
    np.testing.assert_array_equal(got, ref.astype(F32))
    # float16 accumulates in float32: 65504 + 65504 - 65504 stays finite before the one rounding
    x16 = np.array([65504, 65504, -65504, 0], dtype=F16).reshape(1, 1, 2, 2)
    got16 = run_op("conv2d", {"input": x16, "filter": np.ones((1, 1, 2, 2), F16)})
    assert got16.dtype == F16 and got16.item() == 65504


@pytest.mark.parametrize("name", ["conv2d", "conv_transpose2d"])
def test_wpt_vectors(name):
    """Spot-check the WPT conformance vectors (the data-driven runner is in py_core/testing)."""
    for case in wpt_json(name):
        g = case["graph"]
        b = GraphBuilder()
        ops, feeds = {}, {}
        for key, spec in g["inputs"].items():
            desc = spec["descriptor"]
            arr = np.array(spec["data"], dtype=desc["dataType"]).reshape(desc["shape"])
            if spec.get("constant"):
                ops[key] = b.constant(desc, arr)
            else:
                ops[key], feeds[key] = b.input(key, desc), arr
        (op,) = g["operators"]
        args: dict = {}
        for a in op["arguments"]:
            for k, v in a.items():
                if k == "options":
                    args.update({kk: ops.get(vv, vv) if isinstance(vv, str) else vv for kk, vv in v.items()})
                else:
                    args[k] = ops[v]
        out = prepare(b.build({"y": b.call(op["name"], args)})).run(feeds)["y"]
        (exp,) = g["expectedOutputs"].values()
        want = np.array(exp["data"], dtype=np.float64).reshape(exp["descriptor"]["shape"])
        rtol = 2e-3 if exp["descriptor"]["dataType"] == "float16" else 1e-5
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=rtol, atol=rtol, err_msg=case["name"])


def test_options_round_trip():
    """Filled-in options (convTranspose2d outputSizes) survive serialization and re-validation."""
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [1, 2, 3, 3]})
    f = b.constant({"dataType": "float32", "shape": [2, 3, 2, 2]}, np.ones((2, 3, 2, 2), F32))
    y = b.convTranspose2d(x, f, strides=[2, 2], outputPadding=[1, 0], label="up")
    assert y.shape == [1, 3, 7, 6]
    g = b.build({"y": y})
    g2 = graph_from_json(json.loads(json.dumps(g.to_json())), g.constants)
    assert g2.operations[0].options["outputSizes"] == [7, 6]


F32_4D = {"dataType": "float32", "shape": [1, 2, 5, 5]}
F32_FILTER = {"dataType": "float32", "shape": [4, 2, 3, 3]}
CONV_ERRORS = [
    ("conv2d", {"input": {"dataType": "int32", "shape": [1, 2, 5, 5]}, "filter": F32_FILTER}, {},
     "data type"),
    ("conv2d", {"input": {"dataType": "float32", "shape": [2, 5, 5]}, "filter": F32_FILTER}, {}, "rank 3"),
    ("conv2d", {"input": F32_4D, "filter": {"dataType": "float16", "shape": [4, 2, 3, 3]}}, {}, "must match"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"padding": [1, 1]}, "padding [1, 1]"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"strides": [1, 0]}, "strides [1, 0]"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"dilations": [1]}, "dilations [1]"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"groups": 0}, "groups"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"groups": 2}, "input channels (2)"),
    ("conv2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [3, 1, 3, 3]}}, {"groups": 2},
     "output channels (3)"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"filterLayout": "hwio"}, "filter input channels"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"inputLayout": "nhwc"}, "input channels (5)"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"filterLayout": "xyzw"}, "not a valid value"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"dilations": [3, 1]}, "too small"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER, "bias": {"dataType": "float32", "shape": [3]}}, {},
     "bias"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER, "bias": {"dataType": "float32", "shape": [4, 1]}}, {},
     "rank 2"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"padding": [2**32, 0, 0, 0]}, "unsigned long"),
    ("conv2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [1, 2, 434983, 2]}},
     {"dilations": [328442, 1]}, "effective window 142866358045"),
    ("conv2d", {"input": F32_4D, "filter": F32_FILTER}, {"dilations": [1, 2**32 - 1]}, "width"),
    ("convTranspose2d", {"input": F32_4D, "filter": F32_FILTER}, {}, "input channels (2)"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"outputPadding": [1, 1]}, "smaller than strides"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"outputPadding": [0]}, "outputPadding [0]"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"strides": [2, 2], "outputSizes": [14, 11]}, "outputSizes[0] (14)"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"strides": [2, 2], "outputSizes": [11, 10]}, "outputSizes[1] (10)"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"outputSizes": [7]}, "outputSizes [7]"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"padding": [4, 4, 0, 0]}, "not a valid dimension"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"groups": 2**32 - 1}, "output channels (2 x groups 4294967295)"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]},
                         "bias": {"dataType": "float32", "shape": [3]}}, {}, "bias shape [3]"),
    ("convTranspose2d", {"input": F32_4D, "filter": {"dataType": "float32", "shape": [2, 2, 3, 3]}},
     {"filterLayout": "oihw"}, "not a valid value"),
]


@pytest.mark.parametrize("op, descs, options, fragment", CONV_ERRORS)
def test_validation_errors(op, descs, options, fragment):
    b = GraphBuilder()
    handles = {k: b.input(k, d) for k, d in descs.items()}
    assert_type_error(lambda: b.call(op, {**handles, **options}, "my_conv"), "my_conv", op, fragment)


def test_conv_transpose2d_groups_not_dividing_input_channels():
    """WPT validation builds input channels 1 with groups 3; computing it has no defined result."""
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [1, 1, 5, 5]})
    f = b.input("f", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    y = b.convTranspose2d(x, f, padding=[1, 1, 1, 1], groups=3)
    assert y.shape == [1, 3, 5, 5]
    exe = prepare(b.build({"y": y}))
    with pytest.raises(OperationError, match="not divisible by groups"):
        exe.run({"x": np.ones((1, 1, 5, 5), F32), "f": np.ones((1, 1, 3, 3), F32)})


def test_valid_shapes_from_the_spec():
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float16", "shape": [1, 7, 7, 8]})
    dw = b.input("w", {"dataType": "float16", "shape": [1, 3, 3, 8]})
    assert b.conv2d(x, dw, groups=8, inputLayout="nhwc", filterLayout="ihwo", padding=[1, 1, 1, 1]).shape == \
        [1, 7, 7, 8]
    t = b.input("t", {"dataType": "float16", "shape": [4, 3, 3, 8]})
    y = b.convTranspose2d(x, t, groups=2, inputLayout="nhwc", filterLayout="ohwi", strides=[2, 2])
    assert y.shape == [1, 15, 15, 8]
    # WPT validation: outputPadding is ignored (even >= strides) when outputSizes is given
    i = b.input("i", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    k = b.input("k", {"dataType": "float32", "shape": [1, 2, 3, 3]})
    assert b.convTranspose2d(i, k, outputPadding=[3, 3], strides=[3, 2], outputSizes=[10, 8]).shape == \
        [1, 2, 10, 8]
    assert b.convTranspose2d(i, k, strides=[3, 2], outputPadding=[1, 1]).shape == [1, 2, 10, 8]
    big = b.input("big", {"dataType": "float32", "shape": [1, 65, 65, 1]})
    dil = b.input("dil", {"dataType": "float32", "shape": [1, 3, 3, 1]})
    y = b.conv2d(big, dil, inputLayout="nhwc", filterLayout="ihwo", dilations=[4, 4])
    assert y.shape == [1, 57, 57, 1]
