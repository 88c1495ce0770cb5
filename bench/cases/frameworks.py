"""Bench cases that run a model through a real WebNN client instead of a graph we build: `onnx:<file>` through
onnxruntime-web (its WebNN execution provider, or its own WASM EP) and `litert:<file>` through LiteRT.js (its
'webnn' accelerator, or its WASM path), with the page-side harness bench/pages/clients/clients.js.

Each such case runs in every browser on the framework's WASM path (implementation `wasm`), on the polyfill and
on every native context variant, in the bench page; the CPython row is the same framework's native build
(onnxruntime / ai-edge-litert), which is the expectation of the others.  Inputs are seeded random in the
model's value range, fixed per case; outputs are float32 and keyed by the framework's output names.

Selections: `onnx:NAME+NAME` (a model of bench/cases/client_models.py, generated on first use) or `onnx:PATH.onnx`;
`litert:NAME+NAME` (web/mediapipe_models.py's MediaPipe models or any <name>.tflite under mediapipe/) or
`litert:PATH.tflite`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.cases import client_models
from bench.cases.models import model_file
from web.settings import REPO_ROOT

KINDS = ("onnx", "litert")
# the clients' criterion (tests/browser/test_clients.py): within 1e-3 of the outputs' range (at least 1e-3)
RELATIVE_TOLERANCE = 1e-3


def model_path(kind: str, name: str) -> tuple[Path, tuple[float, float]]:
    """The model file of a selection part and the value range of its inputs."""
    if kind == "onnx":
        if name.endswith(".onnx"):
            if not Path(name).is_file():
                raise ValueError(f"onnx:{name}: no such file")
            return Path(name), (-1.0, 1.0)
        cm = client_models
        if name not in cm.MODELS:
            raise ValueError(f"onnx:{name}: not a .onnx file nor a model of bench/cases/client_models.py "
                             f"({', '.join(cm.MODELS)})")
        out = REPO_ROOT / "build" / "client-models"
        cm.generate(out)
        return out / f"{name}.onnx", (-1.0, 1.0)
    return model_file(name)


def _float_inputs(specs: list[tuple[str, str, list[int]]], value_range: tuple[float, float], where: str
                  ) -> list[dict[str, Any]]:
    out = []
    for i, (name, dtype, shape) in enumerate(specs):
        if dtype != "float32":
            raise ValueError(f"{where}: input '{name}' is {dtype}; the bench feeds float32 inputs only")
        rng = np.random.default_rng(i)
        arr = rng.uniform(*value_range, size=shape).astype(np.float32)  # drawn in float64, rounded once
        out.append({"name": name, "dataType": "float32", "shape": list(shape),
                    "data": base64.b64encode(arr.astype("<f4").tobytes()).decode()})
    return out


def onnx_inputs(path: Path, value_range: tuple[float, float]) -> list[dict[str, Any]]:
    """The model's inputs (dynamic dimensions as 1) with seeded random values."""
    import onnxruntime as ort  # type: ignore[import-untyped]

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    types = {"tensor(float)": "float32"}
    specs = [(i.name, types.get(i.type, i.type), [d if isinstance(d, int) else 1 for d in i.shape])
             for i in sess.get_inputs()]
    return _float_inputs(specs, value_range, f"onnx:{path.name}")


def litert_inputs(path: Path, value_range: tuple[float, float]) -> list[dict[str, Any]]:
    """The model's inputs in their order, with seeded random values."""
    from ai_edge_litert.interpreter import Interpreter  # type: ignore[import-untyped]

    it = Interpreter(model_path=str(path))
    specs = [(d["name"], np.dtype(d["dtype"]).name, [int(x) for x in d["shape"]]) for d in it.get_input_details()]
    return _float_inputs(specs, value_range, f"litert:{path.name}")


def arrays(inputs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The inputs as float32 arrays by name."""
    return {i["name"]: np.frombuffer(base64.b64decode(i["data"]), "<f4").astype(np.float32).reshape(i["shape"])
            for i in inputs}


def native_runner(kind: str, path: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The framework's CPython build, loaded once: onnxruntime's CPU EP, or LiteRT with XNNPACK (1 thread)."""
    if kind == "onnx":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]

        def run_ort(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {n: np.asarray(v, np.float32) for n, v in zip(names, sess.run(names, feeds), strict=True)}

        return run_ort
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()

    def run_litert(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        for d in it.get_input_details():
            it.set_tensor(d["index"], feeds[d["name"]])
        it.invoke()
        return {d["name"]: np.asarray(it.get_tensor(d["index"]), np.float32).copy() for d in it.get_output_details()}

    return run_litert


def run_native(kind: str, path: Path, inputs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The framework's CPython build on the inputs, once."""
    return native_runner(kind, path)(arrays(inputs))


def client_spec(kind: str, name: str) -> dict[str, Any]:
    """What a framework case carries: kind, file, sha256, inputs (base64) and output names."""
    path, value_range = model_path(kind, name)
    inputs = onnx_inputs(path, value_range) if kind == "onnx" else litert_inputs(path, value_range)
    outputs = run_native(kind, path, inputs)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    # relative to the smallest output's range (logits next to probabilities: the probabilities set the bound)
    scale = max(1.0, min((float(np.abs(a).max()) for a in outputs.values() if a.size), default=1.0))
    return {
        "kind": kind,
        "path": str(path),
        "url": f"/__bench_models/{digest[:16]}/{path.name}",
        "sha256": digest,
        "inputs": inputs,
        "outputs": list(outputs),
        "atol": RELATIVE_TOLERANCE * scale,
    }
