"""py_core.bridge under plain CPython: the hosts driven the way the JS side drives them.

polyfill/src/runtime/runtime.js calls BuilderHost.call_json(method, JSON.stringify(args)) and JSON.parses the reply;
polyfill/src/engine/engine.js calls pyodide_glue, whose functions wrap WorkerHost methods in safe_call, pass the
page's graph text on unchanged and copy each Uint8Array once into the target array's bytes.  Here the same
calls are made with plain Python data; only pyodide_glue (JS proxies) needs Pyodide and is covered by
tests/pyodide and tests/browser.  Numbers are checked against NumPy computed directly.
"""

from __future__ import annotations

import ctypes
import json
import math
from typing import Any

import numpy as np
import pytest

from py_core.bridge import jsonnum
from py_core.bridge.builder_host import BuilderHost
from py_core.bridge.limits import op_support_limits
from py_core.bridge.worker_host import WorkerHost, safe_call
from py_core.builder import GraphBuilder
from py_core.errors import InvalidStateError, OperationError, WebNNTypeError
from py_core.kernels import preferred_layout
from py_core.spec import OPS
from py_core.types import MAX_TENSOR_BYTE_LENGTH

ALL = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]


def js_parse(text: str) -> Any:
    """JSON.parse: no NaN, Infinity or -Infinity tokens."""
    def refuse(token: str) -> None:
        raise AssertionError(f"JSON.parse would reject {token}")
    return json.loads(text, parse_constant=refuse)


class PageError(Exception):
    """The {"name", "message"} error the page turns into a TypeError or DOMException."""

    def __init__(self, error: dict[str, str]) -> None:
        super().__init__(f"{error['name']}: {error['message']}")
        self.name, self.message = error["name"], error["message"]


class Page:
    """The page side of the builder bridge, as polyfill/src/runtime/runtime.js `call()` does it."""

    def __init__(self) -> None:
        self.host = BuilderHost()

    def call(self, method: str, *args: Any) -> Any:
        reply = js_parse(self.host.call_json(method, json.dumps(list(args), allow_nan=False)))
        if "error" in reply:
            raise PageError(reply["error"])
        return reply["ok"]


def from_bytes(data: bytes) -> Any:
    """pyodide_glue._filler: the page's bytes copied once into the target array (viewed as uint8)."""
    def fill(target: np.ndarray) -> None:
        target.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8)
    return fill


def read(host: WorkerHost, ctx: int, tid: int, dtype: str, shape: list[int]) -> np.ndarray:
    """readTensor: the bytes at the address the JS side copies from, reinterpreted as the tensor's type."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(ctypes.string_at(host.read_address(ctx, tid, nbytes), nbytes), dtype).reshape(shape)


# ---------------------------------------------------------------------------------------------- jsonnum

@pytest.mark.parametrize(("value", "tagged"), [
    (math.inf, {"$n": "Infinity"}), (-math.inf, {"$n": "-Infinity"}),
    (2**53 + 1, {"$n": "9007199254740993"}), (-(2**63), {"$n": "-9223372036854775808"}),
    (2**64 - 1, {"$n": "18446744073709551615"}),
    (2**53, 2**53), (1.5, 1.5), (True, True), (None, None), ("Infinity", "Infinity"),
])
def test_encode_numbers_tags_what_json_parse_would_lose(value: Any, tagged: Any) -> None:
    assert jsonnum.encode_numbers(value) == tagged
    assert jsonnum.decode_numbers(tagged) == value and type(jsonnum.decode_numbers(tagged)) is type(value)


def test_nan_travels_tagged() -> None:
    assert jsonnum.encode_numbers(math.nan) == {"$n": "NaN"}
    assert math.isnan(jsonnum.decode_numbers({"$n": "NaN"}))


def test_dumps_nested_values_parse_in_js_and_round_trip() -> None:
    value = {"a": [1, -math.inf, {"b": (2**60, 0.25)}], "c": {"d": math.inf}, "e": "text"}
    text = jsonnum.dumps(value)
    js = js_parse(text)  # JSON.parse accepts it: no bare Infinity/NaN
    assert js["a"][1] == {"$n": "-Infinity"} and js["a"][2]["b"] == [{"$n": str(2**60)}, 0.25]
    assert jsonnum.loads(text) == {"a": [1, -math.inf, {"b": [2**60, 0.25]}], "c": {"d": math.inf}, "e": "text"}


def test_decode_numbers_reads_the_js_tags() -> None:
    # polyfill/src/api/idl.js toMLNumber: a bigint as {$n: n.toString()}, a non-finite number as {$n: String(n)}
    assert jsonnum.decode_numbers({"$n": "-5"}) == -5
    assert jsonnum.decode_numbers([{"$n": "Infinity"}, {"$n": "-Infinity"}]) == [math.inf, -math.inf]
    # only a dictionary holding exactly "$n" is a tag
    assert jsonnum.decode_numbers({"$n": "1", "x": 2}) == {"$n": "1", "x": 2}


# ----------------------------------------------------------------------------------------------- limits

def test_op_support_limits_graph_wide_members() -> None:
    limits = op_support_limits()
    assert limits["maxTensorByteLength"] == MAX_TENSOR_BYTE_LENGTH
    assert limits["preferredInputLayout"] == preferred_layout()  # the conv/pool kernels' (test_compiler_layout)
    for member in ("input", "constant", "output"):
        assert limits[member] == {"dataTypes": ALL, "rankRange": {"min": 0, "max": 8}}
    assert set(OPS) <= set(limits)
    js_parse(jsonnum.dumps(limits))


def test_op_support_limits_follow_the_spec_tables() -> None:
    """Rows copied from the spec's "Tensor limits" tables (any rank N capped at this implementation's 8)."""
    limits = op_support_limits()
    f = ["float32", "float16"]
    assert limits["matmul"] == {k: {"dataTypes": f, "rankRange": {"min": 2, "max": 8}} for k in ("a", "b", "output")}
    relu = ["float32", "float16", "int32", "int64", "int8"]
    assert limits["relu"] == {k: {"dataTypes": relu, "rankRange": {"min": 0, "max": 8}} for k in ("input", "output")}
    assert limits["argMax"]["input"] == {"dataTypes": ALL, "rankRange": {"min": 1, "max": 8}}
    assert limits["argMax"]["output"]["dataTypes"] == ["int32", "int64"]


@pytest.mark.parametrize("dtype", ALL)
def test_op_support_limits_agree_with_the_builder(dtype: str) -> None:
    """A data type listed for relu's input builds; one not listed is the builder's TypeError."""
    listed = dtype in op_support_limits()["relu"]["input"]["dataTypes"]
    b = GraphBuilder()
    x = b.input("x", {"dataType": dtype, "shape": [2]})
    if listed:
        assert b.relu(x).data_type == dtype
    else:
        with pytest.raises(WebNNTypeError, match=rf"^relu: .*{dtype}"):
            b.relu(x)


# ------------------------------------------------------------------------------------------ builder host

def test_builder_host_builds_a_graph_as_the_page_does() -> None:
    page = Page()
    bid = page.call("new_builder")
    x = page.call("input", bid, "x", {"dataType": "float32", "shape": [2, 3]})
    assert x == {"id": x["id"], "dataType": "float32", "shape": [2, 3]}
    w = page.call("constant", bid, {"dataType": "float32", "shape": [2, 3]})
    (s,) = page.call("op", bid, "add", {"a": x["id"], "b": w["id"]}, "blk/add")
    # toMLNumber sends -Infinity tagged; the graph JSON carries it back tagged
    (y,) = page.call("op", bid, "clamp", {"input": s["id"], "minValue": {"$n": "-Infinity"}, "maxValue": 6}, "")
    # a multi-output operator answers one operand per output
    halves = page.call("op", bid, "split", {"input": y["id"], "splits": 2, "axis": 0}, "")
    assert [h["shape"] for h in halves] == [[1, 3], [1, 3]] and len({h["id"] for h in halves}) == 2
    built = page.call("build", bid, {"y": y["id"]})
    # the graph travels as JSON text the page passes on unread, beside what the page reads itself
    assert built["inputs"] == {"x": {"dataType": "float32", "shape": [2, 3]}}
    assert built["outputs"] == {"y": {"dataType": "float32", "shape": [2, 3]}}
    assert built["constants"] == [w["id"]]
    graph = js_parse(built["graph"])
    assert graph["inputs"] == {"x": x["id"]} and graph["outputs"] == {"y": y["id"]}
    clamp = next(o for o in graph["operations"] if o["op"] == "clamp")
    assert clamp["options"]["minValue"] == {"$n": "-Infinity"} and clamp["options"]["maxValue"] == 6
    assert [o["label"] for o in graph["operations"] if o["op"] == "add"] == ["blk/add"]
    # build() releases the builder
    with pytest.raises(PageError, match="this builder has been released") as info:
        page.call("input", bid, "z", {"dataType": "float32", "shape": [1]})
    assert info.value.name == "InvalidStateError"


def test_builder_host_errors_reach_the_page_as_named_json() -> None:
    page = Page()
    bid = page.call("new_builder")
    a = page.call("input", bid, "a", {"dataType": "float32", "shape": [2, 3]})
    b = page.call("input", bid, "b", {"dataType": "float32", "shape": [4]})
    with pytest.raises(PageError, match=r"^TypeError: \[enc/add\] add: .*\[2, 3\].*\[4\]") as info:
        page.call("op", bid, "add", {"a": a["id"], "b": b["id"]}, "enc/add")
    assert info.value.name == "TypeError"
    with pytest.raises(PageError, match=r"^TypeError: input: an input named 'a' already exists$"):
        page.call("input", bid, "a", {"dataType": "float32", "shape": [1]})
    with pytest.raises(PageError, match=r"^UnknownError: no such builder host method 'nope'$"):
        page.call("nope")
    with pytest.raises(PageError, match=r"^UnknownError: no such builder host method '_builder'$"):
        page.call("_builder", bid)
    # an operand id the builder's graph does not hold is a TypeError naming it
    with pytest.raises(PageError, match=r"^TypeError: MLGraphBuilder: no operand #999 in this builder$"):
        page.call("op", bid, "relu", {"input": 999}, "")
    # a bug on the Python side is an UnknownError naming the method, never a broken reply nor Python text
    with pytest.raises(PageError, match=r"^UnknownError: op: internal error in the WebNN engine \(details in the "
                                        r"worker's console\)$"):
        page.call("op", bid, "relu", None, "")
    with pytest.raises(PageError, match=r"^InvalidStateError: MLGraphBuilder: this builder has been released$"):
        page.call("input", 12345, "x", {"dataType": "float32", "shape": [1]})


def test_builder_host_release_and_tables() -> None:
    page = Page()
    first, second = page.call("new_builder"), page.call("new_builder")
    assert first != second and set(page.host.builders) == {first, second}
    page.call("release", first)
    assert set(page.host.builders) == {second}
    page.call("release", first)  # releasing twice (finalizer after build) is harmless
    table = page.call("op_table")
    assert [row["name"] for row in table] == list(OPS)
    assert page.call("op_support_limits") == js_parse(jsonnum.dumps(op_support_limits()))


# ------------------------------------------------------------------------------------------- worker host

def _page_graph() -> tuple[str, int, np.ndarray]:
    """The page builds y = clamp(x + w, -inf, 6) for x: float32[2, 3] and a constant w: the graph's JSON text."""
    page = Page()
    bid = page.call("new_builder")
    x = page.call("input", bid, "x", {"dataType": "float32", "shape": [2, 3]})
    w = page.call("constant", bid, {"dataType": "float32", "shape": [2, 3]})
    (s,) = page.call("op", bid, "add", {"a": x["id"], "b": w["id"]}, "")
    (y,) = page.call("op", bid, "clamp", {"input": s["id"], "minValue": {"$n": "-Infinity"}, "maxValue": 6}, "")
    return page.call("build", bid, {"y": y["id"]})["graph"], w["id"], np.array([[1, 2, 3], [4, 5, 6]], np.float32)


def _worker_with_graph(ctx: int = 1, gid: int = 7) -> tuple[WorkerHost, np.ndarray]:
    graph, wid, w = _page_graph()
    host = WorkerHost()
    # context.js sends the builder host's graph text as it came and the constant bytes; pyodide_glue passes
    # bytes by operand id
    info = host.build(ctx, gid, graph, {wid: w.tobytes()}, {})
    assert info["operations"] == 2 and info["steps"] >= 1 and isinstance(info["wantsBlas"], bool)
    return host, w


def test_worker_dispatch_runs_the_page_graph() -> None:
    host, w = _worker_with_graph()
    f32 = {"dataType": "float32", "shape": [2, 3]}
    host.create_tensor(1, 10, f32, readable=False, writable=True)
    host.create_tensor(1, 11, f32, readable=True, writable=False)
    x = np.array([[-100, 0.5, 1], [2, -3, 40]], np.float32)
    host.write_tensor(1, 10, from_bytes(x.tobytes()))
    host.dispatch(1, 7, {"x": 10}, {"y": 11})
    np.testing.assert_array_equal(read(host, 1, 11, "float32", [2, 3]), np.minimum(x + w, 6))
    # the timeline: a later write does not change what the earlier dispatch produced
    host.write_tensor(1, 10, from_bytes(np.zeros((2, 3), np.float32).tobytes()))
    np.testing.assert_array_equal(read(host, 1, 11, "float32", [2, 3]), np.minimum(x + w, 6))
    host.dispatch(1, 7, {"x": 10}, {"y": 11})
    np.testing.assert_array_equal(read(host, 1, 11, "float32", [2, 3]), np.minimum(w, 6))
    assert host.stats()["graphs"] == 1 and host.stats()["tensors"] == 2 and host.stats()["tensorBytes"] == 48


def test_worker_read_address_is_contiguous_and_sized() -> None:
    """read_address: a view the executor left in a slot is made contiguous first; a size mismatch is an error."""
    host = WorkerHost()
    host.create_tensor(1, 10, {"dataType": "float32", "shape": [3, 2]}, readable=True, writable=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    host.tensors[10].array = x.T  # a transposed view, as an executor output may be
    np.testing.assert_array_equal(read(host, 1, 10, "float32", [3, 2]), x.T)
    assert host.tensors[10].array.flags.c_contiguous
    with pytest.raises(OperationError, match=r"^readTensor: the tensor holds 24 bytes, not 20$"):
        host.read_address(1, 10, 20)


def test_worker_write_address_takes_the_bytes_in_a_new_array() -> None:
    """write_address: the JS side copies the page's bytes to that address; the old array (which a dispatch's
    output may share) is left as it was; a size mismatch is an error and changes nothing."""
    host = WorkerHost()
    host.create_tensor(1, 10, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=True)
    old = host.tensors[10].array
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    ctypes.memmove(host.write_address(1, 10, 24), x.tobytes(), 24)
    np.testing.assert_array_equal(read(host, 1, 10, "float32", [2, 3]), x)
    np.testing.assert_array_equal(old, np.zeros((2, 3), np.float32))
    with pytest.raises(OperationError, match=r"^writeTensor: the tensor holds 24 bytes, not 20$"):
        host.write_address(1, 10, 20)
    np.testing.assert_array_equal(read(host, 1, 10, "float32", [2, 3]), x)


def test_worker_compute_fills_named_inputs() -> None:
    host, w = _worker_with_graph()
    target = host.input_target(1, 7, "x")
    assert target.dtype == np.float32 and target.shape == (2, 3)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    from_bytes(x.tobytes())(target)
    out = host.compute(1, 7, {"x": target})
    assert list(out) == ["y"]
    np.testing.assert_array_equal(np.frombuffer(bytes(out["y"]), np.float32).reshape(2, 3), np.minimum(x + w, 6))
    with pytest.raises(WebNNTypeError, match=r"^compute: the graph has no input named 'nope'$"):
        host.input_target(1, 7, "nope")


def test_worker_failed_dispatch_poisons_its_outputs_until_the_next_write() -> None:
    host, _ = _worker_with_graph()
    host.create_tensor(1, 10, {"dataType": "int32", "shape": [2, 3]}, readable=False, writable=True)  # wrong type
    host.create_tensor(1, 11, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=True)
    with pytest.raises(WebNNTypeError, match=r"^input 'x' is int32\[2, 3\], the graph expects float32\[2, 3\]$"):
        host.dispatch(1, 7, {"x": 10}, {"y": 11})
    with pytest.raises(OperationError, match=r"^dispatch failed: input 'x' is int32\[2, 3\]"):
        host.read_address(1, 11, 24)
    host.write_tensor(1, 11, from_bytes(np.ones((2, 3), np.float32).tobytes()))
    np.testing.assert_array_equal(read(host, 1, 11, "float32", [2, 3]), np.ones((2, 3), np.float32))


def test_worker_dispatch_checks_output_descriptors_too() -> None:
    """The bindings' check (once per graph and bindings) covers outputs: a tensor of another shape is refused."""
    host, w = _worker_with_graph()
    host.create_tensor(1, 10, {"dataType": "float32", "shape": [2, 3]}, readable=False, writable=True)
    host.create_tensor(1, 11, {"dataType": "float32", "shape": [3, 2]}, readable=True, writable=False)
    host.create_tensor(1, 12, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=False)
    for _ in range(2):  # the second time from the check's cache: refused all the same
        with pytest.raises(WebNNTypeError, match=r"^output 'y' is float32\[3, 2\], the graph expects float32\[2, 3\]$"):
            host.dispatch(1, 7, {"x": 10}, {"y": 11})
    for _ in range(2):
        host.dispatch(1, 7, {"x": 10}, {"y": 12})
        np.testing.assert_array_equal(read(host, 1, 12, "float32", [2, 3]), np.minimum(w, 6))
    with pytest.raises(WebNNTypeError, match=r"^outputs \[\] do not match the graph's outputs \['y'\]$"):
        host.dispatch(1, 7, {"x": 10}, {})


def test_worker_objects_are_scoped_to_their_context() -> None:
    host, _ = _worker_with_graph(ctx=1, gid=7)
    host.create_tensor(1, 10, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=True)
    host.create_tensor(2, 20, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=True)
    with pytest.raises(InvalidStateError, match=r"^MLTensor: the tensor has been destroyed$"):
        host.read_address(2, 10, 24)  # another context's tensor id
    with pytest.raises(InvalidStateError, match=r"^MLGraph: the graph has been destroyed$"):
        host.dispatch(2, 7, {"x": 20}, {"y": 20})
    host.destroy_context(1)
    assert host.stats()["graphs"] == 0 and host.stats()["tensors"] == 1
    with pytest.raises(InvalidStateError, match=r"^MLGraph: the graph has been destroyed$"):
        host.input_target(1, 7, "x")
    host.destroy_tensor(20)
    host.destroy_tensor(20)  # destroy() twice is harmless
    with pytest.raises(InvalidStateError, match=r"^MLTensor: the tensor has been destroyed$"):
        host.write_tensor(2, 20, from_bytes(b""))


def test_worker_constant_tensors() -> None:
    """constant(tensor): the graph takes a createConstantTensor() tensor's data; other tensors are refused."""
    graph, wid, w = _page_graph()
    host = WorkerHost()
    host.create_tensor(1, 30, {"dataType": "float32", "shape": [2, 3]}, readable=False, writable=False, constant=True)
    host.write_tensor(1, 30, from_bytes(w.tobytes()))
    host.build(1, 8, graph, {}, {wid: 30})
    x = np.full((2, 3), 0.5, np.float32)
    out = host.compute(1, 8, {"x": x})
    np.testing.assert_array_equal(np.frombuffer(bytes(out["y"]), np.float32).reshape(2, 3), np.minimum(x + w, 6))
    host.create_tensor(1, 31, {"dataType": "float32", "shape": [2, 3]}, readable=True, writable=True)
    with pytest.raises(WebNNTypeError, match=r"^constant\(tensor\): the tensor was not created by createConst"):
        host.build(1, 9, graph, {}, {wid: 31})


def test_worker_revalidates_the_graph_it_is_sent() -> None:
    text, wid, w = _page_graph()
    graph = js_parse(text)
    clamp = next(o for o in graph["operations"] if o["op"] == "clamp")
    out = next(o for o in graph["operands"] if o["id"] == clamp["outputs"][0])
    out["shape"] = [3, 2]
    with pytest.raises(WebNNTypeError, match=r"^clamp: serialized output #\d+ \(float32\[3, 2\]\) does not match"):
        WorkerHost().build(1, 7, json.dumps(graph), {wid: w.tobytes()}, {})


def test_worker_create_tensor_validates_the_descriptor() -> None:
    with pytest.raises(WebNNTypeError, match=r"^createTensor: dimension 0 of float32\[2, 0\] is not a valid"):
        WorkerHost().create_tensor(1, 1, {"dataType": "float32", "shape": [2, 0]}, readable=True, writable=True)


def test_safe_call_never_lets_an_exception_through() -> None:
    assert safe_call(lambda a, b: a + b, 2, 3) == [None, 5]

    def _dispatch(e: BaseException) -> None:
        raise e

    err, result = safe_call(_dispatch, WebNNTypeError("[l] relu: bad"))
    assert result is None and js_parse(err) == {"name": "TypeError", "message": "[l] relu: bad"}
    err, _ = safe_call(_dispatch, InvalidStateError("MLTensor: gone"))
    assert js_parse(err) == {"name": "InvalidStateError", "message": "MLTensor: gone"}
    err, _ = safe_call(_dispatch, MemoryError())
    assert js_parse(err) == {"name": "OperationError", "message": "dispatch: out of memory in the WebNN worker"}
    # any other exception: the host method's name, no Python text (the traceback goes to the log)
    err, _ = safe_call(_dispatch, ValueError("boom"))
    internal = "dispatch: internal error in the WebNN engine (details in the worker's console)"
    assert js_parse(err) == {"name": "OperationError", "message": internal}
