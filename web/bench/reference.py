"""The CPython reference: the same case built with py_core's GraphBuilder and run by its executor, in-process.
It also yields the operator contexts the WPT tolerance rules need (operand shapes and options)."""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from py_core.testing import wpt
from py_core.testing.tolerance import OpContext
from web.bench.cases import BenchCase


@dataclass
class Outcome:
    """What running a case on one implementation gave: outputs (by name) or an error, and timings."""

    status: str  # "ok" | "error" | "unsupported" | "invalid"
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    error: str = ""
    stage: str = ""
    timings: dict[str, Any] = field(default_factory=dict)
    contexts: list[OpContext] = field(default_factory=list)


def environment() -> dict[str, Any]:
    """The reference implementation's own description for results and the report."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "platform": platform.platform(),
    }


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def run_reference(case: BenchCase, repeat: int = 3) -> Outcome:
    """Build and run `case` with py_core under CPython; never raises."""
    from py_core.runtime.executor import prepare
    from py_core.spec import OPS

    if case.invalid:
        return Outcome("invalid", error=case.invalid, stage="load")
    missing = sorted({n for n in case.ops if n not in OPS})
    if missing:
        return Outcome("unsupported", error=f"operator(s) not in py_core: {', '.join(missing)}", stage="build")
    timings: dict[str, Any] = {}
    stage = "build"
    try:
        graph = dict(case.graph)
        # wpt.build_graph takes its outputs from expectedOutputs; only the names are read
        graph["expectedOutputs"] = graph.get("expectedOutputs") or {n: {} for n in case.outputs}
        t = time.perf_counter()
        built, feeds, contexts = wpt.build_graph(graph)
        exe = prepare(built)
        timings["build_ms"] = _ms(time.perf_counter() - t)
        stage = "compute"
        feeds = {k: v for k, v in feeds.items() if k in exe.input_descs}
        t = time.perf_counter()
        outputs = {k: np.asarray(v) for k, v in exe.run(feeds).items()}
        timings["first_ms"] = _ms(time.perf_counter() - t)
        samples = []
        for _ in range(repeat):
            t = time.perf_counter()
            exe.run(feeds)
            samples.append(_ms(time.perf_counter() - t))
        timings["samples_ms"] = samples
        timings["median_ms"] = statistics.median(samples) if samples else timings["first_ms"]
        return Outcome("ok", outputs, timings=timings, contexts=list(contexts))
    except wpt.InvalidCase as e:
        return Outcome("invalid", error=str(e), stage=stage, timings=timings)
    except Exception as e:  # noqa: BLE001 - the bench reports every failure
        return Outcome("error", error=f"{type(e).__name__}: {e}", stage=stage, timings=timings)


_MEMO: dict[tuple[str, str, int], Outcome] = {}
_MEMO_SIZE = 256


def reference(case: BenchCase, repeat: int = 3) -> Outcome:
    """run_reference, memoized per case for this process (each browser test compares against it)."""
    key = (case.id, case.source, repeat)
    if key not in _MEMO:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = run_reference(case, repeat)
    return _MEMO[key]
