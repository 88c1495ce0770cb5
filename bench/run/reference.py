"""The CPython reference: the same case built with py_core's GraphBuilder and run by its executor, in-process.
It also yields the operator contexts the WPT tolerance rules need (operand shapes and options).

For cases without expected values (graph files, TFLite models) `float64_reference` runs the same graph with
every floating-point tensor widened to float64 (the reference kernels, no compiler pass): the judge of every
implementation there, the CPython reference included, so a difference between the polyfill and native WebNN is
charged to whichever is off, not to whichever differs from the polyfill's own engine."""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.cases.graphs import BenchCase
from py_core.errors import WebNNError
from py_core.testing import wpt
from py_core.testing.tolerance import OpUnderTest


@dataclass
class Outcome:
    """What running a case on one implementation gave: outputs (by name) or an error, and timings."""

    status: str  # "ok" | "error" | "unsupported" | "invalid"
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    error: str = ""
    stage: str = ""
    timings: dict[str, Any] = field(default_factory=dict)
    contexts: list[OpUnderTest] = field(default_factory=list)
    dtypes: dict[str, str] = field(default_factory=dict)  # the operand types of float64 outputs
    error_name: str = ""  # the DOM name the page would see (py_core.errors), else the Python exception's


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
    if case.client is not None:
        return _run_framework(case, repeat)
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
        name = e.dom_name if isinstance(e, WebNNError) else type(e).__name__
        return Outcome("error", error=f"{type(e).__name__}: {e}", stage=stage, timings=timings, error_name=name)


def _run_framework(case: BenchCase, repeat: int) -> Outcome:
    """A framework case on the framework's own CPython build (onnxruntime / LiteRT): the expectation."""
    from pathlib import Path

    from bench.cases.frameworks import arrays, native_runner

    assert case.client is not None
    try:
        t = time.perf_counter()
        run = native_runner(case.client["kind"], Path(case.client["path"]))
        feeds = arrays(case.client["inputs"])
        timings: dict[str, Any] = {"build_ms": _ms(time.perf_counter() - t)}
        t = time.perf_counter()
        outputs = run(feeds)
        timings["first_ms"] = _ms(time.perf_counter() - t)
        samples = []
        for _ in range(repeat):
            t = time.perf_counter()
            run(feeds)
            samples.append(_ms(time.perf_counter() - t))
        timings["samples_ms"] = samples
        timings["median_ms"] = statistics.median(samples) if samples else timings["first_ms"]
        return Outcome("ok", outputs, timings=timings)
    except Exception as e:  # noqa: BLE001 - the bench reports every failure
        return Outcome("error", error=f"{type(e).__name__}: {e}", stage="compute")


def _wide(a: Any) -> Any:
    return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


def _typed(a: Any, dtype: np.dtype | None) -> Any:
    """A float64 value as its operand type holds it (float16 or float32), kept in float64."""
    if dtype is None or dtype.kind != "f" or not isinstance(a, np.ndarray) or a.dtype != np.float64:
        return a
    return a.astype(dtype).astype(np.float64)


def _overflowed(a: np.ndarray, dtype: Any) -> np.ndarray:
    """A float64 result with the values its operand type cannot hold as the infinities that type gives: the
    precision stays float64, the range is the operand's (a float16 operand past 65504 is infinite)."""
    dt = np.dtype(dtype)
    if dt.kind != "f" or dt == np.float64 or a.dtype != np.float64:
        return a
    over = np.isinf(a.astype(dt)) & np.isfinite(a)
    return np.where(over, np.copysign(np.inf, a), a) if over.any() else a


def run_float64(case: BenchCase) -> Outcome:
    """The case's float outputs computed in float64 (inputs and constants widened once, every kernel then runs
    on float64 arrays; explicit casts still round, from the value rounded to their input's type; a value
    beyond its operand type's range is infinite, as in that type); `contexts` unused.  Never raises."""
    from py_core.compiler import CompileOptions
    from py_core.runtime.executor import prepare

    if case.client is not None:
        return Outcome("invalid", error="a framework case: the framework's own CPython build is the expectation")
    if case.invalid or case.has_expected:
        return Outcome("invalid", error="the case has its own expected values" if case.has_expected else case.invalid)
    try:
        graph = dict(case.graph)
        graph["expectedOutputs"] = {n: {} for n in case.outputs}
        built, feeds, _ = wpt.build_graph(graph)
        exe = prepare(built, CompileOptions.none())
        vals = [_wide(a) for a in exe._template]
        declared = {i: np.asarray(a).dtype for i, a in enumerate(exe._template)}
        for name, slot in exe._inputs:
            vals[slot] = _wide(np.asarray(feeds[name]))
            declared[slot] = np.asarray(feeds[name]).dtype
        with np.errstate(all="ignore"):
            for step in exe.steps:
                kw: dict[str, Any] = {}
                for pname, ref in step.args:
                    if ref is None:
                        kw[pname] = None
                    elif isinstance(ref, int):
                        # a cast converts the value its operand holds: rounded to the operand's type first
                        kw[pname] = _typed(vals[ref], declared.get(ref)) if step.op == "cast" else vals[ref]
                    else:
                        kw[pname] = [vals[i] for i in ref]
                result = step.call(**kw)
                results = result if isinstance(result, (list, tuple)) else (result,)
                for slot, (dtype, shape), arr in zip(step.outputs, step.out_types, results, strict=True):
                    arr = np.asarray(arr)
                    if arr.shape != shape:
                        raise ValueError(f"{step.op}: {list(arr.shape)} in float64, {list(shape)} expected")
                    vals[slot], declared[slot] = _overflowed(arr, dtype), np.dtype(dtype)
        outputs = {name: np.asarray(vals[slot]) for name, slot in exe._outputs}
        dtypes = {name: exe.output_descs[name].data_type.numpy_name for name in outputs}
        return Outcome("ok", outputs, dtypes=dtypes)
    except Exception as e:  # noqa: BLE001 - no float64 judge for this case: the float32 reference decides
        return Outcome("error", error=f"{type(e).__name__}: {e}", stage="float64")


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


_MEMO64: dict[tuple[str, str], Outcome] = {}


def float64_reference(case: BenchCase) -> Outcome:
    """run_float64, memoized per case for this process."""
    key = (case.id, case.source)
    if key not in _MEMO64:
        if len(_MEMO64) >= _MEMO_SIZE:
            _MEMO64.pop(next(iter(_MEMO64)))
        _MEMO64[key] = run_float64(case)
    return _MEMO64[key]
