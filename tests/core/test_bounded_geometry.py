"""Work bounded by the graph, not by its options: convolutions, transposed convolutions and
pools with padding, strides, dilations and windows in the tens of thousands run in milliseconds with memory
close to their inputs and outputs, and give the values of a float64 reference written from the spec's
definition.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-conv2d"""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import time
import tracemalloc

import numpy as np
import pytest
from helpers import assert_type_error

from py_core.bridge.worker_host import WorkerHost, safe_call
from py_core.builder import GraphBuilder
from py_core.errors import OperationError, internal_error
from py_core.kernels import native, window
from py_core.runtime.executor import prepare

F32 = np.dtype(np.float32)
# Time is judged against this machine: a fixed NumPy workload timed in the same run is one unit (about 10 ms on
# a 2-core CI machine).  Every case here runs in under one unit; the unbounded kernels took over 300 units
# (conv2d) or failed (convTranspose2d), so 200 units is generous on any machine and still fails them.
BUDGET_UNITS = 200
# peak Python-visible allocation of one run; the unbounded kernels needed 2.3 GB and 3.8 GiB for these cases
PEAK_BYTES = 16 << 20


# ------------------------------------------------------------------------ float64 references (NCHW, the spec)

def _links(n_a: int, n_b: int, window_size: int, offset: int, stride: int, dilation: int):
    """(a, b, tap) with b = a * stride + tap * dilation + offset, from every pair (a, b): no tap enumeration, so
    huge windows cost nothing here either, and the code shares nothing with the kernels' window arithmetic."""
    out = []
    for a in range(n_a):
        for b in range(n_b):
            tap, rest = divmod(b - offset - a * stride, dilation)
            if rest == 0 and 0 <= tap < window_size:
                out.append((a, b, tap))
    return out


def conv2d_ref(x, w, b, padding, strides, dilations, groups):
    """y[n, o, oy, ox] = sum of x[n, c, oy*sh + i*dh - top, ox*sw + j*dw - left] * w[o, c, i, j] over inputs inside."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, bottom, left, right = padding
    oh = (h + top + bottom - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (wd + left + right - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for oy, iy, i in _links(oh, h, kh, -top, strides[0], dilations[0]):
        for ox, ix, j in _links(ow, wd, kw, -left, strides[1], dilations[1]):
            for g in range(groups):
                wg = w[g * og:(g + 1) * og, :, i, j]
                y[:, g * og:(g + 1) * og, oy, ox] += x[:, g * cg:(g + 1) * cg, iy, ix] @ wg.T
    return y if b is None else y + b[None, :, None, None]


def conv_transpose2d_ref(x, w, padding, strides, dilations, groups, out_sizes):
    """y[n, o, iy*sh + i*dh - top, ix*sw + j*dw - left] += x[n, c, iy, ix] * w[c, o, i, j], inside the output."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    y = np.zeros((n, og * groups, *out_sizes))
    for iy, oy, i in _links(h, out_sizes[0], kh, -padding[0], strides[0], dilations[0]):
        for ix, ox, j in _links(wd, out_sizes[1], kw, -padding[2], strides[1], dilations[1]):
            for g in range(groups):
                y[:, g * og:(g + 1) * og, oy, ox] += x[:, g * cg:(g + 1) * cg, iy, ix] @ w[g * cg:(g + 1) * cg, :, i, j]
    return y


def pool_ref(kind, x, window_dims, padding, strides, dilations, out_sizes):
    """Max / average (of the inputs inside) / L2 norm over each window's taps that fall inside the input."""
    n, c, h, wd = x.shape
    top, _, left, _ = padding
    rows = _links(out_sizes[0], h, window_dims[0], -top, strides[0], dilations[0])
    cols = _links(out_sizes[1], wd, window_dims[1], -left, strides[1], dilations[1])
    y = np.zeros((n, c, *out_sizes))
    for oy in range(out_sizes[0]):
        for ox in range(out_sizes[1]):
            vals = np.array([x[:, :, iy, ix] for (ay, iy, _) in rows if ay == oy for (ax, ix, _) in cols if ax == ox])
            if kind == "max":
                y[:, :, oy, ox] = vals.max(axis=0) if len(vals) else -np.inf
            elif kind == "average":
                y[:, :, oy, ox] = vals.mean(axis=0) if len(vals) else 0
            else:
                y[:, :, oy, ox] = np.sqrt((vals * vals).sum(axis=0)) if len(vals) else 0
    return y


# ---------------------------------------------------------------------------------------------- running

@functools.cache
def unit_seconds() -> float:
    """The best of 5 timings of eight 256 x 256 float64 matmuls: one unit of this machine's speed."""
    a = np.random.default_rng(0).standard_normal((256, 256))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(8):
            a @ a
        best = min(best, time.perf_counter() - t0)
    return best


def run_bounded(op: str, x: np.ndarray, options: dict, w: np.ndarray | None = None, bias: np.ndarray | None = None,
                constant_filter: bool = False) -> np.ndarray:
    """Build x (+ filter, bias) -> op, run it once, assert it took < BUDGET_UNITS and < PEAK_BYTES; the output."""
    b = GraphBuilder()
    args = {"input": b.input("x", {"dataType": "float32", "shape": list(x.shape)})}
    feeds = {"x": x}
    for name, arr in (("filter", w), ("bias", bias)):
        if arr is None:
            continue
        desc = {"dataType": "float32", "shape": list(arr.shape)}
        if constant_filter:
            args[name] = b.constant(desc, arr)
        else:
            args[name], feeds[name] = b.input(name, desc), arr
    exe = prepare(b.build({"y": b.call(op, {**args, **options}, "big")}))
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        y = exe.run(feeds)["y"]
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    budget = BUDGET_UNITS * unit_seconds()
    assert seconds < budget, f"{op} took {seconds:.2f} s, over {BUDGET_UNITS} units of this machine ({budget:.2f} s)"
    assert peak < PEAK_BYTES, f"{op} allocated {peak / 2**20:.1f} MiB at peak"
    return y


def _data(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(F32)


def _close(got: np.ndarray, ref: np.ndarray) -> None:
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------- cases

CONV_CASES = [
    # a 1-element output that only padding reaches (a padded copy of the input would be 24005 x 24005)
    dict(x=(1, 1, 5, 5), w=(1, 1, 3, 3), padding=[12000] * 4, strides=[30000, 30000]),
    # the same, with a dilation that puts the last tap on the input's corner
    dict(x=(1, 2, 5, 5), w=(3, 2, 3, 3), padding=[12000] * 4, strides=[30000, 30000], dilations=[6000, 6000]),
    # several outputs per axis, huge dilation on one axis, gaps of 12002 between output rows
    dict(x=(2, 2, 6, 7), w=(4, 2, 2, 3), padding=[12000, 12000, 1, 1], strides=[12002, 2], dilations=[12001, 1]),
    # depthwise and grouped, with the window larger than the input
    dict(x=(1, 3, 4, 4), w=(6, 1, 3, 3), padding=[9000, 9001, 2, 9000], strides=[4500, 3000], dilations=[4500, 4],
         groups=3),
    dict(x=(1, 4, 5, 3), w=(4, 2, 2, 2), padding=[20000, 0, 0, 20000], strides=[9999, 7], dilations=[20001, 2],
         groups=2),
]


@pytest.fixture(params=["reference", "packed-numpy", "packed-c"])
def conv_path(request):
    """Which conv2d runs: the reference kernel (filter an input), the pre-packed one on NumPy or on C."""
    if request.param == "packed-c" and not native.available():
        pytest.skip("the C kernels are not built (make build)")
    was = native.available()
    native.use_native(request.param == "packed-c")
    yield request.param
    native.use_native(was)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_huge_geometry(case, layout, conv_path):
    c = CONV_CASES[case]
    x, w = _data(case, *c["x"]), _data(case + 100, *c["w"])
    bias = _data(case + 200, c["w"][0])
    options = {k: v for k, v in c.items() if k not in ("x", "w")}
    ref = conv2d_ref(x.astype(np.float64), w.astype(np.float64), bias.astype(np.float64), c["padding"],
                     c["strides"], c.get("dilations", [1, 1]), c.get("groups", 1))
    xin = x if layout == "nchw" else x.transpose(0, 2, 3, 1)
    got = run_bounded("conv2d", np.ascontiguousarray(xin), {**options, "inputLayout": layout}, w, bias,
                      constant_filter=conv_path != "reference")
    _close(got if layout == "nchw" else got.transpose(0, 3, 1, 2), ref)


TCONV_CASES = [
    # stride and padding 16000 (a full scatter canvas would be 32003 x 32003, 3.8 GiB)
    dict(x=(1, 1, 3, 3), w=(1, 1, 3, 3), padding=[16000] * 4, strides=[16000, 16000]),
    dict(x=(1, 2, 3, 4), w=(2, 3, 2, 3), padding=[16000, 16001, 15999, 16000], strides=[16000, 16000],
         dilations=[7, 8000]),
    # grouped, outputSizes past the last tap, one axis cropped down to a single landing tap
    dict(x=(2, 4, 2, 3), w=(4, 1, 3, 2), padding=[25000, 0, 3, 1], strides=[25000, 3], groups=2,
         outputSizes=[4, 6]),
    # everything cropped away: the output is bias only
    dict(x=(1, 1, 2, 2), w=(1, 2, 2, 2), padding=[10001, 5000, 0, 0], strides=[10000, 1], dilations=[3, 1],
         outputSizes=[3, 3]),
]


def _tconv_sizes(c) -> list[int]:
    if "outputSizes" in c:
        return c["outputSizes"]
    s, d = c["strides"], c.get("dilations", [1, 1])
    return [(c["x"][2 + a] - 1) * s[a] + (c["w"][2 + a] - 1) * d[a] + 1 - c["padding"][2 * a] - c["padding"][2 * a + 1]
            for a in range(2)]


@pytest.mark.parametrize("constant_filter", [False, True], ids=["input-filter", "constant-filter"])
@pytest.mark.parametrize("case", range(len(TCONV_CASES)))
def test_conv_transpose2d_huge_geometry(case, constant_filter):
    c = TCONV_CASES[case]
    x, w = _data(case + 10, *c["x"]), _data(case + 110, *c["w"])
    groups = c.get("groups", 1)
    bias = _data(case + 210, c["w"][1] * groups)
    options = {k: v for k, v in c.items() if k not in ("x", "w")}
    sizes = _tconv_sizes(c)
    ref = conv_transpose2d_ref(x.astype(np.float64), w.astype(np.float64), c["padding"], c["strides"],
                               c.get("dilations", [1, 1]), groups, sizes) + bias[None, :, None, None]
    got = run_bounded("convTranspose2d", x, options, w, bias, constant_filter)
    assert list(got.shape[2:]) == sizes
    _close(got, ref)


POOL_CASES = [
    # every window covers the whole input and 20000 rows/columns of padding (a padded copy would be 20003^2)
    dict(x=(1, 2, 3, 3), windowDimensions=[20001, 20001], padding=[10000] * 4),
    # the conv2d case's geometry as a pool: strided, dilated, mostly padding
    dict(x=(1, 2, 5, 5), windowDimensions=[3, 3], padding=[12000] * 4, strides=[30000, 30000],
         dilations=[6000, 6000]),
    dict(x=(2, 3, 6, 4), windowDimensions=[5000, 2], padding=[4998, 4997, 30000, 30000], strides=[2000, 20000],
         dilations=[1, 30000]),
    # ceil rounding slides the last window far past the end padding
    dict(x=(1, 1, 7, 7), windowDimensions=[3, 3], padding=[9000, 0, 1, 1], strides=[9000, 3], dilations=[2, 2],
         outputShapeRounding="ceil"),
]


@pytest.mark.parametrize("kind", ["max", "average", "l2"])
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pool_huge_geometry(case, kind):
    c = POOL_CASES[case]
    x = _data(case + 20, *c["x"])
    options = {k: v for k, v in c.items() if k != "x"}
    b = GraphBuilder()
    sizes = b.call(f"{kind}Pool2d", {"input": b.input("x", {"dataType": "float32", "shape": list(c["x"])}),
                                     **options}).shape[2:]
    ref = pool_ref(kind, x.astype(np.float64), c["windowDimensions"], c["padding"], c.get("strides", [1, 1]),
                   c.get("dilations", [1, 1]), sizes)
    got = run_bounded(f"{kind}Pool2d", x, options)
    _close(got, ref)


def test_resample2d_intermediate_stays_bounded():
    """A tall-thin upsample of a wide-short input: resampling rows first would hold 20000 x 20000 elements."""
    x = _data(5, 1, 1, 1, 20000)
    got = run_bounded("resample2d", x, {"mode": "linear", "sizes": [20000, 1]})
    # the half-pixel centre of one column out of 20000 sits between inputs 9999 and 10000
    _close(got, np.full((1, 1, 20000, 1), (x[0, 0, 0, 9999] + x[0, 0, 0, 10000]) / 2.0))
    nearest = run_bounded("resample2d", x, {"mode": "nearest-neighbor", "sizes": [20000, 1]})
    assert (nearest == x[0, 0, 0, 9999]).all()


# ------------------------------------------------------------------------------------------ geometry helpers

@pytest.mark.parametrize("args", [(5, 3, -12000, 30000, 6000, 0, 1), (7, 20001, -10000, 1, 1, 0, 3),
                                  (4, 9, 2, 5, 2, 0, 3), (1, 2**32 - 1, -(2**31), 2**31, 1, 0, 2)])
def test_spans_match_the_definition(args):
    """spans() links exactly the (a, b, tap) triples the definition does, each once."""
    n_b, k, offset, stride, dilation, a0, a1 = args
    got = set()
    for sp in window.spans(n_b, k, offset, stride, dilation, a0, a1):
        a_range = range(a1 - a0)[sp.a]
        b_range = range(n_b)[sp.b]
        assert len(a_range) == len(b_range) > 0
        got |= {(a + a0, b, sp.tap) for a, b in zip(a_range, b_range, strict=True)}
    want = {t for t in _links(a1, n_b, k, offset, stride, dilation) if t[0] >= a0}
    assert got == want


def test_tiles_cover_once_within_the_budget():
    pixel = 3 << 20
    seen = np.zeros((40, 50), int)
    for r0, r1, c0, c1 in window.tiles(40, 50, pixel):
        assert (r1 - r0) * (c1 - c0) * pixel <= window.SCRATCH_BYTES
        seen[r0:r1, c0:c1] += 1
    assert (seen == 1).all()


# ------------------------------------------------------------------------------------------------ errors

def test_output_over_the_byte_limit_is_refused_at_the_builder_call():
    """An output larger than maxTensorByteLength is refused where it is built, naming op, label and limit."""
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [1, 1, 2, 2]})
    w = b.input("w", {"dataType": "float32", "shape": [1, 1, 1, 1]})
    # 30002 x 30002: a valid element count (under 2^31), 3.6 GB of float32
    assert_type_error(lambda: b.call("conv2d", {"input": x, "filter": w, "padding": [15000] * 4}, "huge"),
                      "huge", "conv2d", "maxTensorByteLength (2147483647)")
    assert_type_error(lambda: b.call("convTranspose2d", {"input": x, "filter": w, "strides": [40000, 40000]},
                                     "up"), "up", "convTranspose2d", "maxTensorByteLength")


def test_float16_output_whose_float32_working_copy_is_over_the_limit_is_refused():
    """float16 kernels compute in float32: an output of 2^29 float16 elements (1 GiB, within maxTensorByteLength)
    needs a 2 GiB working copy, so the builder call refuses it, naming op, label and limit; one under it builds."""
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float16", "shape": [2**15, 2**14]})  # 1 GiB: an input is not computed
    assert_type_error(lambda: b.call("relu", {"input": x}, "act"), "act", "relu", "computed in float32",
                      "maxTensorByteLength (2147483647)")
    small = b.input("s", {"dataType": "float16", "shape": [2**15, 2**13]})  # 2^28 elements: a 1 GiB copy
    assert b.call("relu", {"input": small}, "ok").shape == [2**15, 2**13]


def test_unexpected_errors_keep_python_text_out_of_the_message(caplog):
    """A real NumPy failure becomes a WebNN error naming the op and label; its text goes to the log only."""
    try:
        np.empty(2**62, dtype=np.float32)
    except (ValueError, MemoryError) as e:
        numpy_error = e
    with caplog.at_level(logging.ERROR, logger="py_core"):
        err = internal_error("[big] conv2d", numpy_error)
    assert isinstance(err, OperationError)
    assert str(err) == "[big] conv2d: out of memory in the WebNN worker"
    assert str(numpy_error) in caplog.text
    # any other exception: no Python text either
    try:
        np.zeros(3).reshape(2, 2)
    except ValueError as e:
        other = internal_error("[r] reshape", e)
    assert str(other) == "[r] reshape: internal error in the WebNN engine (details in the worker's console)"
    # the worker's entry point: the same, as the JSON the page receives
    error_json, result = safe_call(np.empty, 2**62)
    assert result is None and "array is too big" not in error_json and "OperationError" in error_json


@pytest.mark.parametrize("conv_path", ["packed-numpy", "packed-c"], indirect=True)
def test_packed_conv2d_past_the_im2col_limit_runs_tiled(conv_path):
    """A pre-packed conv2d whose whole im2col matrix would pass MAX_IM2COL_BYTES (404 MB here) builds it tile
    by tile through the reference kernel, on NumPy and with the C kernels loaded."""
    x, w = _data(1, 1, 32, 260, 260), _data(2, 4, 32, 7, 7)
    oh = 260 - 7 + 1
    assert oh * oh * 7 * 7 * 32 * 4 > window.MAX_IM2COL_BYTES
    b = GraphBuilder()
    y = b.conv2d(b.input("x", {"dataType": "float32", "shape": list(x.shape)}),
                 b.constant({"dataType": "float32", "shape": list(w.shape)}, w), label="wide")
    exe = prepare(b.build({"y": y}))
    assert exe.steps[0].call.reference == "always"
    tracemalloc.start()
    try:
        got = exe.run({"x": x})["y"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < window.SCRATCH_BYTES + (16 << 20), f"{peak / 2**20:.1f} MiB"
    # the definition, unpadded and stride 1: one product per tap over the shifted input
    ref = np.zeros((1, 4, oh, oh))
    for i in range(7):
        for j in range(7):
            ref += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + oh].astype(np.float64), w[:, :, i, j])
    # sums of 1568 float32 products: absolute rounding errors reach about 1e-4 to 1e-3
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-3)


def test_worker_dispatch_of_huge_geometry():
    """Through the worker's host, as the page drives it: the stride-16000 convTranspose2d dispatches and reads back the
    definition's values; a dispatch the kernel refuses comes back as error JSON naming op and label."""
    host = WorkerHost()
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    w = b.input("w", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    good = b.build({"y": b.convTranspose2d(x, w, padding=[16000] * 4, strides=[16000, 16000], label="up")})
    b2 = GraphBuilder()
    x2 = b2.input("x", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    w2 = b2.input("w", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    # validation accepts input channels 1 with groups 3 (WPT builds it); computing it has no defined result
    bad = b2.build({"y": b2.convTranspose2d(x2, w2, padding=[16000] * 4, strides=[16000, 16000], groups=3,
                                            label="odd")})
    xs, ws = np.arange(9, dtype=F32).reshape(1, 1, 3, 3) + 1, np.arange(9, dtype=F32).reshape(1, 1, 3, 3) + 1
    for gid, graph, out_shape in ((1, good, [1, 1, 3, 3]), (2, bad, [1, 3, 3, 3])):
        assert safe_call(host.build, 0, gid, json.dumps(graph.to_json()), {}, {})[0] is None
        for tid, shape in ((10 * gid, [1, 1, 3, 3]), (10 * gid + 1, [1, 1, 3, 3]), (10 * gid + 2, out_shape)):
            host.create_tensor(0, tid, {"dataType": "float32", "shape": shape}, True, True)
        host.write_tensor(0, 10 * gid, lambda t: t.__setitem__(..., xs))
        host.write_tensor(0, 10 * gid + 1, lambda t: t.__setitem__(..., ws))
    assert safe_call(host.dispatch, 0, 1, {"x": 10, "w": 11}, {"y": 12}) == [None, None]
    # the bytes readTensor copies out of the heap
    y = np.frombuffer(ctypes.string_at(host.read_address(0, 12, 36), 36), dtype=F32).reshape(3, 3)
    np.testing.assert_array_equal(y, xs[0, 0, 1, 1] * ws[0, 0])  # only input (1, 1) lands in the cropped output
    error_json, _ = safe_call(host.dispatch, 0, 2, {"x": 20, "w": 21}, {"y": 22})
    error = json.loads(error_json)
    assert error["name"] == "OperationError"
    assert error["message"].startswith("[odd] convTranspose2d: input channels (1) are not divisible by groups (3)")
