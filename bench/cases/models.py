"""Bench cases from real TFLite models: py_core's TFLite loader records the model's WebNN builder calls
(py_core/loaders/recording.py, a graph file: docs/graph-file.md), and the file becomes a graph case: constants as base64
slices of the weights, one seeded random input per model input in the model's value range, no expected values
(the CPython core's outputs are the expectation), the WPT ULP rule plus 1e-3 absolute as tolerance, and
`model` set so the report charts its latency.

Selections: `tflite:selfie_segmentation+digits...` (names of web/mediapipe_models.py's registry, or any
`<name>.tflite` under the installed mediapipe package), or a path to a `.tflite` file.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from bench.cases.graphs import file_graph
from web.mediapipe_models import MODELS, model_path


def model_file(name: str) -> tuple[Path, tuple[float, float]]:
    """The .tflite file of a model name (or path) and its input value range."""
    if name.endswith(".tflite") and Path(name).is_file():
        return Path(name), (0.0, 1.0)
    if name in MODELS:
        return model_path(name), MODELS[name].value_range
    spec = importlib.util.find_spec("mediapipe")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(loc).rglob(f"{name}.tflite"))
        if found:
            return found[0], (0.0, 1.0)
    raise ValueError(f"model '{name}': not a .tflite file, not in web/mediapipe_models.py, not under mediapipe/")


def load_model(name: str) -> dict[str, Any]:
    """A graph case (as a graph file would hold it) for one TFLite model."""
    from py_core.loaders.recording import record_tflite

    path, value_range = model_file(name)
    model = path.stem
    graph = file_graph(record_tflite(path), value_range)
    # a whole model sums dozens of ULP budgets, yet an output that cancels to near zero still ends thousands of
    # ULP away; its outputs are pixels, logits or probabilities, so 1e-3 absolute is the meaningful bound there
    return {
        "name": model,
        "model": model,
        "description": f"{path.name} through py_core's TFLite loader",
        "tolerance": {"atol": 1e-3},
        "graph": graph,
    }
