"""Gather and scatter operators against onnxruntime (Gather, GatherElements, GatherND, ScatterElements,
ScatterND models built with onnx.helper), end to end through GraphBuilder and the executor; negative and
out-of-range indices, validation errors and the WPT vectors."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from helpers import DTYPES, assert_same, assert_type_error, check_wpt_case, rand, run_graph, wpt_cases
from onnx import helper

from py_core.builder import GraphBuilder
from py_core.runtime.executor import prepare

INDEX_TYPES = ["int32", "uint32", "int64"]
CASES = [(dt, it, seed) for dt in DTYPES for it in INDEX_TYPES for seed in range(2)]


def onnx_run(op: str, inputs: list[np.ndarray], **attrs) -> np.ndarray:
    """One ONNX node over the given arrays, run by onnxruntime on CPU."""
    names = [f"i{k}" for k in range(len(inputs))]
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in zip(names, inputs, strict=True)]
    out = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(inputs[0].dtype), None)
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], "g", vi, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs, strict=True)))[0]


def spec_index(idx: np.ndarray, size) -> np.ndarray:
    """The index rule from the spec and the WPT vectors: negative counts from the end, then clamp."""
    i = idx.astype(np.int64)
    return np.asarray(np.clip(np.where(i < 0, i + size, i), 0, np.asarray(size) - 1))


def rand_indices(rng, shape, size, itype: str, out_of_range: bool = True) -> np.ndarray:
    """Indices in [-size, size) (unsigned: [0, size)), plus some far outside when out_of_range."""
    lo = 0 if itype == "uint32" else -size
    idx = rng.integers(lo, size, size=shape)
    if out_of_range:
        sign = 1 if itype == "uint32" else rng.choice([-1, 1], shape)
        far = rng.integers(size, size + 1000, size=shape) * sign
        idx = np.where(rng.random(shape) < 0.2, far, idx)
    return np.asarray(idx).astype(itype).reshape(shape)


# ---------------------------------------------------------------------------------------------- gathers

@pytest.mark.parametrize("dtype,itype,seed", CASES)
def test_gather(dtype, itype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5)))], dtype)
    axis = int(rng.integers(x.ndim))
    idx = rand_indices(rng, [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3)))],
                       x.shape[axis], itype)
    (out,) = run_graph(lambda b, h: b.gather(h["x"], h["i"], axis=axis), x=x, i=idx)
    assert_same(out, onnx_run("Gather", [x, spec_index(idx, x.shape[axis])], axis=axis))


@pytest.mark.parametrize("dtype,itype,seed", CASES)
def test_gather_elements(dtype, itype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5)))], dtype)
    axis = int(rng.integers(x.ndim))
    shape = list(x.shape)
    shape[axis] = int(rng.integers(1, 5))
    idx = rand_indices(rng, shape, x.shape[axis], itype)
    (out,) = run_graph(lambda b, h: b.gatherElements(h["x"], h["i"], axis=axis), x=x, i=idx)
    assert out.shape == idx.shape  # the indices' shape (WPT), not the input's
    assert_same(out, onnx_run("GatherElements", [x, spec_index(idx, x.shape[axis])], axis=axis))


@pytest.mark.parametrize("dtype,itype,seed", CASES)
def test_gather_nd(dtype, itype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5)))], dtype)
    k = int(rng.integers(1, x.ndim + 1))
    lead = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    cols = [rand_indices(rng, lead, x.shape[j], itype) for j in range(k)]
    idx = np.stack(cols, axis=-1) if lead else np.array([c.item() for c in cols], dtype=itype)
    (out,) = run_graph(lambda b, h: b.gatherND(h["x"], h["i"]), x=x, i=idx)
    assert_same(out, onnx_run("GatherND", [x, spec_index(idx, np.array(x.shape[:k]))]))


# --------------------------------------------------------------------------------------------- scatters

def _distinct_along(rng, shape, axis: int, size: int) -> np.ndarray:
    """Indices whose targets are distinct in every fibre along `axis` (duplicates are unspecified)."""
    full = list(shape)
    full[axis] = size
    perm = np.argsort(rng.random(full), axis=axis)
    return np.take(perm, np.arange(shape[axis]), axis=axis)


@pytest.mark.parametrize("dtype,itype,seed", CASES)
def test_scatter_elements(dtype, itype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5)))], dtype)
    axis = int(rng.integers(x.ndim))
    shape = list(x.shape)
    shape[axis] = int(rng.integers(1, x.shape[axis] + 1))
    idx = _distinct_along(rng, shape, axis, x.shape[axis])
    if itype != "uint32":  # the same targets, half of them written as negative indices
        idx = np.where(rng.random(shape) < 0.5, idx - x.shape[axis], idx)
    idx = idx.astype(itype)
    upd = rand(rng, shape, dtype)
    (out,) = run_graph(lambda b, h: b.scatterElements(h["x"], h["i"], h["u"], axis=axis), x=x, i=idx, u=upd)
    assert_same(out, onnx_run("ScatterElements", [x, idx.astype(np.int64), upd], axis=axis))


@pytest.mark.parametrize("dtype,itype,seed", CASES)
def test_scatter_nd(dtype, itype, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5)))], dtype)
    k = int(rng.integers(1, x.ndim + 1))
    cells = int(np.prod(x.shape[:k]))
    lead = [int(rng.integers(1, cells + 1))] if rng.random() < 0.7 else []
    flat = rng.permutation(cells)[: lead[0] if lead else 1]
    idx = np.stack(np.unravel_index(flat, x.shape[:k]), axis=-1).reshape(lead + [k])
    if itype != "uint32":
        idx = np.where(rng.random(idx.shape) < 0.5, idx - np.array(x.shape[:k]), idx)
    idx = idx.astype(itype)
    upd = rand(rng, lead + list(x.shape[k:]), dtype)
    (out,) = run_graph(lambda b, h: b.scatterND(h["x"], h["i"], h["u"]), x=x, i=idx, u=upd)
    assert_same(out, onnx_run("ScatterND", [x, idx.astype(np.int64), upd]))


def test_out_of_range_indices_clamp():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [
        (lambda b, h: b.gather(h["x"], h["i"]), np.array([-10, 7, -1], np.int32), x[[0, 2, 2]]),
        (lambda b, h: b.gather(h["x"], h["i"], axis=1), np.array(2**63 - 1, np.int64), x[:, 3]),
        (lambda b, h: b.gatherElements(h["x"], h["i"], axis=1), np.full((3, 1), -(2**31), np.int32),
         x[:, :1]),
        (lambda b, h: b.gatherND(h["x"], h["i"]), np.array([[9, -9]], np.int64), x[[2], [0]]),
    ]
    for build, idx, want in cases:
        (out,) = run_graph(build, x=x, i=idx)
        assert_same(out, np.asarray(want, np.float32))
    u = np.array([[-1.0], [-2.0], [-3.0]], np.float32)
    (out,) = run_graph(lambda b, h: b.scatterElements(h["x"], h["i"], h["u"], axis=1), x=x,
                       i=np.array([[99], [-99], [4]]).astype(np.uint32), u=u)
    want = x.copy()
    want[0, 3], want[1, 3], want[2, 3] = -1, -2, -3  # uint32 -99 wraps to a huge value: clamped to 3
    assert_same(out, want)
    (out,) = run_graph(lambda b, h: b.scatterND(h["x"], h["i"], h["u"]), x=x, i=np.array([[-7]], np.int64),
                       u=np.full((1, 4), 5, np.float32))
    want = x.copy()
    want[0] = 5
    assert_same(out, want)


def test_scatter_does_not_modify_its_input():
    x = np.zeros((2, 2), np.int8)
    b = GraphBuilder()
    h = b.input("x", ("int8", [2, 2]))
    i = b.constant(("int32", [1, 2]), np.array([[1, 1]], np.int32))
    s = b.scatterND(h, i, b.constant(("int8", [1]), np.array([9], np.int8)))
    res = prepare(b.build({"s": s, "t": b.transpose(h)})).run({"x": x})
    assert res["s"][1, 1] == 9 and not res["t"].any() and not x.any()


# ------------------------------------------------------------------------------------------- validation

F = ("float32", [2, 3, 4])
I = ("int32", [2, 3, 4])
ERRORS = [
    ("gather", [F, ("int32", [5])], lambda b, x, i: b.gather(x, i, axis=3, label="lbl"), "axis 3"),
    ("gather", [F, ("float32", [5])], lambda b, x, i: b.gather(x, i, label="lbl"), "indices data type"),
    ("gather", [F, ("uint8", [5])], lambda b, x, i: b.gather(x, i, label="lbl"), "indices data type"),
    ("gather", [("float32", []), ("int32", [1])], lambda b, x, i: b.gather(x, i, label="lbl"), "rank 0"),
    ("gather", [("float32", [1] * 5), ("int32", [1] * 5)], lambda b, x, i: b.gather(x, i, label="lbl"),
     "rank 9"),
    ("gather", [F, ("int32", [5])], lambda b, x, i: b.gather(x, i, axis=-1, label="lbl"), "unsigned long"),
    ("gatherElements", [("float32", []), ("int32", [])], lambda b, x, i: b.gatherElements(x, i, label="lbl"),
     "rank 0"),
    ("gatherElements", [F, ("int32", [2, 3])], lambda b, x, i: b.gatherElements(x, i, label="lbl"),
     "indices rank 2"),
    ("gatherElements", [F, ("int32", [5, 3, 5])], lambda b, x, i: b.gatherElements(x, i, label="lbl"),
     "except on axis 0"),
    ("gatherElements", [F, I], lambda b, x, i: b.gatherElements(x, i, axis=3, label="lbl"), "axis 3"),
    ("gatherElements", [F, ("int8", [2, 3, 4])], lambda b, x, i: b.gatherElements(x, i, label="lbl"),
     "indices data type"),
    ("gatherND", [F, ("int32", [2, 4])], lambda b, x, i: b.gatherND(x, i, label="lbl"), "coordinate size 4"),
    ("gatherND", [F, ("int32", [])], lambda b, x, i: b.gatherND(x, i, label="lbl"), "rank 0"),
    ("gatherND", [("float32", [1] * 8), ("int32", [1, 1, 1])], lambda b, x, i: b.gatherND(x, i, label="lbl"),
     "rank 9"),
    ("scatterElements", [F, I, ("int32", [2, 3, 4])],
     lambda b, x, i, u: b.scatterElements(x, i, u, label="lbl"), "must match input"),
    ("scatterElements", [F, I, ("float32", [2, 3, 3])],
     lambda b, x, i, u: b.scatterElements(x, i, u, label="lbl"), "updates shape"),
    ("scatterElements", [F, ("int32", [2, 2, 4]), ("float32", [2, 2, 4])],
     lambda b, x, i, u: b.scatterElements(x, i, u, label="lbl"), "except on axis 0"),
    ("scatterElements", [F, I, F], lambda b, x, i, u: b.scatterElements(x, i, u, axis=5, label="lbl"),
     "axis 5"),
    ("scatterND", [F, ("int32", [2, 2]), ("float32", [2, 3])],
     lambda b, x, i, u: b.scatterND(x, i, u, label="lbl"), "must be [2, 4]"),
    ("scatterND", [F, ("int32", [2, 4]), ("float32", [2])],
     lambda b, x, i, u: b.scatterND(x, i, u, label="lbl"), "coordinate size 4"),
    ("scatterND", [F, ("uint64", [2, 1]), ("float32", [2, 3, 4])],
     lambda b, x, i, u: b.scatterND(x, i, u, label="lbl"), "indices data type"),
]


@pytest.mark.parametrize("op,descs,call,fragment", ERRORS)
def test_validation_errors(op, descs, call, fragment):
    b = GraphBuilder()
    hs = [b.input(f"x{i}", d) for i, d in enumerate(descs)]
    assert_type_error(lambda: call(b, *hs), "lbl", op, fragment)


@pytest.mark.parametrize("case", wpt_cases("gather"))
def test_wpt_vectors(case):
    check_wpt_case(case)


def test_indices_are_intp_for_wasm32():
    """Pyodide's NumPy (wasm32) indexes with int32 intp and refuses int64 index arrays: kernels convert."""
    from py_core.kernels.gather import _normalize
    for itype in INDEX_TYPES:
        assert _normalize(np.array([-1, 5]).astype(itype), 3).dtype == np.intp
