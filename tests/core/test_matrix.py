"""gemm and matmul against torch in float64 and an onnxruntime Gemm model, plus the validation errors.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gemm"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from helpers import assert_close_terms, assert_type_error, run_op, t64, wpt_json
from onnx import TensorProto, helper

import py_core.kernels.matrix as matrix_kernels
from py_core.builder import GraphBuilder
from py_core.kernels import native

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def random_batch(rng: np.random.Generator, rank: int) -> list[int]:
    return [int(d) for d in rng.integers(1, 4, size=rank)]


@pytest.mark.parametrize("seed", range(40))
def test_matmul_random(seed):
    rng = np.random.default_rng(seed)
    dtype = F16 if seed % 3 == 0 else F32
    m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
    ra, rb = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    batch = random_batch(rng, max(ra, rb) - 2)
    # broadcast: drop leading dims and set random dims to 1 on either side
    ba = [1 if rng.random() < 0.3 else d for d in batch[len(batch) - (ra - 2):]]
    bb = [1 if rng.random() < 0.3 else d for d in batch[len(batch) - (rb - 2):]]
    a = rng.uniform(-4, 4, (*ba, m, k)).astype(dtype)
    b = rng.uniform(-4, 4, (*bb, k, n)).astype(dtype)
    got = run_op("matmul", {"a": a, "b": b})
    ref = torch.matmul(t64(a), t64(b)).numpy()
    mag = torch.matmul(t64(np.abs(a)), t64(np.abs(b))).numpy()
    assert_close_terms(got, ref, mag, dtype, k)


@pytest.mark.parametrize(("sa", "sb"), [((1, 2, 32, 64), (1, 2, 64, 32)), ((3, 1, 17, 33), (4, 33, 9)),
                                        ((2, 16, 16), (1, 16, 24)), ((5, 40, 12), (12, 30))])
def test_batched_matmul_products_one_matrix_at_a_time(sa, sb):
    """Batched products big enough for the C product (attention's heads) run it per matrix, broadcast batch
    dimensions included, with the same result as float64 within the product's bound."""
    rng = np.random.default_rng(len(sa) + sa[-1])
    a = rng.uniform(-2, 2, sa).astype(F32)
    b = rng.uniform(-2, 2, sb).astype(F32)
    got = run_op("matmul", {"a": a, "b": b})
    ref = torch.matmul(t64(a), t64(b)).numpy()
    mag = torch.matmul(t64(np.abs(a)), t64(np.abs(b))).numpy()
    assert_close_terms(got, ref, mag, F32, sa[-1])


def test_matmul_special_values():
    a = np.array([[np.inf, 1], [np.nan, 0], [-np.inf, 2], [3e38, 3e38]], F32)
    b = np.array([[1, 0, 2], [1, -1, 0]], F32)
    got = run_op("matmul", {"a": a, "b": b})
    with np.errstate(all="ignore"):
        ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(got, ref)  # inf * 0 = NaN, overflow to inf like float32 would


@pytest.mark.parametrize("seed", range(6))
def test_einsum_product_path(seed, monkeypatch):
    """The einsum product Pyodide uses without the C kernels gives what the C kernels give (the host build of
    py_core/kernels/native; NumPy's BLAS without it), for matmul, gemm and convolutions."""
    rng = np.random.default_rng(seed)
    dtype = F16 if seed % 2 else F32
    a = rng.uniform(-2, 2, (3, 5, 7)).astype(dtype)
    b = rng.uniform(-2, 2, (7, 4)).astype(dtype)
    x = rng.uniform(-2, 2, (1, 4, 6, 6)).astype(dtype)
    w = rng.uniform(-1, 1, (4, 2, 3, 3)).astype(dtype)
    cases = [("matmul", {"a": a, "b": b}, {}),
             ("matmul", {"a": a, "b": a.transpose(0, 2, 1).copy()}, {}),
             ("gemm", {"a": a[0], "b": b, "c": b[0]}, {"alpha": 0.5, "beta": 2.0}),
             ("conv2d", {"input": x, "filter": w}, {"groups": 2, "padding": [1, 1, 1, 1]}),
             ("conv2d", {"input": x, "filter": w.reshape(4, 2, 9)[:, :1].reshape(4, 1, 3, 3)}, {"groups": 4}),
             ("convTranspose2d", {"input": x, "filter": w}, {"strides": [2, 2]})]
    want = [run_op(op, arrays, **options) for op, arrays, options in cases]
    monkeypatch.setattr(matrix_kernels, "_USE_EINSUM", True)
    monkeypatch.setattr(native, "_LIB", None)
    for (op, arrays, options), expected in zip(cases, want, strict=True):
        got = run_op(op, arrays, **options)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        rtol = 2e-3 if dtype == F16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=1e-5,
                                   err_msg=op)


def onnx_gemm(a, b, c, alpha, beta, ta, tb) -> np.ndarray:
    """onnxruntime's Gemm in float32 (ONNX Gemm has the same alpha/beta/transA/transB semantics)."""
    inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(a.shape)),
              helper.make_tensor_value_info("B", TensorProto.FLOAT, list(b.shape))]
    names, feeds = ["A", "B"], {"A": a.astype(F32), "B": b.astype(F32)}
    if c is not None:
        inputs.append(helper.make_tensor_value_info("C", TensorProto.FLOAT, list(c.shape)))
        names.append("C")
        feeds["C"] = c.astype(F32)
    node = helper.make_node("Gemm", names, ["Y"], alpha=alpha, beta=beta, transA=int(ta), transB=int(tb))
    m = a.shape[1] if ta else a.shape[0]
    n = b.shape[0] if tb else b.shape[1]
    output = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])
    graph = helper.make_graph([node], "gemm", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


C_SHAPES = [None, (), (1,), "n", (1, 1), "m1", "mn", "1n"]


@pytest.mark.parametrize("seed", range(32))
def test_gemm_random(seed):
    rng = np.random.default_rng(100 + seed)
    dtype = F16 if seed % 4 == 0 else F32
    m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
    ta, tb = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    alpha, beta = float(rng.choice([1.0, -0.5, 2.25, 0.0])), float(rng.choice([1.0, 0.3, -2.0]))
    a = rng.uniform(-3, 3, (k, m) if ta else (m, k)).astype(dtype)
    b = rng.uniform(-3, 3, (n, k) if tb else (k, n)).astype(dtype)
    spec = C_SHAPES[seed % len(C_SHAPES)]
    shape = {"n": (n,), "m1": (m, 1), "mn": (m, n), "1n": (1, n)}.get(spec, spec)  # type: ignore[arg-type]
    arrays = {"a": a, "b": b}
    c = None
    if shape is not None:
        c = arrays["c"] = rng.uniform(-3, 3, shape).astype(dtype)
    got = run_op("gemm", arrays, alpha=alpha, beta=beta, aTranspose=ta, bTranspose=tb)
    # float64 formula straight from the spec text, alpha/beta cast to the operand type first
    al, be = float(np.array(alpha, dtype)), float(np.array(beta, dtype))
    a64, b64 = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    ref = al * (a64 @ b64) + (0 if c is None else be * c.astype(np.float64))
    mag = abs(al) * (np.abs(a64) @ np.abs(b64)) + (0 if c is None else abs(be) * np.abs(c.astype(np.float64)))
    ref, mag = np.broadcast_to(ref, (m, n)), np.broadcast_to(mag, (m, n))
    assert_close_terms(got, ref, mag, dtype, k)
    if dtype == F32:
        np.testing.assert_allclose(got, onnx_gemm(a, b, c, alpha, beta, ta, tb), rtol=1e-5, atol=1e-5)


def test_gemm_float16_alpha_cast():
    """alpha is cast to float16 first: 1e5 overflows to inf, 0.1 rounds to 0.0999755859375."""
    a = np.ones((1, 1), F16)
    assert run_op("gemm", {"a": a, "b": a}, alpha=1e5).item() == np.inf
    assert run_op("gemm", {"a": a, "b": a}, alpha=0.1).item() == np.float16(0.1)


def test_wpt_matmul_vectors():
    """Spot-check the WPT conformance vectors (the data-driven runner is in py_core/testing)."""
    for case in wpt_json("matmul"):
        g = case["graph"]
        arrays = {}
        for key, spec in g["inputs"].items():
            desc = spec["descriptor"]
            arrays[key] = np.array(spec["data"], dtype=desc["dataType"]).reshape(desc["shape"])
        (op,) = g["operators"]
        names = {k: v for a in op["arguments"] for k, v in a.items()}
        got = run_op("matmul", {"a": arrays[names["a"]], "b": arrays[names["b"]]})
        (exp,) = g["expectedOutputs"].values()
        want = np.array(exp["data"], np.float64).reshape(exp["descriptor"]["shape"])
        rtol = 2e-3 if exp["descriptor"]["dataType"] == "float16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, err_msg=case["name"])


def d(shape, dtype="float32"):
    return {"dataType": dtype, "shape": list(shape)}


ERRORS = [
    ("matmul", {"a": d([2]), "b": d([2, 2])}, {}, "rank 1"),
    ("matmul", {"a": d([2, 2]), "b": d([2])}, {}, "rank 1"),
    ("matmul", {"a": d([2, 3]), "b": d([2, 3])}, {}, "columns of a (3,"),
    ("matmul", {"a": d([2, 2, 3]), "b": d([3, 3, 2])}, {}, "not broadcastable"),
    ("matmul", {"a": d([2, 2], "int32"), "b": d([2, 2], "int32")}, {}, "data type int32"),
    ("matmul", {"a": d([2, 2]), "b": d([2, 2], "float16")}, {}, "must match"),
    ("gemm", {"a": d([2, 3, 1]), "b": d([3, 2])}, {}, "rank 3"),
    ("gemm", {"a": d([2, 3]), "b": d([2, 3])}, {}, "columns of a (3,"),
    ("gemm", {"a": d([2, 3]), "b": d([2, 3])}, {"aTranspose": True, "bTranspose": True}, "columns of a (2,"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4]), "c": d([3, 4])}, {}, "c shape [3, 4]"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4]), "c": d([1, 2, 4])}, {}, "rank 3"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4]), "c": d([4], "float16")}, {}, "must match"),
    ("gemm", {"a": d([2, 3], "uint8"), "b": d([3, 4], "uint8")}, {}, "data type uint8"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4])}, {"alpha": float("nan")}, "alpha"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4])}, {"beta": 1e39}, "out of the float range"),
    ("gemm", {"a": d([2, 3]), "b": d([3, 4])}, {"aTranspose": 1}, "boolean"),
]


@pytest.mark.parametrize("op, descs, options, fragment", ERRORS)
def test_validation_errors(op, descs, options, fragment):
    b = GraphBuilder()
    handles = {k: b.input(k, v) for k, v in descs.items()}
    assert_type_error(lambda: b.call(op, {**handles, **options}, "mm_1"), "mm_1", op, fragment)


def test_output_shapes():
    b = GraphBuilder()
    a = b.input("a", d([1, 4]))
    assert b.matmul(a, b.input("b", d([2, 2, 4, 2]))).shape == [2, 2, 1, 2]
    assert b.matmul(b.input("c", d([2, 3, 4])), b.input("e", d([1, 4, 1]))).shape == [2, 3, 1]
    g = b.gemm(b.input("g", d([4, 2], "float16")), b.input("h", d([3, 4], "float16")), aTranspose=True,
               bTranspose=True, c=b.input("i", d([], "float16")))
    assert g.shape == [2, 3] and g.data_type.value == "float16"
