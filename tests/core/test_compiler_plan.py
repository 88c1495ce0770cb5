"""The compiled plan (py_core/compiler/plan.py, py_core/kernels/native/webnn_plan.c): runs of C-capable steps in
one call each give the reference kernels' results (the NumPy reference is the oracle), on MobileNetV2-like and
encoder-like graphs, with Python steps between segments; outputs are the caller's, inputs are never written."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_check import NONE, compare, const, random_inputs

from py_core.builder import GraphBuilder
from py_core.compiler import CompileOptions, Segment
from py_core.compiler.plan import PlanError, _check_bias
from py_core.kernels import cforms, native
from py_core.runtime.executor import prepare

pytestmark = pytest.mark.skipif(not native.available(), reason="the C kernels are not built")
PLAN = CompileOptions()
NO_PLAN = CompileOptions(plan=False)


def segments(exe) -> list[Segment]:
    return [] if exe.plan is None else exe.plan.segments


def c_steps(exe) -> int:
    return 0 if exe.plan is None else exe.plan.steps_in_c


def assert_results_survive(exe) -> None:
    """A later run writes nothing into an earlier run's results."""
    first = exe.run(random_inputs(exe, 11))
    saved = {k: v.copy() for k, v in first.items()}
    exe.run(random_inputs(exe, 12))
    for name in saved:
        np.testing.assert_array_equal(first[name], saved[name], err_msg=name)


def mobilenet_block(layout: str, batch: int = 1):
    """Stem conv (im2col), depthwise + relu6, 1x1 expand/project, a residual add, global average pool,
    reshape and a classifier gemm: the shapes of MobileNetV2's layers, small."""
    nhwc = layout == "nhwc"

    def filt(b, o, i, k, seed):
        return const(b, (o, k, k, i) if nhwc else (o, i, k, k), seed=seed)

    def make(b):
        shape = [batch, 16, 16, 3] if nhwc else [batch, 3, 16, 16]
        x = b.input("x", {"dataType": "float32", "shape": shape})
        kw = {"inputLayout": "nhwc", "filterLayout": "ohwi"} if nhwc else {}
        y = b.clamp(b.conv2d(x, filt(b, 16, 3, 3, 1), padding=[1, 1, 1, 1], strides=[2, 2],
                             bias=const(b, (16,), seed=2), **kw), minValue=0, maxValue=6)
        dw_filter = const(b, (1, 3, 3, 16) if nhwc else (16, 1, 3, 3), seed=3)
        d = b.clamp(b.conv2d(y, dw_filter, padding=[1, 1, 1, 1], groups=16, bias=const(b, (16,), seed=4),
                             **({"inputLayout": "nhwc", "filterLayout": "ihwo"} if nhwc else {})),
                    minValue=0, maxValue=6)
        p = b.conv2d(d, filt(b, 16, 16, 1, 5), bias=const(b, (16,), seed=6), **kw)
        r = b.add(p, y)
        e = b.relu(b.conv2d(r, filt(b, 32, 16, 1, 7), **kw))
        g = b.averagePool2d(e, layout=layout)
        flat = b.reshape(g, [batch, 32])
        return {"logits": b.gemm(flat, const(b, (32, 10), seed=8), c=const(b, (10,), seed=9)), "features": r}

    return make


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("batch", [1, 2])
def test_a_mobilenet_block_runs_in_one_c_call(layout: str, batch: int) -> None:
    exe = compare(mobilenet_block(layout, batch), PLAN, rtol=1e-4, atol=1e-4, runs=3)
    assert len(segments(exe)) == 1 and c_steps(exe) == len(exe.steps), exe.notes
    ref = prepare(_build(mobilenet_block(layout, batch)), NO_PLAN)
    assert ref.plan is None
    feeds = random_inputs(exe, 5)
    got, want = exe.run(feeds), ref.run(feeds)
    for name in want:  # the same C kernels step by step: equal up to the order of a few sums
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


def _build(make):
    b = GraphBuilder()
    return b.build(make(b))


def encoder_block(b):
    """One transformer block as onnxruntime-web's WebNN EP emits it: layerNorm, packed products with bias,
    attention through reshape/transpose (Python) and batched matmul, softmax, GELU as div/erf/add/mul/mul."""
    s, d, h = 8, 32, 2
    x = b.input("x", {"dataType": "float32", "shape": [1, s, d]})
    ln = b.layerNormalization(x, scale=const(b, (d,), seed=1), bias=const(b, (d,), seed=2), axes=[2])
    q = b.add(b.matmul(ln, const(b, (d, d), seed=3)), const(b, (d,), seed=4))
    k = b.add(b.matmul(ln, const(b, (d, d), seed=5)), const(b, (d,), seed=6))
    v = b.add(b.matmul(ln, const(b, (d, d), seed=7)), const(b, (d,), seed=8))

    def heads(t):
        return b.transpose(b.reshape(t, [1, s, h, d // h]), permutation=[0, 2, 1, 3])

    scores = b.div(b.matmul(heads(q), b.transpose(heads(k), permutation=[0, 1, 3, 2])),
                   const(b, (1,), seed=9))
    att = b.matmul(b.softmax(scores, axis=3), heads(v))
    merged = b.reshape(b.transpose(att, permutation=[0, 2, 1, 3]), [1, s, d])
    x2 = b.add(x, b.add(b.matmul(merged, const(b, (d, d), seed=10)), const(b, (d,), seed=11)))
    ln2 = b.layerNormalization(x2, scale=const(b, (d,), seed=12), bias=const(b, (d,), seed=13), axes=[2])
    up = b.add(b.matmul(ln2, const(b, (d, 4 * d), seed=14)), const(b, (4 * d,), seed=15))
    half = b.constant({"dataType": "float32", "shape": []}, np.array(0.5, np.float32))
    root2 = b.constant({"dataType": "float32", "shape": []}, np.array(1.4142135, np.float32))
    one = b.constant({"dataType": "float32", "shape": []}, np.array(1.0, np.float32))
    gelu = b.mul(b.mul(up, b.add(b.erf(b.div(up, root2)), one)), half)
    out = b.add(x2, b.add(b.matmul(gelu, const(b, (4 * d, d), seed=16)), const(b, (d,), seed=17)))
    return {"y": out, "probs": b.sigmoid(scores)}


def test_an_encoder_block_runs_in_one_c_call() -> None:
    exe = compare(encoder_block, PLAN, rtol=1e-4, atol=1e-4, runs=3)
    assert len(segments(exe)) == 1 and c_steps(exe) == len(exe.steps), exe.notes
    assert_results_survive(exe)


def test_results_are_the_callers_and_inputs_are_never_written() -> None:
    exe = prepare(_build(mobilenet_block("nchw")), PLAN)
    feeds = random_inputs(exe, 1)
    kept = {k: v.copy() for k, v in feeds.items()}
    first = exe.run(feeds)
    saved = {k: v.copy() for k, v in first.items()}
    exe.run(random_inputs(exe, 2))  # a second run must not write into the first run's results
    for name in saved:
        np.testing.assert_array_equal(first[name], saved[name])
    for name in feeds:
        np.testing.assert_array_equal(feeds[name], kept[name])
    second = exe.run(feeds)
    assert all(not np.shares_memory(first[n], second[n]) for n in first)


def test_python_views_of_plan_buffers_keep_their_values_and_are_copied_out() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
        a = b.relu(b.mul(x, x))  # in a plan buffer
        view = b.slice(a, [0, 1], [4, 4], strides=[1, 2])  # a Python view of it, alive across later C steps
        c = b.add(b.mul(x, const(b, (6,))), const(b, (4, 6), seed=2))  # may reuse a dead buffer
        d = b.sub(c, x)
        e = b.tanh(b.reshape(d, [24]))  # Python, reading a reshape of a plan buffer
        return {"view": view, "d": d, "t": b.add(b.slice(d, [0, 0], [4, 2]), view), "e": e,
                "f": b.sub(b.reshape(e, [6, 4]), b.transpose(a, permutation=[1, 0]))}

    exe = compare(make, PLAN, runs=3)
    assert len(segments(exe)) == 3, [type(s).__name__ for s in exe._items]
    assert_results_survive(exe)


def test_strided_and_broadcast_operands() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [3, 4, 5]})
        t = b.transpose(x, permutation=[0, 2, 1])  # a strided view read by C: copied per run
        return {"a": b.add(t, const(b, (4,))), "b": b.mul(const(b, (1, 1), seed=3), t),
                "c": b.div(t, const(b, (5, 4), seed=4)), "d": b.sub(const(b, (3, 5, 4), seed=5), t),
                "e": b.add(b.reshape(x, [60]), b.reshape(x, [60]))}

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) >= 5


def test_unsupported_broadcasts_stay_python() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [3, 1]})
        return {"y": b.add(x, const(b, (1, 4)))}  # both operands broadcast: no C form

    exe = compare(make, PLAN)
    assert exe.plan is None


def test_the_switch_turns_the_plan_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYODIDE_WEBNN_PLAN", "0")
    assert not CompileOptions.default().plan
    assert prepare(_build(mobilenet_block("nchw")), CompileOptions.default()).plan is None
    monkeypatch.setenv("PYODIDE_WEBNN_PLAN", "1")
    assert CompileOptions.default().plan
    assert prepare(_build(mobilenet_block("nchw")), NONE).plan is None  # no compiler, no plan


def test_words_are_checked_before_c_sees_them() -> None:
    with pytest.raises(PlanError):  # a bias mode without a bias buffer: C would read address 0
        _check_bias(cforms.SGEMM_PACKED, [4, 4, 4, 0, 4, 1, 1, 2, 4, -1, native.BIAS_PER_COL, 0, 0, 0])
    fn = native.run_plan_fn()
    assert fn is not None
    table = np.zeros(1, np.int64)
    for words in ([99, 2], [cforms.COPY, 1], [cforms.COPY, 9, 0]):  # unknown opcode, bad length, past the end
        w = np.array(words, np.int64)
        assert fn(w.ctypes.data, w.size, table.ctypes.data) == 1


def test_binary_forms_cover_numpy_broadcasting_of_trailing_shapes() -> None:
    rng = np.random.default_rng(0)
    for a_shape, b_shape in [((2, 3, 4), (4,)), ((2, 3, 4), (1,)), ((2, 3, 4), (3, 4)), ((4,), (2, 3, 4)),
                             ((2, 3, 4), (2, 3, 4)), ((), (5,)), ((2, 1, 4), (2, 1, 4))]:
        def make(b, a_shape=a_shape, b_shape=b_shape):
            x = b.input("x", {"dataType": "float32", "shape": list(a_shape)})
            y = b.input("y", {"dataType": "float32", "shape": list(b_shape)})
            return {"s": b.sub(x, y), "q": b.div(y, x)}

        exe = compare(make, PLAN)
        assert c_steps(exe) == 2, (a_shape, b_shape)
    del rng


@pytest.mark.parametrize("make", [mobilenet_block("nchw"), mobilenet_block("nhwc", 2), encoder_block],
                         ids=["mobilenet-nchw", "mobilenet-nhwc", "encoder"])
def test_a_whole_graph_runs_with_one_call_and_no_python(make) -> None:
    exe = prepare(_build(make), PLAN)
    direct = exe.direct()
    assert direct is not None and direct.fn and direct.words and direct.table
    assert set(direct.inputs) == set(exe.input_descs) and set(direct.outputs) == set(exe.output_descs)
    for r in range(2):
        feeds = random_inputs(exe, r)
        want = exe.run(feeds)
        got = direct.run(feeds)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("make", [mobilenet_block("nchw"), encoder_block], ids=["mobilenet-nchw", "encoder"])
def test_a_whole_graph_call_runs_in_place_on_arrays_of_the_callers(make) -> None:
    """The worker's in-place dispatch (polyfill/src/engine/direct.js runC): each input's and output's table entries get
    the address of an array of its own (its tensors'), the call reads and writes those; `run` points them back."""
    exe = prepare(_build(make), PLAN)
    direct = exe.direct()
    assert direct is not None and direct.call is not None
    assert set(direct.input_entries) == set(direct.inputs) and all(direct.output_entries.values())
    table = direct.keep[0]
    assert table.__array_interface__["data"][0] == direct.table
    feeds = random_inputs(exe, 7)
    want = exe.run(feeds)
    ins = {n: np.ascontiguousarray(a, np.float32) for n, a in feeds.items()}
    outs = {n: np.full_like(w, np.nan) for n, w in want.items()}
    for arrays, entries in ((ins, direct.input_entries), (outs, direct.output_entries)):
        for name, idxs in entries.items():
            table[list(idxs)] = arrays[name].__array_interface__["data"][0]
    assert direct.call(direct.words, direct.count, direct.table) == 0
    for name in want:
        np.testing.assert_array_equal(outs[name], want[name], err_msg=name)
    got = direct.run(random_inputs(exe, 8))  # its own buffers again: the arrays above are not written
    for name in want:
        np.testing.assert_array_equal(outs[name], want[name], err_msg=name)
        np.testing.assert_array_equal(got[name], exe.run(random_inputs(exe, 8))[name], err_msg=name)


def test_a_one_operator_graph_on_a_few_floats_runs_directly() -> None:
    """A lone small step stays Python inside a bigger graph, but as the whole graph it lowers: the worker then runs
    it with no Python (the 1-op round trip)."""
    def make(b):
        return {"y": b.relu(b.input("x", {"dataType": "float32", "shape": [4]}))}

    exe = prepare(_build(make), PLAN)
    direct = exe.direct()
    assert direct is not None
    x = np.array([-1.5, 0.0, 2.0, -0.0], np.float32)
    np.testing.assert_array_equal(direct.run({"x": x})["y"], np.maximum(x, 0))
    np.testing.assert_array_equal(exe.run({"x": x})["y"], np.maximum(x, 0))


def test_no_direct_run_with_python_steps() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [64, 64]})
        return {"y": b.tanh(b.relu(b.add(x, x)))}  # tanh has no C form

    assert prepare(_build(make), PLAN).direct() is None


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_split_lowers_with_every_output(axis: int) -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [4, 6, 8]})
        y = b.relu(x)
        size = [4, 6, 8][axis]
        parts = b.split(y, [1, size - 3, 2], axis=axis)
        return {"p0": b.add(parts[0], parts[0]), "p1": parts[1], "p2": b.mul(parts[2], parts[2])}

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) == len(exe.steps) and len(segments(exe)) == 1
    assert_results_survive(exe)


def test_unary_epilogues_and_in_place_steps_with_options_lower() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 8, 16, 16]})
        y = b.sigmoid(b.conv2d(x, const(b, (8, 8, 1, 1)), bias=const(b, (8,), seed=2)))  # sigmoid: an epilogue
        z = b.clamp(b.mul(y, y), minValue=0.1, maxValue=0.6)  # clamp in place, its options kept for the plan
        return {"z": b.add(z, y)}

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) == len(exe.steps) and len(segments(exe)) == 1, [s.op for s in exe.steps]


def test_concat_and_constant_pad_lower() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 3, 5, 4]})
        y = b.relu(x)
        p = b.pad(y, [0, 1, 2, 0], [0, 0, 1, 3], value=-1.5)
        c = b.concat([y, b.mul(y, y), y], 1)
        return {"p": b.add(p, p), "c": b.sub(c, c), "cat": b.concat([b.relu(y), const(b, (1, 3, 5, 2))], 3)}

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) == len(exe.steps) and len(segments(exe)) == 1, [s.op for s in exe.steps]
    assert_results_survive(exe)


def test_wpt_passes_the_same_with_every_c_form_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The WPT conformance vectors as an oracle for every C form: lone small steps lowered too (they stay Python
    by default), and the pass list equals the one without the plan."""
    from helpers import wpt_dir

    import py_core.compiler.plan as plan_module
    from py_core.testing import wpt

    lowered = []
    build = plan_module.build_plan

    def counting(*args, **kwargs):
        p = build(*args, **kwargs)
        lowered.append(0 if p is None else p.steps_in_c)
        return p

    monkeypatch.setattr("py_core.runtime.executor.build_plan", counting)
    monkeypatch.setattr(plan_module, "SMALL", 0)
    with_plan = {r.id: r.status for r in wpt.run_dir(wpt_dir())}
    monkeypatch.setenv("PYODIDE_WEBNN_PLAN", "0")
    without = {r.id: r.status for r in wpt.run_dir(wpt_dir())}
    assert with_plan == without
    assert sum(1 for n in lowered if n) > 100, sum(1 for n in lowered if n)  # the cases the C forms run (139)


def test_prelu_lowers() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 8, 8, 16]})
        y = b.conv2d(x, const(b, (16, 1, 1, 16)), inputLayout="nhwc", filterLayout="ohwi")
        return {"y": b.prelu(y, const(b, (16,), seed=2)), "z": b.prelu(const(b, (8, 16), seed=3), b.relu(y)),
                "c": b.prelu(y, const(b, (8, 1, 16), seed=4))}  # broadcast in the middle: no C form

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) == len(exe.steps) - 1, [s.op for s in exe.steps]


def _against_numpy(exe, feeds: dict[str, np.ndarray], tol: float = 0.0) -> None:
    """The plan's outputs equal the same executable's with the C kernels off (NumPy's steps): bit for bit, or
    within `tol` (relative and absolute) where a C compiler may contract a * b + c into one rounding (gcc does on
    x86; wasm has no such instruction, and there the two are bit-identical)."""
    got = exe.run({k: v.copy() for k, v in feeds.items()})
    native.use_native(False)
    try:
        want = exe.run({k: v.copy() for k, v in feeds.items()})
    finally:
        native.use_native(True)
    for name in want:
        if tol:
            np.testing.assert_allclose(got[name], want[name], rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# (input [H, W], window, strides, dilations, padding [t, b, l, r], rounding): all-padding windows (-inf), windows
# past the input under ceil rounding, dilations wider than the input
POOLS = [((8, 8), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "floor"),
         ((7, 9), (3, 3), (2, 1), (1, 1), (1, 1, 2, 0), "ceil"),
         ((5, 6), (2, 3), (1, 2), (2, 3), (3, 0, 0, 4), "floor"),
         ((4, 4), (3, 3), (3, 3), (1, 1), (4, 4, 4, 4), "ceil"),
         ((3, 11), (1, 5), (1, 3), (1, 2), (0, 0, 0, 0), "floor")]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize(("hw", "window", "strides", "dilations", "padding", "rounding"), POOLS)
def test_max_pool_lowers_and_equals_numpy(layout: str, hw, window, strides, dilations, padding, rounding) -> None:
    shape = [2, 6, *hw] if layout == "nchw" else [2, *hw, 6]  # 6 channels: a vector of 4 and a tail of 2

    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": shape})
        return {"y": b.maxPool2d(x, windowDimensions=list(window), strides=list(strides),
                                 dilations=list(dilations), padding=list(padding), layout=layout,
                                 outputShapeRounding=rounding)}

    exe = prepare(_build(make), PLAN)
    assert c_steps(exe) == len(exe.steps) == 1
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = np.nan  # NaN wins a max, as np.maximum has it
    flat[3::11] = -np.inf
    _against_numpy(exe, {"x": x})


@pytest.mark.parametrize(("shape", "axes", "sizes"), [([1, 5, 7, 3], [1, 2], [9, 4]), ([2, 3, 6, 4], [2, 3], [3, 10]),
                                                      ([1, 16, 16, 8], [1, 2], [32, 32])])
def test_linear_resample_lowers_and_equals_numpy(shape, axes, sizes) -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": shape})
        return {"y": b.resample2d(x, mode="linear", sizes=sizes, axes=axes)}

    exe = prepare(_build(make), PLAN)
    assert c_steps(exe) == len(exe.steps) == 1
    _against_numpy(exe, random_inputs(exe, 5), tol=1e-6)
    compare(make, PLAN, rtol=0, atol=0)  # the reference's own C path: the same kernel on the same tables


def test_pools_and_resamples_inside_a_graph_join_its_segment() -> None:
    """A TFLite-like block (conv, max pool, upsampling, add): one segment: maxPool2d and resample2d
    have C forms, so they do not split it in three."""
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1, 16, 16, 8]})
        y = b.conv2d(x, const(b, (8, 3, 3, 8)), padding=[1, 1, 1, 1], inputLayout="nhwc", filterLayout="ohwi")
        p = b.maxPool2d(b.relu(y), windowDimensions=[2, 2], strides=[2, 2], layout="nhwc")
        u = b.resample2d(b.relu(p), mode="linear", sizes=[16, 16], axes=[1, 2])
        return {"y": b.add(u, y)}

    exe = compare(make, PLAN, runs=2)
    assert c_steps(exe) == len(exe.steps) and len(segments(exe)) == 1, [s.op for s in exe.steps]
