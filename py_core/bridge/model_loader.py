"""The gallery's model loading, run in the execution worker (polyfill/src/engine/model.js).

A .tflite file becomes a graph file (py_core.loaders.recording, docs/graph-file.md) that the page replays against
any MLContext (web/lib/graphfile.js).  The engine imports this module on the first model, after installing
the loader's pure-Python wheels (tflite, flatbuffers); graphs never need it.
"""

from __future__ import annotations

from typing import Any

from py_core.bridge.worker_host import safe_call


def _record(data: Any, name: str) -> tuple[str, bytes]:
    from py_core.loaders.recording import record_tflite

    graph = record_tflite(data.to_bytes(), name)
    return graph.dumps(), graph.weights


def record_tflite(data: Any, name: str) -> list[Any]:
    """[None, (graph file JSON, weights)] or [error json, None]: a TFLiteModelError keeps its DOM name and message."""
    return safe_call(_record, data, name)
