"""Property: for extreme but VALID options and shapes, the C kernels, the NumPy kernels and a float64 definition
written from the spec (py_core.testing.reference) agree.

Every case is built through GraphBuilder (so validation applies) and compiled as build() does, then run twice:
with the C kernels (py_core.kernels.native) and without (`native.use_native(False)`).  Geometry values come
from small numbers and from the edges of `unsigned long` (2^16, 2^31 - 1, 2^31, 2^32 - 1), arranged so the
OUTPUT stays small: a huge stride with a huge end padding, a huge dilation with a beginning padding that lines a
far tap up with the input (the shape of conv2d that 32-bit indexing would read outside its buffers).

Budget: `make test` runs a fixed, derandomized set (WEBNN_FUZZ_EXAMPLES examples per operator, default 30); the
deep run is `make fuzz` (scripts/fuzz.py: random seeds, thousands of examples, statistics printed).

Cases whose padded extent is huge (more than 2^22 elements, up to 2^64) are tallied as an event: the NumPy kernels
read only the taps inside the input, so every path runs them.  WEBNN_FUZZ_MATERIALISE=N skips
the NumPy path of cases past N padded elements, for checking a branch whose NumPy kernels still pad.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from py_core.builder import GraphBuilder
from py_core.kernels import native
from py_core.runtime.executor import prepare
from py_core.testing import reference as ref

EXAMPLES = int(os.environ.get("WEBNN_FUZZ_EXAMPLES", "30"))
DEEP = "WEBNN_FUZZ_EXAMPLES" in os.environ
# padded elements past which a case counts as huge geometry; optionally, past which its NumPy path is skipped
HUGE_EXTENT = 2**22
MATERIALISE_BUDGET = int(os.environ["WEBNN_FUZZ_MATERIALISE"]) if "WEBNN_FUZZ_MATERIALISE" in os.environ else None
EPS32 = float(np.finfo(np.float32).eps)
ULONG_MAX = 2**32 - 1
HUGE = [2**16, 2**31 - 1, 2**31, 2**32 - 1]

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not DEEP,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# ------------------------------------------------------------------------------------------------ running

def run_both(build: Callable[[GraphBuilder, dict[str, Any]], Any], arrays: dict[str, np.ndarray],
             numpy_too: bool = True) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Build a graph over named inputs, compile it once, run it with the C kernels and (numpy_too) without."""
    b = GraphBuilder()
    hs = {n: b.input(n, (a.dtype.name, list(a.shape))) for n, a in arrays.items()}
    out = build(b, hs)
    outs = out if isinstance(out, list) else [out]
    exe = prepare(b.build({f"o{i}": o for i, o in enumerate(outs)}))
    names = [f"o{i}" for i in range(len(outs))]
    res = exe.run(arrays)
    with_c = [res[n] for n in names]
    if not numpy_too:
        return with_c, None
    native.use_native(False)
    try:
        res = exe.run(arrays)
    finally:
        native.use_native(True)
    return with_c, [res[n] for n in names]


def close(got: np.ndarray, want: np.ndarray, tol: np.ndarray | float, what: str) -> None:
    """float32 `got` within `tol` of the float64 definition (elementwise or scalar), same shape."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs definition {want.shape}"
    assert got.dtype == np.float32, f"{what}: {got.dtype}"
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are the same infinity
        err = np.abs(g - want)
        # a definition beyond float32's range must come out as the matching infinity (one rounding)
        rounded = want.astype(np.float32).astype(np.float64)
    bound = np.broadcast_to(np.asarray(tol, np.float64) + 1e-30, want.shape)
    bad = ~((err <= bound) | (g == want) | (np.isinf(rounded) & (g == rounded)) | (np.isnan(g) & np.isnan(want)))
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {want.size} values off, worst {err[bad].max():.3g} "
                           f"(allowed {bound[bad].min():.3g})\n got {got.ravel()[:12]}\nwant {want.ravel()[:12]}")


def compare(paths: tuple[list[np.ndarray], list[np.ndarray] | None], wants: list[np.ndarray],
            tols: list[Any]) -> None:
    with_c, without = paths
    for i, (want, tol) in enumerate(zip(wants, tols, strict=True)):
        close(with_c[i], want, tol, f"output {i}, C path")
        if without is not None:
            close(without[i], want, tol, f"output {i}, NumPy path")
            # the two paths against each other: both within tol of the definition
            close(with_c[i], without[i].astype(np.float64), 2 * np.asarray(tol), f"output {i}, C vs NumPy")


def data(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ------------------------------------------------------------------------------------------------ geometry

@st.composite
def window_axis(draw: st.DrawFn, max_out: int = 3, max_size: int = 6, max_window: int = 3
                ) -> tuple[int, int, int, int, int, int]:
    """(size, window, stride, dilation, pad_begin, pad_end) of one spatial axis with a valid output of at most
    max_out; values from small numbers and the edges of unsigned long."""
    size = draw(st.integers(1, max_size))
    k = draw(st.integers(1, max_window))
    stride = draw(st.one_of(st.integers(1, 3), st.sampled_from(HUGE)))
    dil = draw(st.one_of(st.integers(1, 3), st.sampled_from(HUGE))) if k > 1 else draw(st.integers(1, 2))
    reach = (k - 1) * dil  # the last tap's offset
    # beginning padding: small, huge, or lined up so a far tap lands inside the input
    lined = st.integers(0, max_size - 1).map(lambda off: max(reach - off, 0))
    pb = draw(st.one_of(st.integers(0, 3), st.sampled_from(HUGE), lined))
    assume(pb <= ULONG_MAX)
    base = size + pb - reach - 1  # span before the end padding: output = span // stride + 1
    if base // stride + 1 > max_out:  # too many outputs: line the far tap up instead (few rejections)
        pb = max(reach - draw(st.integers(size - 1, size + max_size)), 0)
        base = size + pb - reach - 1
    want_out = draw(st.integers(1, max_out))
    r = draw(st.one_of(st.integers(0, 3), st.just(stride - 1)))
    pe = max(0, (want_out - 1) * stride + min(r, stride - 1) - base)
    assume(pe <= ULONG_MAX and base + pe >= 0 and (base + pe) // stride + 1 <= max_out)
    return size, k, stride, dil, pb, pe


def out_size(size: int, k: int, stride: int, dil: int, pb: int, pe: int) -> int:
    return (size + pb + pe - (k - 1) * dil - 1) // stride + 1


def skip_numpy(materialised: int, op: str) -> bool:
    """Tally huge geometry; True when WEBNN_FUZZ_MATERIALISE asks to skip this case's NumPy path."""
    if materialised > HUGE_EXTENT:
        event(f"{op}: huge geometry (padded extent > 2^22 elements)")
    if MATERIALISE_BUDGET is not None and materialised > MATERIALISE_BUDGET:
        event(f"{op}: numpy path skipped (pads > {MATERIALISE_BUDGET} elements)")
        return True
    return False


# ------------------------------------------------------------------------------------------------ conv2d

@st.composite
def conv2d_cases(draw: st.DrawFn) -> dict[str, Any]:
    # wider rows now and then: the C kernels' vector paths (4 outputs of a row, 8 channels, 4x8 product tiles)
    # need at least 4-8 outputs or channels
    wide = draw(st.booleans())
    axis = window_axis(max_out=8, max_size=12) if wide else window_axis()
    hax, wax = draw(axis), draw(axis)
    n = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["depthwise", "dense", "grouped"]))
    if kind == "depthwise":
        c = draw(st.sampled_from([1, 2, 3, 4, 8, 9, 17]))
        groups, o = c, c
    elif kind == "dense":
        c, groups, o = draw(st.integers(1, 5)), 1, draw(st.integers(1, 12))
    else:
        groups = draw(st.integers(2, 3))
        c, o = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    return {"n": n, "c": c, "o": o, "groups": groups, "h": hax, "w": wax,
            "layout": draw(st.sampled_from(["nchw", "nhwc"])), "bias": draw(st.booleans()),
            "constant_filter": draw(st.sampled_from([True, True, True, False])),
            "act": draw(st.sampled_from([None, "relu", "clamp"])), "x": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=conv2d_cases())
def test_conv2d(case: dict[str, Any]) -> None:
    (h, kh, sh, dh, pt, pb), (w, kw, sw, dw, pl, pr) = case["h"], case["w"]
    n, c, o, groups, layout = case["n"], case["c"], case["o"], case["groups"], case["layout"]
    rng = np.random.default_rng(case["x"])
    x = rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    filt = rng.uniform(-1, 1, (o, c // groups, kh, kw)).astype(np.float32)
    bias = rng.uniform(-1, 1, o).astype(np.float32) if case["bias"] else None
    oh, ow = out_size(h, kh, sh, dh, pt, pb), out_size(w, kw, sw, dw, pl, pr)
    options = {"padding": [pt, pb, pl, pr], "strides": [sh, sw], "dilations": [dh, dw], "groups": groups,
               "inputLayout": layout, "filterLayout": "oihw"}
    packed = case["constant_filter"] and (groups == 1 or c == groups == o)
    numpy_ok = not skip_numpy(n * c * (h + pt + pb) * (w + pl + pr), "conv2d")  # the padded input's extent
    # (a skipped NumPy path leaves a non-packed case nothing but the definition)
    assume(packed or numpy_ok)
    xin = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    arrays = {"x": xin} if case["constant_filter"] else {"x": xin, "f": filt}

    def build(b: GraphBuilder, hs: dict[str, Any]) -> Any:
        f = b.constant(("float32", list(filt.shape)), filt) if case["constant_filter"] else hs["f"]
        args = {"input": hs["x"], "filter": f, **options}
        if bias is not None:
            args["bias"] = b.constant(("float32", [o]), bias)
        y = b.call("conv2d", args)
        if case["act"] == "relu":
            y = b.call("relu", {"input": y})
        elif case["act"] == "clamp":
            y = b.call("clamp", {"input": y, "minValue": -0.25, "maxValue": 0.5})
        return y

    paths = run_both(build, arrays, numpy_too=numpy_ok)
    want = ref.conv2d(x, filt, bias, options["padding"], options["strides"], options["dilations"], groups, (oh, ow))
    mag = ref.conv2d(np.abs(x), np.abs(filt), None if bias is None else np.abs(bias), options["padding"],
                     options["strides"], options["dilations"], groups, (oh, ow))
    if case["act"] == "relu":
        want = np.maximum(want, 0)
    elif case["act"] == "clamp":
        want = np.clip(want, -0.25, 0.5)
    k = (c // groups) * kh * kw + 1
    if layout == "nhwc":
        want, mag = want.transpose(0, 2, 3, 1), mag.transpose(0, 2, 3, 1)
    event(f"conv2d: {'packed' if packed else 'reference'} kernel, {layout}")
    compare(paths, [want], [(k + 4) * EPS32 * mag])


# ------------------------------------------------------------------------------------------------ convTranspose2d

@st.composite
def conv_transpose_cases(draw: st.DrawFn) -> dict[str, Any]:
    axes = []
    for _ in range(2):
        size, k = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        stride = draw(st.one_of(st.integers(1, 3), st.sampled_from(HUGE)))
        dil = draw(st.one_of(st.integers(1, 3), st.sampled_from(HUGE))) if k > 1 else 1
        full = (size - 1) * stride + (k - 1) * dil + 1
        # crop most of a huge full output away with the padding: keep 1-4 values, at a random place
        keep = draw(st.integers(1, 4))
        assume(full >= keep or stride > 1)
        out_pad = draw(st.integers(0, min(stride - 1, 2)))
        # top and bottom = full + out_pad - keep - top, both unsigned longs
        lo, hi = max(0, full + out_pad - keep - ULONG_MAX), min(max(full - keep, 0), ULONG_MAX)
        assume(lo <= hi)
        top = draw(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi])))
        bottom = full + out_pad - keep - top
        assume(0 <= bottom <= ULONG_MAX)
        axes.append((size, k, stride, dil, top, bottom, out_pad, keep))
    groups = draw(st.integers(1, 2))
    return {"n": draw(st.integers(1, 2)), "c": groups * draw(st.integers(1, 2)), "og": draw(st.integers(1, 3)),
            "groups": groups, "axes": axes, "layout": draw(st.sampled_from(["nchw", "nhwc"])),
            "bias": draw(st.booleans()), "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=conv_transpose_cases())
def test_conv_transpose2d(case: dict[str, Any]) -> None:
    (h, kh, sh, dh, pt, pb, oph, oh), (w, kw, sw, dw, pl, pr, opw, ow) = case["axes"]
    n, c, og, groups, layout = case["n"], case["c"], case["og"], case["groups"], case["layout"]
    # the extent of the scattered, un-cropped output
    full = n * og * groups * ((h - 1) * sh + (kh - 1) * dh + 1 + oph) * ((w - 1) * sw + (kw - 1) * dw + 1 + opw)
    assume(not skip_numpy(full, "convTranspose2d"))
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    filt = rng.uniform(-1, 1, (c, og, kh, kw)).astype(np.float32)
    bias = rng.uniform(-1, 1, og * groups).astype(np.float32) if case["bias"] else None
    options = {"padding": [pt, pb, pl, pr], "strides": [sh, sw], "dilations": [dh, dw], "groups": groups,
               "outputPadding": [oph, opw], "inputLayout": layout, "filterLayout": "iohw"}
    xin = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))

    def build(b: GraphBuilder, hs: dict[str, Any]) -> Any:
        args = {"input": hs["x"], "filter": b.constant(("float32", list(filt.shape)), filt), **options}
        if bias is not None:
            args["bias"] = b.constant(("float32", [og * groups]), bias)
        return b.call("convTranspose2d", args)

    paths = run_both(build, {"x": xin})
    geometry = (options["padding"], options["strides"], options["dilations"], groups, (oh, ow))
    want = ref.conv_transpose2d(x, filt, bias, *geometry)
    mag = ref.conv_transpose2d(np.abs(x), np.abs(filt), None if bias is None else np.abs(bias), *geometry)
    if layout == "nhwc":
        want, mag = want.transpose(0, 2, 3, 1), mag.transpose(0, 2, 3, 1)
    k = (c // groups) * kh * kw + 1
    compare(paths, [want], [(k + 4) * EPS32 * mag])


# ------------------------------------------------------------------------------------------------ pools

@st.composite
def pool_cases(draw: st.DrawFn) -> dict[str, Any]:
    return {"kind": draw(st.sampled_from(["average", "l2", "max"])), "h": draw(window_axis(max_out=4)),
            "w": draw(window_axis(max_out=4)), "n": draw(st.integers(1, 2)), "c": draw(st.integers(1, 5)),
            "layout": draw(st.sampled_from(["nchw", "nhwc"])), "ceil": draw(st.booleans()),
            "global": draw(st.integers(0, 5)) == 0, "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=pool_cases())
def test_pools(case: dict[str, Any]) -> None:
    kind, n, c, layout = case["kind"], case["n"], case["c"], case["layout"]
    (h, kh, sh, dh, pt, pb), (w, kw, sw, dw, pl, pr) = case["h"], case["w"]
    if case["global"]:  # the whole extent, no padding: the C product path of averagePool2d
        kh, kw, sh, sw, dh, dw, pt, pb, pl, pr = h, w, 1, 1, 1, 1, 0, 0, 0, 0
    floor_sizes = [out_size(h, kh, sh, dh, pt, pb), out_size(w, kw, sw, dw, pl, pr)]
    ceil_sizes = [-(-(h + pt + pb - (kh - 1) * dh - 1) // sh) + 1, -(-(w + pl + pr - (kw - 1) * dw - 1) // sw) + 1]
    sizes = ceil_sizes if case["ceil"] else floor_sizes
    # the extent as far as the last window reads
    reach_h = max(h + pt + pb, (sizes[0] - 1) * sh + (kh - 1) * dh + 1)
    reach_w = max(w + pl + pr, (sizes[1] - 1) * sw + (kw - 1) * dw + 1)
    assume(not skip_numpy(n * c * reach_h * reach_w, "pool2d"))
    x = np.random.default_rng(case["seed"]).uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    options = {"windowDimensions": [kh, kw], "padding": [pt, pb, pl, pr], "strides": [sh, sw],
               "dilations": [dh, dw], "layout": layout, "outputShapeRounding": "ceil" if case["ceil"] else "floor"}
    xin = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    paths = run_both(lambda b, hs: b.call(f"{kind}Pool2d", {"input": hs["x"], **options}), {"x": xin})
    want = ref.pool2d(kind, x, (kh, kw), options["padding"], (sh, sw), (dh, dw), sizes)
    mag = ref.pool2d("max", np.abs(x), (kh, kw), options["padding"], (sh, sw), (dh, dw), sizes)
    if layout == "nhwc":
        want, mag = want.transpose(0, 2, 3, 1), mag.transpose(0, 2, 3, 1)
    k = kh * kw
    tol = (k + 4) * EPS32 * np.where(np.isinf(mag), 0, mag) * (k if kind == "l2" else 1)
    compare(paths, [want], [tol])


# ------------------------------------------------------------------------------------------------ resample2d

@st.composite
def resample_cases(draw: st.DrawFn) -> dict[str, Any]:
    rank4 = (draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    axes = draw(st.sampled_from([[2, 3], [1, 2], [0, 1], [3, 2], [1, 3], [0, 3]]))
    sizes = [draw(st.one_of(st.integers(1, 12), st.just(rank4[a]))) for a in axes]
    assume(np.prod([s if i not in axes else sizes[axes.index(i)] for i, s in enumerate(rank4)]) <= 4096)
    return {"shape": rank4, "axes": axes, "sizes": sizes, "mode": draw(st.sampled_from(["linear", "nearest-neighbor"])),
            "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=resample_cases())
def test_resample2d(case: dict[str, Any]) -> None:
    x = np.random.default_rng(case["seed"]).uniform(-1, 1, case["shape"]).astype(np.float32)
    opts = {"mode": case["mode"], "sizes": case["sizes"], "axes": case["axes"]}
    paths = run_both(lambda b, hs: b.call("resample2d", {"input": hs["x"], **opts}), {"x": x})
    want = ref.resample2d(x, case["mode"], case["sizes"], case["axes"])
    compare(paths, [want], [8 * EPS32 * np.max(np.abs(x))])


# ------------------------------------------------------------------------------------------------ pad, slice, gather

@st.composite
def pad_cases(draw: st.DrawFn) -> dict[str, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    mode = draw(st.sampled_from(["constant", "edge", "reflection"]))
    limit = [d - 1 if mode == "reflection" else 5 for d in shape]
    begin = [draw(st.integers(0, m)) for m in limit]
    end = [draw(st.integers(0, m)) for m in limit]
    assume(np.prod([d + b + e for d, b, e in zip(shape, begin, end, strict=True)]) <= 4096)
    value = draw(st.sampled_from([0.0, -1.5, 3.0e38, float("inf")]))
    return {"shape": shape, "mode": mode, "begin": begin, "end": end, "value": value,
            "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=pad_cases())
def test_pad(case: dict[str, Any]) -> None:
    x = np.random.default_rng(case["seed"]).uniform(-1, 1, case["shape"]).astype(np.float32)
    opts = {"beginningPadding": case["begin"], "endingPadding": case["end"], "mode": case["mode"],
            "value": case["value"]}
    paths = run_both(lambda b, hs: b.call("pad", {"input": hs["x"], **opts}), {"x": x})
    # the spec casts the value to the tensor type first
    want = ref.pad(x, case["begin"], case["end"], case["mode"], float(np.float32(case["value"])))
    compare(paths, [want], [0.0])  # a copy: exact


@st.composite
def slice_cases(draw: st.DrawFn) -> dict[str, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    starts = [draw(st.integers(0, d - 1)) for d in shape]
    sizes = [draw(st.integers(1, d - s)) for d, s in zip(shape, starts, strict=True)]
    strides = [draw(st.one_of(st.integers(1, 3), st.sampled_from(HUGE))) for _ in shape]
    return {"shape": shape, "starts": starts, "sizes": sizes, "strides": strides,
            "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=slice_cases())
def test_slice(case: dict[str, Any]) -> None:
    x = np.random.default_rng(case["seed"]).uniform(-1, 1, case["shape"]).astype(np.float32)
    opts = {"starts": case["starts"], "sizes": case["sizes"], "strides": case["strides"]}
    paths = run_both(lambda b, hs: b.call("slice", {"input": hs["x"], **opts}), {"x": x})
    compare(paths, [ref.slice_(x, case["starts"], case["sizes"], case["strides"])], [0.0])


@st.composite
def gather_cases(draw: st.DrawFn) -> dict[str, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    axis = draw(st.integers(0, len(shape) - 1))
    itype = draw(st.sampled_from(["int32", "uint32", "int64"]))
    lo = 0 if itype == "uint32" else -(2**31 if itype == "int32" else 2**63)
    hi = 2**31 - 1 if itype == "int32" else (2**32 - 1 if itype == "uint32" else 2**63 - 1)
    edge = st.sampled_from([v for v in (lo, hi, -1, 0, shape[axis] - 1, shape[axis], -shape[axis],
                                        -shape[axis] - 1, 2**31, -(2**31) - 1, 2**32) if lo <= v <= hi])
    ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    count = int(np.prod(ishape)) if ishape else 1
    values = [draw(st.one_of(st.integers(lo, hi), edge, st.integers(-shape[axis], shape[axis] - 1).filter(
        lambda v: v >= lo))) for _ in range(count)]
    return {"shape": shape, "axis": axis, "indices": np.array(values, dtype=itype).reshape(ishape),
            "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=gather_cases())
def test_gather(case: dict[str, Any]) -> None:
    x = np.random.default_rng(case["seed"]).uniform(-1, 1, case["shape"]).astype(np.float32)
    idx = case["indices"]

    def build(b: GraphBuilder, hs: dict[str, Any]) -> Any:
        i = b.constant((idx.dtype.name, list(idx.shape)), idx)
        return b.call("gather", {"input": hs["x"], "indices": i, "axis": case["axis"]})

    paths = run_both(build, {"x": x})
    compare(paths, [ref.gather(x, idx, case["axis"])], [0.0])


# ------------------------------------------------------------------------------------------------ recurrent

ACTS = ["sigmoid", "tanh", "relu"]


@st.composite
def recurrent_cases(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(st.sampled_from(["gru", "lstm", "gruCell", "lstmCell"]))
    cell = op.endswith("Cell")
    gru = op.startswith("gru")
    direction = "forward" if cell else draw(st.sampled_from(["forward", "backward", "both"]))
    acts = [draw(st.sampled_from(ACTS)) for _ in range(2 if gru else 3)]
    return {"op": op, "steps": 1 if cell else draw(st.integers(1, 4)), "batch": draw(st.integers(1, 3)),
            "input": draw(st.integers(1, 4)), "hidden": draw(st.integers(1, 4)), "direction": direction,
            "dirs": 2 if direction == "both" else 1, "acts": acts if draw(st.booleans()) else None,
            "layout": draw(st.sampled_from(["zrn", "rzn"] if gru else ["iofg", "ifgo"])),
            "reset_after": draw(st.booleans()), "return_sequence": draw(st.booleans()),
            "optional": draw(st.sets(st.sampled_from(["bias", "recurrentBias", "initial", "peephole"]))),
            "scale": draw(st.sampled_from([0.5, 1.0, 4.0])), "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=recurrent_cases())
def test_recurrent(case: dict[str, Any]) -> None:
    op, hidden, batch, size = case["op"], case["hidden"], case["batch"], case["input"]
    gru, cell, dirs = op.startswith("gru"), op.endswith("Cell"), case["dirs"]
    gates = 3 if gru else 4
    rng = np.random.default_rng(case["seed"])

    def arr(*shape: int) -> np.ndarray:
        return (rng.uniform(-1, 1, shape) * case["scale"]).astype(np.float32)

    lead = () if cell else (dirs,)
    arrays = {"input": arr(batch, size) if cell else arr(case["steps"], batch, size),
              "weight": arr(*lead, gates * hidden, size), "recurrentWeight": arr(*lead, gates * hidden, hidden)}
    opt = case["optional"]
    if "bias" in opt:
        arrays["bias"] = arr(*lead, gates * hidden)
    if "recurrentBias" in opt:
        arrays["recurrentBias"] = arr(*lead, gates * hidden)
    if "peephole" in opt and not gru:
        arrays["peepholeWeight"] = arr(*lead, 3 * hidden)
    if cell:
        arrays["hiddenState"] = arr(batch, hidden)
        if not gru:
            arrays["cellState"] = arr(batch, hidden)
    elif "initial" in opt:
        arrays["initialHiddenState"] = arr(dirs, batch, hidden)
        if not gru:
            arrays["initialCellState"] = arr(dirs, batch, hidden)
    acts = case["acts"] or (["sigmoid", "tanh"] if gru else ["sigmoid", "tanh", "tanh"])
    options: dict[str, Any] = {"hiddenSize": hidden, "layout": case["layout"]}
    if case["acts"]:
        options["activations"] = case["acts"]
    if gru:
        options["resetAfter"] = case["reset_after"]
    if not cell:
        options.update(steps=case["steps"], direction=case["direction"], returnSequence=case["return_sequence"])

    def build(b: GraphBuilder, hs: dict[str, Any]) -> Any:
        return b.call(op, {**hs, **options})

    paths = run_both(build, arrays)
    g = arrays.get
    # the reference takes canonical gate orders: reorder the blocks of the given layout
    canon = "zrn" if gru else "iofg"

    def reorder(a: np.ndarray | None, axis: int) -> np.ndarray | None:
        if a is None:
            return None
        blocks = np.split(a, gates, axis=axis)
        return np.concatenate([blocks[case["layout"].index(ch)] for ch in canon], axis=axis)

    w, r = reorder(g("weight"), -2), reorder(g("recurrentWeight"), -2)
    b_, rb = reorder(g("bias"), -1), reorder(g("recurrentBias"), -1)
    if op == "gruCell":
        wants = [ref.gru_cell(g("input"), w, r, g("hiddenState"), hidden, b_, rb, case["reset_after"], canon, acts)]
    elif op == "lstmCell":
        wants = list(ref.lstm_cell(g("input"), w, r, g("hiddenState"), g("cellState"), hidden, b_, rb,
                                   g("peepholeWeight"), canon, acts))
    elif op == "gru":
        last, seq = ref.gru(g("input"), w, r, hidden, b_, rb, g("initialHiddenState"), case["reset_after"],
                            case["direction"], canon, acts)
        wants = [last, seq] if case["return_sequence"] else [last]
    else:
        last, cs, seq = ref.lstm(g("input"), w, r, hidden, b_, rb, g("peepholeWeight"), g("initialHiddenState"),
                                 g("initialCellState"), case["direction"], canon, acts)
        wants = [last, cs, seq] if case["return_sequence"] else [last, cs]
    # the kernels compute in float64 and round once: a few float32 ulp, plus what relu lets grow
    tols = [4 * EPS32 * (np.abs(wv) + 1) for wv in wants]
    compare(paths, wants, tols)


@pytest.mark.skipif(not native.available(), reason="C kernels not built (make build)")
@pytest.mark.parametrize("groups,fn", [(2, "depthwise"), (1, "conv_nchw")])
def test_the_c_path_is_really_taken(monkeypatch: pytest.MonkeyPatch, groups: int, fn: str) -> None:
    """A conv2d with a constant filter and huge geometry reaches the C kernel (else the fuzzer would compare
    NumPy with NumPy): the real kernel, wrapped to count its calls, with the compiled plan off (it calls the C
    kernels itself: test_the_plan_takes_huge_geometry)."""
    monkeypatch.setenv("PYODIDE_WEBNN_PLAN", "0")
    calls = []
    real = getattr(native, fn)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(fn)
        return real(*args, **kwargs)

    monkeypatch.setattr(native, fn, counted)
    big = 2**31 - 1
    filt = np.ones((2, 2 // groups, 1, 2), np.float32)
    x = np.arange(66, dtype=np.float32).reshape(1, 2, 1, 33)
    (y,), _ = run_both(lambda b, hs: b.call("conv2d", {
        "input": hs["x"], "filter": b.constant(("float32", list(filt.shape)), filt), "groups": groups,
        "padding": [0, 0, big, 1], "strides": [1, 2], "dilations": [1, big]}), {"x": x}, numpy_too=False)
    assert calls == [fn]
    want = ref.conv2d(x, filt, None, [0, 0, big, 1], [1, 2], [1, big], groups, (1, 17))
    close(y, want, 0.0, "edge conv2d, C path")


@pytest.mark.skipif(not native.available(), reason="C kernels not built (make build)")
@pytest.mark.parametrize("groups", [2, 1])
def test_the_plan_takes_huge_geometry(groups: int) -> None:
    """The same huge geometry through the compiled plan (its words checked with conv_fits): the conv is a C step
    of the plan, and gives the definition's values; with the C kernels switched off the NumPy steps run."""
    big = 2**31 - 1
    filt = np.ones((2, 2 // groups, 1, 2), np.float32)
    x = np.arange(66, dtype=np.float32).reshape(1, 2, 1, 33)
    b = GraphBuilder()
    y = b.call("conv2d", {"input": b.input("x", ("float32", [1, 2, 1, 33])),
                          "filter": b.constant(("float32", list(filt.shape)), filt), "groups": groups,
                          "padding": [0, 0, big, 1], "strides": [1, 2], "dilations": [1, big]})
    exe = prepare(b.build({"y": y}))
    assert exe.plan is not None and exe.plan.steps_in_c == 1
    want = ref.conv2d(x, filt, None, [0, 0, big, 1], [1, 2], [1, big], groups, (1, 17))
    close(exe.run({"x": x})["y"], want, 0.0, "edge conv2d, plan")
    segments_run = []
    real = exe.plan.run_segment
    exe.plan.run_segment = lambda seg, vals: (segments_run.append(seg), real(seg, vals))  # type: ignore[method-assign]
    native.use_native(False)
    try:
        close(exe.run({"x": x})["y"], want, 0.0, "edge conv2d, C switched off")
    finally:
        native.use_native(True)
    assert segments_run == [], "with the C kernels switched off, no plan segment runs"
    exe.run({"x": x})
    assert len(segments_run) == 1
