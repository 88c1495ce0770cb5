"""Model importers that build WebNN graphs through a builder interface; the CPython runner.

`tflite.py` documents the builder interface and walks .tflite models; this module adapts py_core's
GraphBuilder to it and runs the built graph with the executor: `run_model(path, *inputs)`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.loaders.tflite import TFLiteModel, build_tflite, read_tflite

__all__ = ["GraphBuilderAdapter", "LoadedModel", "TFLiteModel", "build_tflite", "load_graph", "read_tflite",
           "run_model"]


class GraphBuilderAdapter:
    """The loader's builder interface over py_core's GraphBuilder (CPython, or the worker in Pyodide)."""

    def __init__(self, builder: Any = None):
        from py_core.builder import GraphBuilder

        self.builder = builder if builder is not None else GraphBuilder()

    def input(self, name: str, desc: Mapping[str, Any]) -> Any:
        return self.builder.input(name, desc)

    def constant(self, desc: Mapping[str, Any], data: np.ndarray) -> Any:
        return self.builder.constant(desc, data)

    def op(self, name: str, *args: Any, **options: Any) -> Any:
        return getattr(self.builder, name)(*args, **options)

    def build(self, outputs: Mapping[str, Any]) -> Any:
        return self.builder.build(outputs)


@dataclass
class LoadedModel:
    """A model built into a py_core graph and prepared for the executor."""

    model: TFLiteModel
    graph: Any
    executable: Any

    def run(self, *inputs: Any) -> list[np.ndarray]:
        """Outputs in the model's output order, from inputs in its input order."""
        from py_core.runtime.executor import check_inputs

        names = self.model.input_names
        if len(inputs) != len(names):
            raise TypeError(f"the model takes {len(names)} input(s) {names}, got {len(inputs)}")
        feeds = {n: np.asarray(x, dtype=self.executable.input_descs[n].data_type.numpy_name)
                 for n, x in zip(names, inputs, strict=True)}
        check_inputs(self.executable, feeds)
        out = self.executable.run(feeds)
        return [out[n] for n in self.model.output_names]


def load_graph(source: str | os.PathLike[str] | bytes | TFLiteModel) -> LoadedModel:
    """Build a model through py_core's GraphBuilder and prepare it for the executor (no cache)."""
    from py_core.runtime.executor import prepare

    model = source if isinstance(source, TFLiteModel) else read_tflite(source)
    graph = build_tflite(model, GraphBuilderAdapter())
    return LoadedModel(model, graph, prepare(graph))


@functools.lru_cache(maxsize=16)
def _cached(path: str, mtime_ns: int) -> LoadedModel:
    return load_graph(path)


def run_model(path: str | os.PathLike[str], *inputs: Any) -> list[np.ndarray]:
    """Run a .tflite model in CPython: its outputs, in order, as NumPy arrays (built once per file)."""
    p = os.path.abspath(os.fspath(path))
    return _cached(p, os.stat(p).st_mtime_ns).run(*inputs)

