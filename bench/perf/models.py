"""Benchmark graphs with one set of weights for every implementation: MobileNetV2 (written here in torch,
seeded random weights, exported to ONNX) and the single-operator kernels, each as an ONNX file plus the
WebNN graph the polyfill page replays: a graph file (docs/graph-file.md, py_core/graphfile.py), <name>.json
with its weights in <name>.bin.

    python -m bench models [--out DIR]     # default: build/bench-models

The WebNN graph is translated from the exported ONNX file (batch-norm already folded into the convolutions
by the exporter), so both runtimes read the very same weight bytes.  index.json lists every graph:
    {name: {"graph": "<name>.json", "weights": "<name>.bin" | null, "inputs": {name: {dataType, shape}},
            "outputs": [name], "weightBytes": n, "kind": "onnx" | "chain" | "tflite", "onnx"?, "tflite"?}}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from web.settings import REPO_ROOT

DEFAULT_OUT = REPO_ROOT / "build" / "bench-models"
SEED = 20261121


# ------------------------------------------------------------------------------------------------ torch


def mobilenet_v2() -> Any:
    """MobileNetV2 (Sandler et al. 2018, width 1.0, 224x224, 1000 classes) in plain torch, eval mode."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                                   nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6())
        return nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int):
            super().__init__()
            hidden = cin * expand
            layers = [] if expand == 1 else [conv_bn(cin, hidden, 1, 1)]
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, 1, act=False)]
            self.block = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            y = self.block(x)
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # (expansion t, channels c, repeats n, first stride s), from the paper's Table 2
            cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                   (6, 320, 1, 1)]
            layers: list[nn.Module] = [conv_bn(3, 32, 3, 2)]
            cin = 32
            for t, c, n, s in cfg:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers.append(conv_bn(cin, 1280, 1, 1))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(1280, 1000)

        def forward(self, x: Any) -> Any:
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.classifier(x)

    torch.manual_seed(SEED)
    model = MobileNetV2()
    # random but well-scaled: He-initialized convs, BN statistics that keep activations O(1)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
        elif isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.0)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)  # type: ignore[union-attr]
                m.running_var.uniform_(0.5, 1.5)  # type: ignore[union-attr]
    return model.eval()


def export_onnx(model: Any, shape: tuple[int, ...], path: Path, names: tuple[str, str] = ("input", "output"),
                inputs: int = 1) -> None:
    import torch

    args = tuple(torch.zeros(shape) for _ in range(inputs))
    in_names = [names[0]] if inputs == 1 else [f"{names[0]}{i}" for i in range(inputs)]
    torch.onnx.export(model, args, str(path), input_names=in_names, output_names=[names[1]], opset_version=17,
                      do_constant_folding=True, dynamo=False)


# ------------------------------------------------------------------------------------------------ ONNX -> WebNN


def onnx_to_graph(path: Path) -> Any:
    """Build the small ONNX subset these graphs use with py_core's GraphBuilder; returns the graph file."""
    import onnx
    from onnx import numpy_helper

    from py_core.graphfile import Recorder

    m = onnx.load(str(path))
    g = m.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for node in g.node:  # Constant nodes (shapes for Reshape) become initializers too
        if node.op_type == "Constant":
            inits[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    inferred = onnx.shape_inference.infer_shapes(m).graph

    def dims(v: Any) -> list[int]:
        return [d.dim_value for d in v.type.tensor_type.shape.dim]

    shapes = {v.name: dims(v) for v in list(inferred.value_info) + list(inferred.output)}
    b = Recorder(path.stem, path.name)
    vals: dict[str, Any] = {v.name: b.input(v.name, {"dataType": "float32", "shape": dims(v)})
                            for v in g.input if v.name not in inits}

    def val(name: str) -> Any:
        if name not in vals:
            arr = np.ascontiguousarray(inits[name], dtype=np.float32)
            vals[name] = b.constant({"dataType": "float32", "shape": list(arr.shape)}, arr)
        return vals[name]

    for node in g.node:
        a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        ins, out, t = list(node.input), node.output[0], node.op_type
        if t == "Constant":
            continue
        if t == "Conv":
            p = list(a.get("pads", [0, 0, 0, 0]))
            opts: dict[str, Any] = {"padding": [p[0], p[2], p[1], p[3]], "strides": list(a.get("strides", [1, 1])),
                                    "dilations": list(a.get("dilations", [1, 1])), "groups": int(a.get("group", 1))}
            if len(ins) > 2:
                opts["bias"] = val(ins[2])
            vals[out] = b.conv2d(val(ins[0]), val(ins[1]), **opts)
        elif t == "Clip":
            lo, hi = (float(inits[n]) for n in ins[1:3])
            vals[out] = b.clamp(val(ins[0]), minValue=lo, maxValue=hi)
        elif t in ("Relu", "Sigmoid", "Add", "Mul", "MatMul"):
            vals[out] = getattr(b, t.lower())(*[val(n) for n in ins])
        elif t == "GlobalAveragePool":
            vals[out] = b.averagePool2d(val(ins[0]))
        elif t in ("Flatten", "Reshape"):
            vals[out] = b.reshape(val(ins[0]), shapes[out])
        elif t == "Gemm":
            opts = {"bTranspose": bool(a.get("transB", 0)), "aTranspose": bool(a.get("transA", 0)),
                    "alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0))}
            if len(ins) > 2:
                opts["c"] = val(ins[2])
            vals[out] = b.gemm(val(ins[0]), val(ins[1]), **opts)
        else:
            raise NotImplementedError(f"ONNX {t} is not in the benchmark subset")
    return b.build({o.name: vals[o.name] for o in g.output})


# ------------------------------------------------------------------------------------------------ the cases


def kernel_models() -> dict[str, tuple[Any, list[tuple[int, ...]]]]:
    """The single-operator cases: torch modules with seeded weights and their input shapes."""
    import torch
    from torch import nn

    torch.manual_seed(SEED)

    class MatMul(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(512, 512) / 512**0.5)

        def forward(self, x: Any) -> Any:
            return x @ self.w

    class Unary(nn.Module):
        def __init__(self, fn: Any):
            super().__init__()
            self.fn = fn

        def forward(self, x: Any) -> Any:
            return self.fn(x)

    class Add(nn.Module):
        def forward(self, a: Any, b: Any) -> Any:
            return a + b

    act = (1, 64, 112, 112)
    return {
        "matmul512": (MatMul(), [(512, 512)]),
        "conv3x3_64": (nn.Conv2d(64, 64, 3, padding=1), [(1, 64, 56, 56)]),
        "depthwise3x3_144": (nn.Conv2d(144, 144, 3, padding=1, groups=144), [(1, 144, 56, 56)]),
        "relu": (Unary(torch.relu), [act]),
        "sigmoid": (Unary(torch.sigmoid), [act]),
        "add": (Add(), [act, act]),
    }


def chain_graph(length: int) -> Any:
    """`length` small element-wise operators in a row (add, mul, relu, sub, ...) on a [1, 16] tensor: the
    executor's per-operator overhead, since the kernels themselves take a microsecond or two."""
    from py_core.graphfile import Recorder

    b = Recorder(f"chain{length}", "bench/perf/models.py")
    x = b.input("x", {"dataType": "float32", "shape": [1, 16]})
    k = b.constant({"dataType": "float32", "shape": [16]}, np.full(16, 0.5, np.float32))
    y = x
    for i in range(length):
        y = [lambda v: b.add(v, k), lambda v: b.mul(v, k), b.relu, lambda v: b.sub(v, k)][i % 4](y)
    return b.build({"y": y})


def tflite_graphs() -> dict[str, tuple[Any, str]]:
    """The gallery's TFLite models (MediaPipe) recorded by py_core's loader: name -> (graph file, .tflite path)."""
    from py_core.loaders.recording import record_tflite
    from web.mediapipe_models import MODELS, model_path

    found = {}
    for name in MODELS:
        try:
            path = model_path(name)
            found[name] = (record_tflite(path), str(path))
        except Exception as e:  # a model the loader cannot build yet is reported, not fatal
            print(f"bench_models: skipping {name}: {type(e).__name__}: {e}", file=sys.stderr)
    return found


# Bump when the set of cases or how one is made changes: a build/bench-models of an older revision is regenerated
# (is_current), so a new case needs no `--regen` on machines that ran the bench before.
REVISION = 2


def generate(out: Path, with_tflite: bool = True) -> dict[str, Any]:
    """Write <name>.json and <name>.bin (a graph file) for every case, <name>.onnx where ORT runs it too;
    return the index (also written as index.json)."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {}

    def write(name: str, graph: Any, **extra: Any) -> None:
        graph.name = name
        graph.save(out / name)
        inputs = {n: {"dataType": d["dataType"], "shape": d["shape"]} for n, d in graph.inputs.items()}
        index[name] = {"graph": f"{name}.json", "weights": f"{name}.bin" if graph.weights else None, "inputs": inputs,
                       "outputs": list(graph.outputs), "weightBytes": len(graph.weights), **extra}

    # mobilenetv2_b4: the same network at batch 4, which the polyfill splits over both cores
    cases: dict[str, tuple[Any, list[tuple[int, ...]]]] = {"mobilenetv2": (mobilenet_v2(), [(1, 3, 224, 224)]),
             "mobilenetv2_b4": (mobilenet_v2(), [(4, 3, 224, 224)]), **kernel_models()}
    for name, (model, shapes) in cases.items():
        onnx_path = out / f"{name}.onnx"
        with torch.no_grad():
            export_onnx(model.eval(), shapes[0], onnx_path, inputs=len(shapes))
        write(name, onnx_to_graph(onnx_path), onnx=onnx_path.name, kind="onnx")
    for length in (1, 500):
        write(f"chain{length}", chain_graph(length), kind="chain")
    if with_tflite:
        for name, (graph, path) in tflite_graphs().items():
            write(name, graph, tflite=path, kind="tflite")
    (out / "index.json").write_text(json.dumps(index, indent=1))
    (out / "revision").write_text(f"{REVISION}\n")
    return index


def is_current(out: Path) -> bool:
    """Whether `out` holds this revision's cases in this checkout's graph-file format (an older build of
    build/bench-models, with fewer cases or in a format since replaced, is regenerated rather than failing in the
    page)."""
    from py_core.graphfile import FORMAT, VERSION

    try:
        if (out / "revision").read_text().strip() != str(REVISION):
            return False
        index = json.loads((out / "index.json").read_text())
        for entry in index.values():
            head = json.loads((out / entry["graph"]).read_text())
            return bool(head.get("format") == FORMAT and head.get("version") == VERSION)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench models: write the graphs (the perf bench does it on first use)."""
    ap = argparse.ArgumentParser(prog="python -m bench models", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    for name, entry in generate(args.out).items():
        print(f"{name:18} weights {entry['weightBytes'] / 1e6:6.2f} MB  -> {args.out / entry['graph']}")
    return 0

