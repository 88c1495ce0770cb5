"""Where a run of a small recurrent graph goes: the two WebNN graphs onnxruntime-web's WebNN EP builds for the
client tests' LSTM/GRU tagger (`lstm_gru` in bench/cases/client_models.py: batch 1, 12 steps, input 16, hidden 24;
the EP leaves Atan between them), built through GraphBuilder with seeded weights and compiled as a worker compiles
them.  Prints per graph: the whole `Executable.run` (best and median of RUNS, in turn with the same graph compiled
without the pack pass, which prepares the recurrent weights at every run), each step's share, and inside the
recurrent kernels the C loop, the input projection and the weights' preparation (widening and gate reordering) or
the C calls bound to fixed buffers;
the rest of a run is the executor's own Python.  Steps are timed one by one, so the totals include the timers'
cost.  A tool for kernel work (docs/performance.md), not part of any test or of `make bench`.
    .venv/bin/python scripts/profile_recurrent.py [RUNS]     (CPython, the host build of the C kernels)
    node scripts/profile_recurrent.mjs [RUNS]                (the same inside Pyodide under Node, the wasm build)
"""

from __future__ import annotations

import collections
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from py_core.builder import GraphBuilder
from py_core.compiler import CompileOptions
from py_core.graph import Graph
from py_core.kernels import native, recurrent
from py_core.runtime.executor import Executable, prepare

STEPS, BATCH, INPUT, HIDDEN, CLASSES = 12, 1, 16, 24, 5
F32 = {"dataType": "float32"}


def _const(b: GraphBuilder, rng: np.random.Generator, *shape: int) -> Any:
    return b.constant({**F32, "shape": list(shape)}, rng.uniform(-0.3, 0.3, shape).astype(np.float32))


def _zeros(b: GraphBuilder, *shape: int) -> Any:
    return b.constant({**F32, "shape": list(shape)}, np.zeros(shape, np.float32))


def lstm_graph(rng: np.random.Generator) -> Graph:
    """Transpose -> LSTM (sequence out) -> squeeze -> transpose, the weights and zero states constants."""
    b = GraphBuilder()
    x = b.transpose(b.input("input", {**F32, "shape": [BATCH, STEPS, INPUT]}), permutation=[1, 0, 2])
    _, _, seq = b.lstm(x, _const(b, rng, 1, 4 * HIDDEN, INPUT), _const(b, rng, 1, 4 * HIDDEN, HIDDEN), STEPS,
                       HIDDEN, bias=_const(b, rng, 1, 4 * HIDDEN), recurrentBias=_const(b, rng, 1, 4 * HIDDEN),
                       initialHiddenState=_zeros(b, 1, BATCH, HIDDEN), initialCellState=_zeros(b, 1, BATCH, HIDDEN),
                       returnSequence=True, layout="iofg")
    y = b.transpose(b.reshape(seq, [STEPS, BATCH, HIDDEN]), permutation=[1, 0, 2])
    return b.build({"y": y})


def gru_graph(rng: np.random.Generator) -> Graph:
    """Transpose -> GRU (sequence out, reset before) -> squeeze -> transpose -> matmul -> add."""
    b = GraphBuilder()
    x = b.transpose(b.input("input", {**F32, "shape": [BATCH, STEPS, HIDDEN]}), permutation=[1, 0, 2])
    _, seq = b.gru(x, _const(b, rng, 1, 3 * HIDDEN, HIDDEN), _const(b, rng, 1, 3 * HIDDEN, HIDDEN), STEPS, HIDDEN,
                   bias=_const(b, rng, 1, 3 * HIDDEN), recurrentBias=_const(b, rng, 1, 3 * HIDDEN),
                   initialHiddenState=_zeros(b, 1, BATCH, HIDDEN), returnSequence=True, resetAfter=False,
                   layout="zrn")
    y = b.transpose(b.reshape(seq, [STEPS, BATCH, HIDDEN]), permutation=[1, 0, 2])
    return b.build({"y": b.add(b.matmul(y, _const(b, rng, HIDDEN, CLASSES)), _const(b, rng, CLASSES))})


def _times(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e3)
    return out


class Timers:
    """Module functions wrapped to add their time (ms) and calls to one table while active."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        real = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.ms[name] += (time.perf_counter() - start) * 1e3
                self.calls[name] += 1

        self._undo.append((owner, attr, real))
        setattr(owner, attr, timed)

    def steps(self, exe: Executable) -> None:
        for i, step in enumerate(exe.steps):
            self.wrap(step, "call", f"step {i:2} {step.op}{f'[{step.variant}]' if step.variant else ''}")

    def undo(self) -> None:
        for owner, attr, real in reversed(self._undo):
            setattr(owner, attr, real)
        self._undo.clear()


def interleaved(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Times of a and b in turn (the order alternating), so a busy machine slows both alike."""
    ta, tb = [], []
    for r in range(runs + 1):
        for fn, out in ((a, ta), (b, tb)) if r % 2 else ((b, tb), (a, ta)):
            start = time.perf_counter()
            fn()
            if r:  # round 0 warms up
                out.append((time.perf_counter() - start) * 1e3)
    return ta, tb


def profile(name: str, graph: Graph, runs: int) -> None:
    exe = prepare(graph)
    unpacked = prepare(graph, replace(CompileOptions.default(), pack=False))
    feed = {n: np.random.default_rng(1).uniform(-1, 1, d.shape).astype(np.float32)
            for n, d in exe.input_descs.items()}
    plain, base = interleaved(lambda: exe.run(feed), lambda: unpacked.run(feed), runs)
    timers = Timers()
    timers.steps(exe)
    for attr in ("_canonical", "_wide", "_state", "_project"):
        timers.wrap(recurrent, attr, f"  recurrent.{attr}")
    for attr in ("gru_loop", "lstm_loop", "recurrent_ok"):
        timers.wrap(native, attr, f"  native.{attr}")
    timers.wrap(native.Bound, "__call__", "  native.Bound: a C call bound at the first run")
    exe.run(feed)
    timers.ms.clear()
    timers.calls.clear()
    timed = sum(_times(lambda: exe.run(feed), runs)) / runs
    timers.undo()
    print(f"{name}: {len(exe.steps)} steps ({', '.join(s.op for s in exe.steps)}); run best "
          f"{min(plain):.3f} ms, median {statistics.median(plain):.3f} ms; with timers {timed:.3f} ms")
    print(f"  compiled without the pack pass (every weight prepared at each run; products unpacked too), in turn: "
          f"best {min(base):.3f} ms, median {statistics.median(base):.3f} ms")
    stepped = sum(v for k, v in timers.ms.items() if k.startswith("step")) / runs
    for key in sorted(timers.ms):
        print(f"  {timers.ms[key] / runs:8.3f} ms  x{timers.calls[key] // runs:<3} {key}")
    print(f"  {timed - stepped:8.3f} ms       executor around the steps")


def main(runs: int) -> None:
    where = native.LOADED_FILE if native.available() else "the C kernels not loaded: NumPy steps"
    print(f"lstm_gru's two WebNN graphs: batch {BATCH}, {STEPS} steps, input {INPUT}, hidden {HIDDEN}; "
          f"{runs} runs ({where})")
    rng = np.random.default_rng(0)
    profile("lstm graph", lstm_graph(rng), runs)
    profile("gru graph", gru_graph(rng), runs)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
