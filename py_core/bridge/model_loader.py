"""The gallery's model loading, run in the execution worker (polyfill/src/engine.js `loadModel`).

A .tflite file becomes a recorded WebNN program (py_core.loaders.recording) that the page replays against any
MLContext (web/gallery/lib/replay.js).  The engine imports this module on the first model, after installing
the loader's pure-Python wheels (tflite, flatbuffers); graphs never need it.
"""

from __future__ import annotations

from typing import Any

from py_core.bridge.worker_host import safe_call


def _record(data: Any, name: str) -> tuple[str, bytearray]:
    from py_core.loaders.recording import record_tflite

    program = record_tflite(data.to_bytes(), name)
    return program.dumps(), program.weights


def record_tflite(data: Any, name: str) -> list[Any]:
    """[None, (program JSON, weights)] or [error json, None]: a TFLiteModelError keeps its DOM name and message."""
    return safe_call(_record, data, name)
