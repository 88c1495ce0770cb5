"""Bench cases from real TFLite models: py_core's TFLite loader records the model's WebNN builder calls
(py_core/loaders/recording.py, a "webnn-program"), and the program becomes a graph case: constants as base64
slices of the weights, one seeded random input per model input in the model's value range, no expected values
(the CPython core's outputs are the expectation), the WPT ULP rule plus 1e-3 absolute as tolerance, and
`model` set so the report charts its latency.

Selections: `tflite:selfie_segmentation+digits...` (names of web/mediapipe_models.py's registry, or any
`<name>.tflite` under the installed mediapipe package), or a path to a `.tflite` file.
"""

from __future__ import annotations

import base64
import importlib.util
import math
from pathlib import Path
from typing import Any

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


def _value(v: Any, names: dict[int, str]) -> Any:
    """A program value as a graph-case argument: operand ids become names, tagged non-finite floats floats."""
    if isinstance(v, list):
        return [_value(x, names) for x in v]
    if isinstance(v, dict):
        if set(v) == {"operand"}:
            return names[v["operand"]]
        if set(v) == {"number"}:
            return {"Infinity": math.inf, "-Infinity": -math.inf}.get(v["number"], math.nan)
        return {k: _value(x, names) for k, x in v.items()}
    return v


def program_graph(program: dict[str, Any], weights: bytes, value_range: tuple[float, float]) -> dict[str, Any]:
    """A webnn-program (JSON + weights) as a graph case (the README's graph format)."""
    output_names = {o["operand"]: name for name, o in program["outputs"].items()}
    names: dict[int, str] = {}
    inputs: dict[str, Any] = {}
    operators: list[dict[str, Any]] = []
    for step in program["steps"]:
        if "input" in step:
            names[step["id"]] = step["input"]
            low, high = value_range
            inputs[step["input"]] = {
                "descriptor": step["desc"],
                "data": {"random": {"seed": len(inputs), "low": low, "high": high}},
            }
        elif "constant" in step:
            name = names[step["id"]] = f"t{step['id']}"
            at = step["constant"]
            raw = weights[at["offset"] : at["offset"] + at["byteLength"]]
            inputs[name] = {
                "descriptor": step["desc"],
                "data": {"base64": base64.b64encode(raw).decode()},
                "constant": True,
            }
        else:
            outs = [output_names.get(i, f"t{i}") for i in step["out"]]
            names.update(zip(step["out"], outs, strict=True))
            args = [{f"arg{i}": _value(a, names)} for i, a in enumerate(step["args"])]
            if step.get("options"):
                args.append({"options": _value(step["options"], names)})
            operators.append({"name": step["op"], "arguments": args, "outputs": outs if len(outs) > 1 else outs[0]})
    return {"inputs": inputs, "operators": operators, "outputs": list(program["outputs"])}


def load_model(name: str) -> dict[str, Any]:
    """A graph case (as a graph file would hold it) for one TFLite model."""
    from py_core.loaders.recording import record_tflite

    path, value_range = model_file(name)
    program = record_tflite(path)
    model = path.stem
    graph = program_graph(program.json, program.weights, value_range)
    # a whole model sums dozens of ULP budgets, yet an output that cancels to near zero still ends thousands of
    # ULP away; its outputs are pixels, logits or probabilities, so 1e-3 absolute is the meaningful bound there
    return {
        "name": model,
        "model": model,
        "description": f"{path.name} through py_core's TFLite loader",
        "tolerance": {"atol": 1e-3},
        "graph": graph,
    }
