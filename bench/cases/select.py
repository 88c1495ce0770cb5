"""Case selections, comma separated (`--webnn-cases`, `python -m bench run --cases`):

    wpt                   every vendored WPT case (tests/data/wpt, or $PYODIDE_WEBNN_WPT)
    wpt:conv2d+add        the cases of these operators (builder name or file stem)
    wpt@2, wpt:relu@1     at most N cases per operator file
    PATH                  a graph file, or every *.json graph file under a directory
    tflite:NAME+NAME      real models through py_core's TFLite loader (bench/cases/models.py), or a .tflite PATH
    onnx:NAME+NAME        an ONNX model through onnxruntime-web (bench/cases/frameworks.py), or onnx:PATH.onnx
    litert:NAME+NAME      a .tflite model through LiteRT.js (bench/cases/frameworks.py), or litert:PATH.tflite
    fuzz:N, fuzz:N@SEED   N seeded random graphs (bench/cases/fuzz.py; seed 0 by default)
    fuzz:SEED/ID+ID       the fuzz cases with these ids, as the report names them
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from bench.cases.frameworks import client_spec
from bench.cases.fuzz import select_fuzz
from bench.cases.graphs import WPT_DIR, BenchCase, graph_case, load_graph_file, load_wpt
from bench.cases.models import load_model

_SELECTOR_RE = re.compile(r"^wpt(?::(?P<ops>[A-Za-z0-9_+]+))?(?:@(?P<limit>\d+))?$")


def select(spec: str | Sequence[str], wpt_dir: str | Path | None = None) -> list[BenchCase]:
    """The cases named by a selection (see the module docstring); ids stay unique and in order."""
    items = [spec] if isinstance(spec, str) else list(spec)
    parts = [p.strip() for item in items for p in item.split(",") if p.strip()]
    found: dict[str, BenchCase] = {}
    for part in parts:
        m = _SELECTOR_RE.match(part)
        fuzzed = select_fuzz(part)
        if fuzzed is not None:
            cases = fuzzed
        elif m:
            ops = m.group("ops").split("+") if m.group("ops") else None
            limit = int(m.group("limit")) if m.group("limit") else None
            cases = load_wpt(wpt_dir or _wpt_dir(), ops, limit)
            if ops and not cases:
                raise ValueError(f"case selection '{part}': no WPT cases for {ops}")
        elif part.split(":", 1)[0] in ("onnx", "litert") and ":" in part:
            kind, names = part.split(":", 1)
            cases = [_client_case(kind, n) for n in names.split("+")]
        elif part.startswith("tflite:") or part.endswith(".tflite"):
            cases = [
                _model_case(n) for n in (part[len("tflite:") :].split("+") if part.startswith("tflite:") else [part])
            ]
        else:
            path = Path(part)
            if path.is_dir():
                cases = [c for f in sorted(path.glob("*.json")) for c in load_graph_file(f)]
            elif path.is_file():
                cases = load_graph_file(path)
            else:
                raise ValueError(f"case selection '{part}': not 'wpt[:ops][@N]' and no such file or directory")
        for c in cases:
            found.setdefault(c.id, c)
    return list(found.values())


def _model_case(name: str) -> BenchCase:
    """A TFLite model through py_core's loader (bench/cases/models.py)."""
    data = load_model(name)
    return graph_case(f"tflite:{data['name']}", data["name"], data["graph"], name, data)


def _client_case(kind: str, name: str) -> BenchCase:
    """A model through a real WebNN client: onnxruntime-web or LiteRT.js (bench/cases/frameworks.py)."""
    spec = client_spec(kind, name)
    stem = Path(spec["path"]).stem
    client = {"onnx": "onnxruntime-web", "litert": "LiteRT.js"}[kind]
    return BenchCase(
        f"{kind}:{stem}/{stem}",
        {"inputs": {}, "operators": [], "outputs": spec["outputs"]},
        spec["path"],
        model=f"{kind}:{stem}",
        tolerance={"ulp": 0, "atol": spec["atol"]},
        description=f"{Path(spec['path']).name} through {client}",
        client=spec,
    )


def _wpt_dir() -> Path:
    return Path(os.environ.get("PYODIDE_WEBNN_WPT") or WPT_DIR)
