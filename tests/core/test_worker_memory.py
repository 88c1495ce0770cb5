"""The worker's memory: what WorkerHost.memory() reports, and a build that holds each weight once."""

from __future__ import annotations

import tracemalloc
import weakref

import numpy as np

from py_core.bridge.jsonnum import dumps
from py_core.bridge.worker_host import WorkerHost
from py_core.builder import GraphBuilder

MIB = 1 << 20


def _conv_graph(convs: int = 1) -> tuple[str, dict[int, np.ndarray]]:
    """`convs` conv2d, each with a 4 MiB float32 filter the compiler packs, beside an element-wise chain whose 4 MiB
    intermediate the compiled plan allocates after packing: the graph's JSON and its constants by operand id."""
    b = GraphBuilder()
    outputs, constants = {}, {}
    for i in range(convs):
        x = b.input(f"x{i}", {"dataType": "float32", "shape": [1, 64, 8, 8]})
        w_data = np.full((256, 64, 8, 8), 0.5 + i, np.float32)
        w = b.constant({"dataType": "float32", "shape": [256, 64, 8, 8]}, w_data)
        outputs[f"y{i}"] = b.call("conv2d", {"input": x, "filter": w})
        constants[w.id] = w_data
    big = {"dataType": "float32", "shape": [1024, 1024]}
    s = b.call("relu", {"input": b.call("add", {"a": b.input("a", big), "b": b.input("b", big)})})
    graph = b.build({**outputs, "z": b.call("sigmoid", {"input": s})})
    return dumps(graph.to_json()), constants


def test_memory_counts_a_graph_s_weights_and_gives_them_back() -> None:
    host = WorkerHost()
    empty = host.memory()
    assert empty == {"constantBytes": 0, "weightBytes": 0, "planBytes": 0, "tensorBytes": 0, "engineBytes": 0}
    text, constants = _conv_graph()
    host.build(1, 7, text, constants, {})
    held = host.memory()
    assert held["constantBytes"] + held["weightBytes"] >= 4 * MIB, held
    assert held["engineBytes"] == sum(v for k, v in held.items() if k != "engineBytes")
    host.create_tensor(1, 3, {"dataType": "float32", "shape": [1024, 1024]}, True, True)
    assert host.memory()["tensorBytes"] == 4 * MIB
    host.destroy_context(1)
    assert host.memory() == empty


def test_a_build_takes_its_constants_and_frees_a_packed_weight_before_it_returns() -> None:
    """The host takes the constants it is given (the dict is emptied) and the compiler frees each original filter
    as soon as it is packed: the build's peak is the level it ends at, not the originals, their packed copies and
    the plan's buffers at once."""
    host = WorkerHost()
    tracemalloc.start()  # before the constants exist: their release counts
    try:
        text, constants = _conv_graph(convs=2)
        originals = [weakref.ref(a) for a in constants.values()]
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        host.build(1, 7, text, constants, {})
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert constants == {}
    assert all(o() is None for o in originals), "an original filter outlived the build (held twice)"
    held = host.memory()
    assert held["weightBytes"] >= 8 * MIB and held["planBytes"] >= 4 * MIB, held
    # the originals (counted in `start`) go one by one as their copies come, and before the plan allocates; the
    # 1 MiB is the graph's own bookkeeping
    assert peak - now < MIB, (peak - start, now - start, held)
