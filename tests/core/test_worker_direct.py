"""The worker's direct mode (polyfill/src/engine/direct.js) under plain CPython: the JavaScript side
writes and reads each tensor at the address the table holds, with no Python call, and dispatches through
`bind` once and `run_bound` after.  Driven here the way engine/direct.js drives it (ctypes in place of HEAPU8 and
HEAPU32), checked against NumPy computed directly and against the same calls with direct mode off."""

from __future__ import annotations

import ctypes
import json
from typing import Any

import numpy as np
import pytest

from py_core.bridge import worker_host
from py_core.bridge.builder_host import BuilderHost
from py_core.bridge.worker_host import WorkerHost
from py_core.errors import InvalidStateError, OperationError, WebNNTypeError

CTX = 1


def page_graph(ops: str, shape: list[int]) -> str:
    """The page's graph text for x: float32[shape] -> `ops` (relu, reshape, identity, relu2: two outputs)."""
    host = BuilderHost()

    def call(method: str, *args: Any) -> Any:
        reply = json.loads(host.call_json(method, json.dumps(list(args))))
        assert "error" not in reply, reply
        return reply["ok"]

    bid = call("new_builder")
    x = call("input", bid, "x", {"dataType": "float32", "shape": shape})
    if ops == "reshape":
        (y,) = call("op", bid, "reshape", {"input": x["id"], "newShape": [int(np.prod(shape))]}, "")
        return call("build", bid, {"y": y["id"]})["graph"]
    (y,) = call("op", bid, "relu" if ops != "identity" else "identity", {"input": x["id"]}, "")
    outputs = {"y": y["id"], "z": y["id"]} if ops == "relu2" else {"y": y["id"]}
    return call("build", bid, outputs)["graph"]


class Engine:
    """engine.js in direct mode: a table of addresses, tensor indices, bytes copied in and out by address."""

    def __init__(self) -> None:
        self.host = WorkerHost()
        self.host.direct = True
        self.index: dict[int, tuple[int, int]] = {}  # tid -> (table index, bytes)
        self.table = 0
        self.next = 0

    def create(self, tid: int, dtype: str, shape: list[int]) -> None:
        self.table = self.host.create_tensor(CTX, tid, {"dataType": dtype, "shape": shape}, True, True,
                                             index=self.next)
        self.index[tid] = (self.next, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        self.next += 1

    def address(self, tid: int) -> int:
        return ctypes.c_size_t.from_address(self.table + ctypes.sizeof(ctypes.c_size_t) * self.index[tid][0]).value

    def write(self, tid: int, data: np.ndarray) -> None:
        raw = data.tobytes()
        assert len(raw) == self.index[tid][1]
        ctypes.memmove(self.address(tid), raw, len(raw))

    def read(self, tid: int, dtype: str = "float32") -> np.ndarray:
        return np.frombuffer(ctypes.string_at(self.address(tid), self.index[tid][1]), dtype).copy()


def relu_engine(n: int, ops: str = "relu") -> Engine:
    e = Engine()
    e.host.build(CTX, 7, page_graph(ops, [n]), {}, {})
    e.create(10, "float32", [n])
    e.create(11, "float32", [n])
    return e


@pytest.mark.parametrize("n", [4, 1 << 16])  # copied into the output's array / its fresh array adopted
def test_direct_round_trips_match_numpy_and_keep_the_timeline(n: int) -> None:
    e = relu_engine(n)
    e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11})
    rng = np.random.default_rng(n)
    for _ in range(5):
        x = rng.standard_normal(n).astype(np.float32)
        e.write(10, x)
        e.host.run_bound(1)
        e.write(10, np.full(n, -7, np.float32))  # after the dispatch: must not reach its output
        np.testing.assert_array_equal(e.read(11), np.maximum(x, 0))
        np.testing.assert_array_equal(e.read(10), np.full(n, -7, np.float32))
    # large outputs are taken over (no copy), small ones copied into the tensor's own array
    assert (e.host.adopted >= 5) == (n * 4 >= worker_host.ADOPT_MIN_BYTES), e.host.adopted


def test_an_output_that_is_an_input_view_is_copied_not_shared() -> None:
    # reshape and identity may hand back the input's array or a view of it: writing the input later must not
    # change the output, and writing the output's tensor must not change the input
    for ops in ("reshape", "identity"):
        n = 1 << 15  # 128 KiB: above the adoption threshold, so only the aliasing check keeps it a copy
        e = relu_engine(n, ops)
        e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11})
        x = np.arange(n, dtype=np.float32)
        e.write(10, x)
        e.host.run_bound(1)
        e.write(10, np.zeros(n, np.float32))
        np.testing.assert_array_equal(e.read(11), x)
        e.write(11, np.ones(n, np.float32))
        np.testing.assert_array_equal(e.read(10), np.zeros(n, np.float32))
        assert e.address(10) != e.address(11)


def test_two_outputs_of_one_operand_get_arrays_of_their_own() -> None:
    n = 1 << 15
    e = relu_engine(n, "relu2")
    e.create(12, "float32", [n])
    e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11, "z": 12})
    x = np.linspace(-1, 1, n, dtype=np.float32)
    e.write(10, x)
    e.host.run_bound(1)
    assert e.address(11) != e.address(12)
    e.write(11, np.zeros(n, np.float32))
    np.testing.assert_array_equal(e.read(12), np.maximum(x, 0))


def test_direct_matches_the_plain_path() -> None:
    n = 1 << 16
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    e = relu_engine(n)
    e.write(10, x)
    e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11})
    e.host.run_bound(1)
    plain = WorkerHost()
    plain.build(CTX, 7, page_graph("relu", [n]), {}, {})
    for tid in (10, 11):
        plain.create_tensor(CTX, tid, {"dataType": "float32", "shape": [n]}, True, True)
    assert plain.create_tensor(CTX, 12, {"dataType": "float32", "shape": [n]}, True, True, index=0) == 0
    ctypes.memmove(plain.write_address(CTX, 10, 4 * n), x.tobytes(), 4 * n)
    plain.dispatch(CTX, 7, {"x": 10}, {"y": 11})
    want = np.frombuffer(ctypes.string_at(plain.read_address(CTX, 11, 4 * n), 4 * n), np.float32)
    np.testing.assert_array_equal(e.read(11), want)


def test_bindings_are_checked_once_and_forgotten_on_destroy() -> None:
    e = relu_engine(4)
    e.create(12, "float32", [5])
    with pytest.raises(WebNNTypeError):
        e.host.bind(1, CTX, 7, {"x": 12}, {"y": 11})  # float32[5] for float32[4]
    with pytest.raises(WebNNTypeError):
        e.host.bind(1, CTX, 7, {"nope": 10}, {"y": 11})
    with pytest.raises(InvalidStateError):
        e.host.bind(1, CTX + 1, 7, {"x": 10}, {"y": 11})  # another context's graph
    e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11})
    e.host.run_bound(1)
    e.host.destroy_tensor(11)
    with pytest.raises(InvalidStateError):
        e.host.run_bound(1)
    with pytest.raises(InvalidStateError):
        e.host.bind(2, CTX, 7, {"x": 10}, {"y": 11})


def test_a_failed_dispatch_marks_its_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    e = relu_engine(4)
    e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11})
    exe = e.host.bound[1].exe

    def fail(inputs: Any) -> Any:
        raise OperationError("relu: the kernel gave up")

    monkeypatch.setattr(exe, "run", fail)
    with pytest.raises(OperationError):
        e.host.run_bound(1)
    assert "dispatch failed: relu: the kernel gave up" in str(e.host.tensors[11].error)


def test_the_table_grows_and_keeps_every_address() -> None:
    e = Engine()
    for tid in range(600):  # past the table's first 256 entries: it moves, the engine takes the new address
        e.create(tid, "float32", [3])
        e.write(tid, np.full(3, tid, np.float32))
    for tid in (0, 255, 256, 599):
        np.testing.assert_array_equal(e.read(tid), np.full(3, tid, np.float32))


def test_refcount_baseline_is_the_interpreters_own() -> None:
    held = {"x": np.empty(1)}
    alone = held["x"]
    import sys

    assert sys.getrefcount(alone) == worker_host._REFS_ALONE
    extra = [alone]  # one more holder: over the threshold, so such an array would be copied
    assert sys.getrefcount(alone) > worker_host._REFS_ALONE and extra


def test_a_whole_graph_c_call_runs_in_place_on_the_tensors() -> None:
    """bound_c as engine.js runC uses it in place: each tensor's array address written into the plan's table
    entries (int64), one call, the output tensor holds relu(x); with the same tensor as input and output (which the
    page refuses) the call keeps its own buffers (inPlace false)."""
    from py_core.kernels import native

    if not native.available():
        pytest.skip("C kernels not built (make build)")
    n = 4096
    e = relu_engine(n)
    assert e.host.bind(1, CTX, 7, {"x": 10}, {"y": 11}) == 1
    c = e.host.bound_c(1)
    assert c is not None and c["inPlace"] is True
    run = e.host.c_runs[7]
    x = np.linspace(-3, 3, n, dtype=np.float32)
    e.write(10, x)
    e.write(11, np.full(n, np.nan, np.float32))
    for side in ("inputs", "outputs"):
        for tid, _at, nbytes, entries in c[side]:
            assert entries and nbytes == e.index[tid][1]
            for i in entries:
                ctypes.c_int64.from_address(c["table"] + 8 * i).value = e.address(tid)
    assert run.call(c["words"], c["count"], c["table"]) == 0
    np.testing.assert_array_equal(e.read(11), np.maximum(x, 0))
    np.testing.assert_array_equal(e.read(10), x)
    assert e.host.bind(2, CTX, 7, {"x": 10}, {"y": 10}) == 1
    assert e.host.bound_c(2)["inPlace"] is False
