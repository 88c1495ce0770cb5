"""The recurrent kernels with the C kernels off (NumPy: the projection and every step) and on (the projection and
each direction's steps in one C call each: native.project, native.gru_loop, native.lstm_loop).  An LSTM and a GRU
of hidden size 128 over 50 steps, batch 1, input size 128, float32 in and out: the fastest of RUNS calls of the
whole kernel in ms, and the ratio.  Not part of any test or of `make bench`.
    .venv/bin/python scripts/bench_recurrent.py [RUNS]     (CPython, the host build of the C kernels)
    node scripts/bench_recurrent.mjs [RUNS]                (the same inside Pyodide under Node, the wasm build)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from py_core.kernels import native, recurrent

STEPS, BATCH, INPUT, HIDDEN = 50, 1, 128, 128


def best_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3  # the least disturbed run: the machine may be busy


def operands(gates: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    u = lambda *shape: rng.uniform(-0.3, 0.3, shape).astype(np.float32)  # noqa: E731
    return {"input": u(STEPS, BATCH, INPUT), "weight": u(1, gates * HIDDEN, INPUT),
            "recurrentWeight": u(1, gates * HIDDEN, HIDDEN), "bias": u(1, gates * HIDDEN),
            "recurrentBias": u(1, gates * HIDDEN)}


def main(runs: int) -> None:
    if not native.available():
        sys.exit("the C kernels are not loaded (make build; PYODIDE_WEBNN_NATIVE unset)")
    lstm, gru = operands(4), operands(3)
    cases = {
        "lstm": lambda: recurrent.lstm(**lstm, steps=STEPS, hiddenSize=HIDDEN, returnSequence=True,
                                       direction="forward", layout="iofg", activations=["sigmoid", "tanh", "tanh"]),
        "gru": lambda: recurrent.gru(**gru, steps=STEPS, hiddenSize=HIDDEN, resetAfter=True, returnSequence=True,
                                     direction="forward", layout="zrn", activations=["sigmoid", "tanh"]),
    }
    print(f"hidden {HIDDEN}, steps {STEPS}, batch {BATCH}, input {INPUT}; best of {runs} runs ({native.LOADED_FILE})")
    for name, fn in cases.items():
        fast = best_ms(fn, runs)
        native.use_native(False)
        try:
            slow = best_ms(fn, runs)
        finally:
            native.use_native(True)
        print(f"{name:5} NumPy {slow:8.3f} ms   C {fast:8.3f} ms   ratio {slow / fast:5.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
