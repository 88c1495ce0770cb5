"""ONNX models for the real WebNN clients (onnxruntime-web's WebNN execution provider), each small, with seeded
weights, written once into a cache directory that the dev server serves at /clients/models/:

| model | what it exercises | ORT's WebNN EP |
| --- | --- | --- |
| mobilenetv2 | the CNN of bench/perf/models.py (conv, depthwise, clip, gemm), 1x3x224x224 | one partition |
| encoder | a transformer encoder block: LayerNormalization, MatMul, Softmax, GELU (Erf), 1x16x64 | one partition |
| encoder_bert | a BERT-like encoder: 2 blocks, width 128, 2 heads, MLP 512 (BERT-tiny), 1x32x128 | one partition |
| lstm_gru | a sequence tagger: LSTM -> Atan -> GRU -> MatMul, 1x12x16 | three partitions: the EP has no Atan |

The GRU is written with linear_before_reset=0 (the reset gate applied before the recurrent matmul, WebNN's
resetAfter: false).  torch exports linear_before_reset=1, which onnxruntime-web 1.30's WebNN EP ignores: it
reads the attribute as "linear_before_reset " (trailing space, gru_op_builder.cc), so it always passes
resetAfter: false, and every WebNN implementation, native included, then disagrees with ORT's own WASM EP by
about 6e-2 on such a model.  `lstm_gru_lbr1` keeps torch's attribute to show that.

The MediaPipe TFLite models that LiteRT.js runs come from the mediapipe wheel (web/mediapipe_models.py), not from here.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from bench.perf import models as bench_models
from web.settings import REPO_ROOT

DEFAULT_OUT = REPO_ROOT / "build" / "client-models"
SEED = 20261124
# Bumped when a model changes, so a cache written by an older generator is rebuilt.
VERSION = 2
# The dev server may ask for two models at once: one generation at a time.
_LOCK = threading.Lock()


def encoder(width: int = 64, heads: int = 4, hidden: int = 128, layers: int = 1) -> Any:
    """`layers` post-norm transformer encoder blocks (default one: 4 heads, width 64, MLP 128, exact GELU), eval
    mode."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self, width: int = 64, heads: int = 4, hidden: int = 128) -> None:
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.norm1 = nn.LayerNorm(width)
            self.norm2 = nn.LayerNorm(width)
            self.fc1 = nn.Linear(width, hidden)
            self.fc2 = nn.Linear(hidden, width)

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            attn = torch.softmax(q @ k.transpose(-1, -2) / (c // self.heads) ** 0.5, dim=-1)
            y = (attn @ v).transpose(1, 2).reshape(b, t, c)
            x = self.norm1(x + self.proj(y))
            # approximate="none": the exporter writes the exact GELU with Erf at opset 17
            return self.norm2(x + self.fc2(nn.functional.gelu(self.fc1(x), approximate="none")))

    torch.manual_seed(SEED)
    return nn.Sequential(*[Encoder(width, heads, hidden) for _ in range(layers)]).eval()


def lstm_gru() -> Any:
    """LSTM (16 -> 24) -> atan -> GRU (24 -> 24) -> linear (24 -> 5): atan splits ORT's WebNN partitions."""
    import torch
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(16, 24, batch_first=True)
            self.gru = nn.GRU(24, 24, batch_first=True)
            self.head = nn.Linear(24, 5)

        def forward(self, x: Any) -> Any:
            y, _ = self.lstm(x)
            # ONNX Atan: not in the WebNN EP's operator table, so ORT runs it on its CPU EP in between
            y, _ = self.gru(torch.atan(y))
            return self.head(y)

    torch.manual_seed(SEED + 1)
    return Tagger().eval()


# name -> (model factory, input shape)
MODELS: dict[str, tuple[Any, tuple[int, ...]]] = {
    "mobilenetv2": (lambda: bench_models.mobilenet_v2(), (1, 3, 224, 224)),
    "encoder": (encoder, (1, 16, 64)),
    # small operators, so per-operator and per-dispatch costs dominate: over a hundred of them
    "encoder_bert": (lambda: encoder(width=128, heads=2, hidden=512, layers=2), (1, 32, 128)),
    "lstm_gru": (lstm_gru, (1, 12, 16)),
    "lstm_gru_lbr1": (lstm_gru, (1, 12, 16)),
}


def _set_linear_before_reset(path: Path, value: int) -> None:
    import onnx
    from onnx import helper

    model = onnx.load(str(path))
    for node in model.graph.node:
        if node.op_type == "GRU":
            kept = [a for a in node.attribute if a.name != "linear_before_reset"]
            del node.attribute[:]
            node.attribute.extend([*kept, helper.make_attribute("linear_before_reset", value)])
    onnx.save(model, str(path))


def generate(out: Path = DEFAULT_OUT) -> dict[str, Any]:
    """Write <name>.onnx for every model that is missing or stale; return the index (also index.json)."""
    with _LOCK:
        return _generate(out)


def _generate(out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    try:
        index: dict[str, Any] = json.loads(index_path.read_text())
    except (OSError, ValueError):
        index = {}
    if index.get("version") == VERSION and all((out / f"{n}.onnx").is_file() for n in MODELS):
        return index
    import torch

    index = {"version": VERSION, "models": {}}
    for name, (factory, shape) in MODELS.items():
        path = out / f"{name}.onnx"
        tmp = path.with_suffix(".onnx.tmp")
        with torch.no_grad():
            torch.onnx.export(factory(), (torch.zeros(shape),), str(tmp), input_names=["input"],
                              output_names=["output"], opset_version=17, do_constant_folding=True, dynamo=False)
        if name == "lstm_gru":
            _set_linear_before_reset(tmp, 0)
        tmp.replace(path)
        index["models"][name] = {"file": path.name, "input": {"name": "input", "shape": list(shape)}}
    index_path.write_text(json.dumps(index, indent=1))
    return index

