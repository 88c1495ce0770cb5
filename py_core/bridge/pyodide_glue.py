"""Worker entry points called from JavaScript inside Pyodide; the only module that handles JS proxies.
https://www.w3.org/TR/webnn/#api-mlcontext

Every function returns [error-json-or-None, result] (see worker_host.safe_call) so no Python exception
ever crosses into JavaScript as an opaque PythonError.  Buffers come in as JS Uint8Array proxies and are
copied once: `assign_to` writes straight into a NumPy array, `to_bytes` into a bytes object.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from py_core.bridge import console
from py_core.bridge.worker_host import HOST, error_json, safe_call

console.install()


def _filler(data: Any) -> Any:
    """A fill(target) that copies a JS Uint8Array into the array's bytes (formats must match: view as u8)."""
    return lambda target: data.assign_to(target.reshape(-1).view(np.uint8))


def _build(ctx: int, gid: int, graph_json: str, const_ids_json: str, const_buffers: Any,
           constant_tensors_json: str) -> dict[str, Any]:
    ids = json.loads(const_ids_json)
    data = {int(i): buf.to_bytes() for i, buf in zip(ids, const_buffers, strict=True)}
    tensors = {int(k): int(v) for k, v in json.loads(constant_tensors_json).items()}
    return HOST.build(ctx, gid, graph_json, data, tensors)


def build(ctx: int, gid: int, graph_json: str, const_ids_json: str, const_buffers: Any,
          constant_tensors_json: str) -> list[Any]:
    return safe_call(_build, ctx, gid, graph_json, const_ids_json, const_buffers, constant_tensors_json)


def _create_tensor(ctx: int, tid: int, desc_json: str, readable: bool, writable: bool, constant: bool,
                   data: Any, index: int) -> int:
    table = HOST.create_tensor(ctx, tid, json.loads(desc_json), readable, writable, constant, index)
    if data is not None:
        HOST.write_tensor(ctx, tid, _filler(data))
    return table


def create_tensor(ctx: int, tid: int, desc_json: str, readable: bool, writable: bool, constant: bool,
                  data: Any = None, index: int = -1) -> list[Any]:
    """[error, the address table's address] (direct mode, `index` >= 0; else 0)."""
    return safe_call(_create_tensor, ctx, tid, desc_json, readable, writable, constant, data, index)


def enable_direct() -> list[Any]:
    """Direct mode (worker_host.WorkerHost.direct), before any tensor exists: [error, the table's address]."""

    def _enable() -> int:
        HOST.direct = True
        # The executor runs every graph under np.errstate(all="ignore") (the data defines division by zero and
        # overflow, not an error); with that state the worker's own from here on, NumPy's ufuncs skip their
        # floating-point flag checks inside and out of that block: relu of 4 floats 16-20 -> 10-13 us in
        # Chromium's worker.  Nothing here relies on NumPy's warnings (they only reached the console).
        np.seterr(all="ignore")
        return int(HOST.table.__array_interface__["data"][0])

    return safe_call(_enable)


# The timeline's hot path (write, dispatch, read: every session.run of a WebNN client) returns its value, or
# its error as a JSON string, instead of safe_call's [error, value] list: JavaScript then reads the result with
# no list proxy to index and destroy (measured in Pyodide under Node: writeTensor of 16 bytes 35 -> 14 us).


def _value_or_error(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as e:
        return error_json(fn, e)


def write_tensor(ctx: int, tid: int, nbytes: int) -> Any:
    """The address in the heap to copy the tensor's new `nbytes` bytes to (a number: JavaScript copies into the
    heap itself, with no proxy of its Uint8Array), or the error as a JSON string."""
    return _value_or_error(HOST.write_address, ctx, tid, nbytes)


def read_tensor(ctx: int, tid: int, nbytes: int) -> Any:
    """The address of the tensor's `nbytes` bytes in the heap (a number: no proxy, and JavaScript slices the heap
    itself, 4 us against 14 us through getBuffer), or the error as a JSON string."""
    return _value_or_error(HOST.read_address, ctx, tid, nbytes)


# dispatch's tensor bindings as the page sends them (JSON text): a client dispatches the same few bindings
# again and again, so each text is parsed once (a bounded cache)
_BINDINGS: dict[str, dict[str, int]] = {}


def _bindings(text: str) -> dict[str, int]:
    parsed = _BINDINGS.get(text)
    if parsed is None:
        if len(_BINDINGS) >= 256:
            _BINDINGS.clear()
        parsed = _BINDINGS[text] = {str(k): int(v) for k, v in json.loads(text).items()}
    return parsed


def _dispatch(ctx: int, gid: int, inputs_json: str, outputs_json: str) -> None:
    HOST.dispatch(ctx, gid, _bindings(inputs_json), _bindings(outputs_json))


def dispatch(ctx: int, gid: int, inputs_json: str, outputs_json: str) -> Any:
    """None, or the error as a JSON string."""
    return _value_or_error(_dispatch, ctx, gid, inputs_json, outputs_json)


def _bind(bid: int, ctx: int, gid: int, inputs_json: str, outputs_json: str) -> int:
    return HOST.bind(bid, ctx, gid, _bindings(inputs_json), _bindings(outputs_json))


def bind(bid: int, ctx: int, gid: int, inputs_json: str, outputs_json: str) -> Any:
    """Direct mode: check a dispatch's bindings once, as `bid`; 1 when `bound_c` has a C call for them, 0 when
    they run through `run`, or the error as a JSON string."""
    return _value_or_error(_bind, bid, ctx, gid, inputs_json, outputs_json)


def bound_c(bid: int) -> str:
    """The JSON of WorkerHost.bound_c (after bind said 1)."""
    return json.dumps(HOST.bound_c(bid))


_run_bound = HOST.run_bound


def run(bid: int) -> Any:
    """Direct mode's dispatch of the bindings `bid`: None, or the error as a JSON string.  One int in, nothing
    to convert out (the outputs' addresses are in the table)."""
    try:
        return _run_bound(bid)
    except Exception as e:
        return error_json(_run_bound, e)


def _compute(ctx: int, gid: int, names_json: str, buffers: Any) -> list[Any]:
    inputs = {}
    for name, buf in zip(json.loads(names_json), buffers, strict=True):
        target = HOST.input_target(ctx, gid, name)
        _filler(buf)(target)
        inputs[name] = target
    results = HOST.compute(ctx, gid, inputs)
    return [json.dumps(list(results)), list(results.values())]


def compute(ctx: int, gid: int, names_json: str, buffers: Any) -> list[Any]:
    return safe_call(_compute, ctx, gid, names_json, buffers)


def destroy_tensor(tid: int) -> list[Any]:
    return safe_call(HOST.destroy_tensor, tid)


def destroy_graph(gid: int) -> list[Any]:
    return safe_call(HOST.destroy_graph, gid)


def destroy_context(ctx: int) -> list[Any]:
    return safe_call(HOST.destroy_context, ctx)


def enable_blas() -> list[Any]:
    """After the worker loaded SciPy: route float32 products through OpenBLAS sgemm."""

    def _enable() -> bool:
        from scipy.linalg import blas  # imported late: SciPy loads only for graphs with enough product work

        from py_core.kernels.matrix import use_blas

        use_blas(blas.sgemm)
        return True

    return safe_call(_enable)


def stats() -> list[Any]:
    return safe_call(lambda: json.dumps(HOST.stats()))
