"""Benchmark the TFLite loader + py_core executor against native LiteRT (1 thread), in the same process.

For each model of web/mediapipe_models.py: load time (parse the .tflite, emit the graph through GraphBuilder,
prepare it; LiteRT: create the interpreter and allocate tensors), then the median run time over
interleaved runs (ours, LiteRT, ours, ...) after one warm-up each, their ratio, and the largest absolute
output difference.
Inputs are the astronaut photo preprocessed as the model expects (see web/mediapipe_models.py).  Both sides run
on one thread: NumPy's BLAS is pinned to 1 thread (as in Pyodide, which has none) unless the environment
already sets OPENBLAS_NUM_THREADS / OMP_NUM_THREADS.

    .venv/bin/python scripts/bench_tflite.py [--repeat 10] [model ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before NumPy loads its BLAS

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from py_core.loaders import load_graph, read_tflite  # noqa: E402
from web import mediapipe_models as models  # noqa: E402  (this checkout's, not another install's)


def astronaut_input(info: models.ModelInfo) -> np.ndarray:
    """The 512x512 astronaut photo resized to the model's input and scaled to its value range."""
    from skimage import data, transform

    lo, hi = info.value_range
    resized = transform.resize(data.astronaut(), info.size, anti_aliasing=True)
    return (resized * (hi - lo) + lo).astype(np.float32)[None]


def bench(name: str, repeat: int) -> dict[str, float]:
    from ai_edge_litert.interpreter import Interpreter

    path = models.model_path(name)
    x = astronaut_input(models.MODELS[name])
    t0 = time.perf_counter()
    parsed = read_tflite(path)
    t1 = time.perf_counter()
    ours = load_graph(parsed)
    t2 = time.perf_counter()
    it = Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    t3 = time.perf_counter()
    index = it.get_input_details()[0]["index"]
    outputs = it.get_output_details()

    def run_litert() -> list[np.ndarray]:
        it.set_tensor(index, x)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in outputs]

    ref = dict(zip([d["name"] for d in outputs], run_litert(), strict=True))
    got = dict(zip(ours.model.output_names, ours.run(x), strict=True))
    err = max(float(np.abs(got[k] - r).max()) for k, r in ref.items())
    ours_times, litert_times = [], []
    for _ in range(repeat):
        s = time.perf_counter()
        ours.run(x)
        ours_times.append(time.perf_counter() - s)
        s = time.perf_counter()
        run_litert()
        litert_times.append(time.perf_counter() - s)
    return {
        "parse": t1 - t0, "build": t2 - t1, "litert_load": t3 - t2, "ops": len(ours.graph.operations),
        "ours": statistics.median(ours_times), "litert": statistics.median(litert_times), "err": err,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=list(models.MODELS), help="model names (default: all)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per implementation (default 10)")
    args = ap.parse_args()
    print(f"{'model':28} {'ops':>4} {'parse':>7} {'build':>7} {'LiteRT load':>11} {'ours run':>9} "
          f"{'LiteRT run':>10} {'ratio':>6} {'max abs err':>11}")
    for name in args.models:
        r = bench(name, args.repeat)
        print(f"{name:28} {r['ops']:4d} {r['parse'] * 1e3:5.0f}ms {r['build'] * 1e3:5.0f}ms "
              f"{r['litert_load'] * 1e3:9.1f}ms {r['ours'] * 1e3:7.1f}ms {r['litert'] * 1e3:8.2f}ms "
              f"{r['ours'] / r['litert']:5.0f}x {r['err']:11.2g}")
    print(f"ratio = ours / LiteRT median run time; LiteRT 1 thread (XNNPACK), NumPy BLAS threads "
          f"{os.environ['OPENBLAS_NUM_THREADS']}")


if __name__ == "__main__":
    main()
