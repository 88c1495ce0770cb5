"""One graph over both cores (py_core/compiler/split.py, py_core/bridge/split_glue.py): which graphs split over
their batch, and a split graph's parts, run one after the other as a worker without a peer does (and as the two
workers do, each on its part), give the unsplit graph's outputs: MobileNetV2 at batch 4, a small separable
graph; graphs that mix the batch never split."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from py_core.bridge import split_glue
from py_core.bridge.jsonnum import dumps
from py_core.bridge.worker_host import WorkerHost
from py_core.builder import GraphBuilder
from py_core.compiler.split import plan_split
from py_core.runtime.executor import prepare

RNG = np.random.default_rng(16)


def const(b: GraphBuilder, shape: list[int], scale: float = 0.1, rng: Any = RNG) -> Any:
    data = (rng.standard_normal(shape) * scale).astype(np.float32)
    return b.constant({"dataType": "float32", "shape": shape}, data.tobytes())


def small_graph(batch: int) -> Any:
    """conv2d + clamp + broadcast add + pool + reshape + gemm + softmax: every rule the CNNs need."""
    b = GraphBuilder()
    rng = np.random.default_rng(5)  # the same weights at every batch
    x = b.input("x", {"dataType": "float32", "shape": [batch, 3, 16, 16]})
    y = b.call("conv2d", {"input": x, "filter": const(b, [8, 3, 3, 3], rng=rng), "bias": const(b, [8], rng=rng),
                          "padding": [1] * 4})
    y = b.call("clamp", {"input": y, "minValue": 0.0, "maxValue": 6.0})
    y = b.call("add", {"a": y, "b": const(b, [1, 8, 1, 1], rng=rng)})
    y = b.call("averagePool2d", {"input": y})
    y = b.call("reshape", {"input": y, "newShape": [batch, 8]})
    y = b.call("gemm", {"a": y, "b": const(b, [8, 5], rng=rng), "c": const(b, [5], rng=rng)})
    y = b.call("softmax", {"input": y, "axis": 1})
    return b.build({"y": y})


def mobilenet_v2(batch: int) -> Any:
    """MobileNetV2 (torchvision's layout, batch-norm folded into the convolutions) with random weights."""
    b = GraphBuilder()
    x = b.input("input", {"dataType": "float32", "shape": [batch, 3, 224, 224]})

    def conv(v: Any, cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True) -> Any:
        fshape = [cout, cin // groups, k, k]
        v = b.call("conv2d", {"input": v, "filter": const(b, fshape, (2.0 / (k * k * cin / groups)) ** 0.5),
                              "bias": const(b, [cout], 0.01), "padding": [k // 2] * 4, "strides": [stride] * 2,
                              "groups": groups})
        return b.call("clamp", {"input": v, "minValue": 0.0, "maxValue": 6.0}) if act else v

    v = conv(x, 3, 32, 3, 2)
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            h = conv(v, cin, cin * t, 1, 1) if t != 1 else v
            h = conv(h, cin * t, cin * t, 3, stride, groups=cin * t)
            h = conv(h, cin * t, c, 1, 1, act=False)
            v = b.call("add", {"a": v, "b": h}) if stride == 1 and cin == c else h
            cin = c
    v = conv(v, cin, 1280, 1, 1)
    v = b.call("averagePool2d", {"input": v})
    v = b.call("reshape", {"input": v, "newShape": [batch, 1280]})
    v = b.call("gemm", {"a": v, "b": const(b, [1280, 1000], 0.03), "c": const(b, [1000])})
    return b.build({"output": v})


def run_split(graph: Any, inputs: dict[str, np.ndarray], parts: int = 2) -> dict[str, np.ndarray]:
    """The graph as a worker runs it split, every part here: WorkerHost + split_glue, tensors of the whole
    batch."""
    host = WorkerHost()
    constants = {i: graph.constants[i] for i in graph.constants}
    info = split_glue.build_split(host, 1, 7, dumps(graph.to_json()), constants, {}, parts, 0.0)
    assert info["split"] == parts
    ins, outs = {}, {}
    tid = 100
    for name, oid in graph.inputs.items():
        d = graph.operands[oid].desc
        host.create_tensor(1, tid, d.to_json(), False, True)
        host.write_tensor(1, tid, lambda t, a=inputs[name]: t.__setitem__(..., a))
        ins[name] = tid
        tid += 1
    for name, oid in graph.outputs.items():
        host.create_tensor(1, tid, graph.operands[oid].desc.to_json(), True, False)
        outs[name] = tid
        tid += 1
    for index in range(parts):
        split_glue.run_part(host, 1, 7, ins, outs, index)
    split_glue.forget(7)
    return {name: host.tensors[t].array for name, t in outs.items()}


def test_small_graph_splits_and_matches_the_unsplit_run() -> None:
    graph = small_graph(4)
    plan = plan_split(graph, 2, 0.0)
    assert plan is not None and plan.part == 2
    x = RNG.random((4, 3, 16, 16), dtype=np.float32)
    whole = prepare(graph).run({"x": x})["y"]
    split = run_split(graph, {"x": x})["y"]
    np.testing.assert_allclose(split, whole, rtol=1e-6, atol=1e-7)
    # the oracle: the unsplit graph at batch 2 on each half
    halves = [prepare(small_graph(2)).run({"x": x[i:i + 2]})["y"] for i in (0, 2)]
    np.testing.assert_allclose(np.concatenate(halves), whole, rtol=1e-6, atol=1e-7)


def test_mobilenet_v2_batch_4_split_matches_the_unsplit_run() -> None:
    graph = mobilenet_v2(4)
    plan = plan_split(graph)  # the default threshold: 2.4 GFLOP per run is worth a second worker
    assert plan is not None and plan.batch == 4 and plan.part == 2
    x = RNG.random((4, 3, 224, 224), dtype=np.float32)
    whole = prepare(graph).run({"input": x})["output"]
    split = run_split(graph, {"input": x})["output"]
    assert split.shape == whole.shape == (4, 1000)
    np.testing.assert_allclose(split, whole, rtol=1e-4, atol=1e-5)


def test_mobilenet_v2_batch_1_and_odd_batches_do_not_split() -> None:
    assert plan_split(mobilenet_v2(1)) is None
    assert plan_split(small_graph(3), 2, 0.0) is None
    assert plan_split(small_graph(4), 3, 0.0) is None
    assert plan_split(small_graph(4), 4, 0.0) is not None


def test_small_graphs_stay_whole_below_the_threshold() -> None:
    assert plan_split(small_graph(4)) is None  # 1 MFLOP: the messages would cost more than the work


def _one(op: str, args: dict[str, Any], shape: list[int] | None = None) -> Any:
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": shape or [4, 6, 8]})
    resolved = {k: (v(b) if callable(v) else v) for k, v in args.items()}
    y = b.call(op, {"a" if op == "matmul" else "input": x, **resolved})
    return b.build({"y": y})


@pytest.mark.parametrize("op,args", [
    ("reduceSum", {"axes": [0]}),                       # a reduction over the batch
    ("reduceMean", {}),                                 # over every axis
    ("reshape", {"newShape": [2, 96]}),                 # mixes items
    ("reshape", {"newShape": [192]}),
    ("transpose", {"permutation": [1, 0, 2]}),          # the batch leaves axis 0
    ("softmax", {"axis": 0}),
    ("slice", {"starts": [1, 0, 0], "sizes": [2, 6, 8]}),
    ("pad", {"beginningPadding": [1, 0, 0], "endingPadding": [0, 0, 0]}),
    ("concat", {}),                                     # along axis 0
    ("cumulativeSum", {"axis": 0}),
    ("expand", {"newShape": [2, 4, 6, 8]}),             # no rule: never splits
])
def test_graphs_mixing_the_batch_do_not_split(op: str, args: dict[str, Any]) -> None:
    if op == "concat":
        b = GraphBuilder()
        x = b.input("x", {"dataType": "float32", "shape": [4, 6, 8]})
        graph = b.build({"y": b.call("concat", {"inputs": [x, x], "axis": 0})})
    else:
        graph = _one(op, args)
    assert plan_split(graph, 2, 0.0) is None


def test_a_constant_with_the_batch_s_size_does_not_broadcast_over_it() -> None:
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
    graph = b.build({"y": b.call("add", {"a": x, "b": const(b, [4, 6])})})  # row i of the constant per item
    assert plan_split(graph, 2, 0.0) is None
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
    graph = b.build({"y": b.call("add", {"a": x, "b": const(b, [1, 6])})})
    assert plan_split(graph, 2, 0.0) is not None


def test_inputs_of_different_batches_and_outputs_without_one_do_not_split() -> None:
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
    z = b.input("z", {"dataType": "float32", "shape": [2, 6]})
    graph = b.build({"y": b.call("relu", {"input": x}), "w": b.call("relu", {"input": z})})
    assert plan_split(graph, 2, 0.0) is None
    b = GraphBuilder()
    x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
    graph = b.build({"y": b.call("relu", {"input": x}), "c": b.call("relu", {"input": const(b, [4, 6])})})
    assert plan_split(graph, 2, 0.0) is None


@pytest.mark.parametrize("op,args,shape", [
    ("softmax", {"axis": 2}, None),
    ("reduceMean", {"axes": [1, 2]}, None),
    ("transpose", {"permutation": [0, 2, 1]}, None),
    ("slice", {"starts": [0, 1, 2], "sizes": [4, 3, 4]}, None),
    ("pad", {"beginningPadding": [0, 1, 0], "endingPadding": [0, 0, 2]}, None),
    ("layerNormalization", {"axes": [1, 2]}, None),
    ("split", {"splits": 2, "axis": 2}, None),
    ("argMax", {"axis": 1}, None),
    ("tile", {"repetitions": [1, 2, 1]}, None),
    ("matmul", {"b": lambda b: const(b, [8, 3])}, None),
    ("instanceNormalization", {}, [4, 6, 5, 5]),
    ("resample2d", {"scales": [2.0, 2.0]}, [4, 6, 5, 5]),
])
def test_per_item_operators_split_and_their_parts_match(op: str, args: dict[str, Any], shape: Any) -> None:
    if op == "split":
        b = GraphBuilder()
        x = b.input("x", {"dataType": "float32", "shape": [4, 6, 8]})
        ys = b.call("split", {"input": x, **args})
        graph = b.build({"y0": ys[0], "y1": ys[1]})
    else:
        graph = _one(op, args, shape)
    assert plan_split(graph, 2, 0.0) is not None
    x = RNG.random(tuple(graph.operands[graph.inputs["x"]].desc.shape), dtype=np.float32)
    whole = prepare(graph).run({"x": x})
    split = run_split(graph, {"x": x})
    for name in whole:
        np.testing.assert_allclose(split[name], whole[name], rtol=1e-6, atol=1e-6)


def test_a_split_dispatch_checks_bindings_against_the_whole_graph() -> None:
    from py_core.errors import WebNNTypeError

    graph = small_graph(4)
    host = WorkerHost()
    split_glue.build_split(host, 1, 9, dumps(graph.to_json()), dict(graph.constants), {}, 2, 0.0)
    host.create_tensor(1, 1, {"dataType": "float32", "shape": [2, 3, 16, 16]}, False, True)  # a part's shape
    host.create_tensor(1, 2, {"dataType": "float32", "shape": [4, 5]}, True, False)
    with pytest.raises(WebNNTypeError, match="input 'x'"):
        split_glue.input_parts(host, 1, 9, {"x": 1}, {"y": 2}, 1)
    with pytest.raises(WebNNTypeError):
        split_glue.run_part(host, 1, 9, {"x": 1}, {"y": 2}, 0)
    assert host.tensors[2].error is not None  # recorded on the output, as an unsplit dispatch does
    split_glue.forget(9)


def test_wpt_cases_that_split_pass_through_the_split_path() -> None:
    """Conformance with the split on: every vendored WPT case whose graph splits (any work size) runs as two
    parts and meets the case's own tolerance, as the unsplit run does (tests/core/test_wpt.py)."""
    from helpers import wpt_dir

    from py_core.spec import OPS
    from py_core.testing import wpt
    from py_core.testing.tolerance import check, graph_tolerance

    split, failures = 0, []
    for case in wpt.load_dir(wpt_dir()):
        g = case.graph
        if any(wpt.has_null(g.get(k)) for k in ("inputs", "operators", "expectedOutputs")):
            continue
        if any(op["name"] not in OPS for op in g.get("operators", [])):
            continue
        try:
            built, feeds, contexts = wpt.build_graph(g)
        except Exception:  # noqa: BLE001 - an invalid case: test_wpt.py reports those
            continue
        if set(feeds) != set(built.inputs) or plan_split(built, 2, 0.0) is None:
            continue
        split += 1
        actual = run_split(built, feeds)
        for name, exp in g["expectedOutputs"].items():
            dtype, shape = exp["descriptor"]["dataType"], tuple(exp["descriptor"]["shape"])
            values, prefix = wpt.expected_values(exp["data"], dtype, shape)
            got = actual[name].reshape(-1)[: values.size] if prefix else actual[name]
            ok, max_ulp, max_abs = check(contexts, got, values, dtype, tolerance=graph_tolerance(contexts, dtype))
            if not ok:
                failures.append(f"{case.id}: {name}: {max_ulp} ULP, {max_abs} abs")
    assert split >= 100, split  # the conformance set has plenty of batched graphs
    assert not failures, failures[:10]
