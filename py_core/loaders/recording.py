"""TFLite models recorded as graph files: the loader's builder calls, validated, as a `py_core.graphfile.GraphFile`.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

The loader emits through `py_core.graphfile.Recorder` (a GraphBuilder that records each validated call), so a
file only holds calls a conforming MLGraphBuilder accepts.  `web/lib/graphfile.js` replays one against any
MLGraphBuilder (the polyfill's or a native one); `py_core.graphfile.replay` does in CPython.
"""

from __future__ import annotations

import os

from py_core.graphfile import GraphFile, Recorder


def record_tflite(source: str | os.PathLike[str] | bytes | bytearray | memoryview, name: str = "") -> GraphFile:
    """Read a .tflite model and record its WebNN builder calls as a graph file (weights in its side buffer)."""
    from py_core.loaders.tflite import build_tflite, read_tflite

    model = read_tflite(source, name=name or None)  # errors name the model as the page knows it
    label = name or (os.path.basename(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else "")
    graph: GraphFile = build_tflite(model, Recorder(os.path.splitext(label)[0], label))
    return graph
