"""Comparisons: one implementation's outputs against the expected values under the WPT tolerance rules
(py_core.testing.tolerance), and every two implementations against each other (maximum ULP and absolute
error over all outputs)."""

from __future__ import annotations

import base64
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.cases.graphs import BenchCase
from py_core.testing import wpt
from py_core.testing.tolerance import FLOAT_TYPES, OpUnderTest, Tolerance, check, graph_tolerance, ulp_distance


@dataclass
class Check:
    """The verdict on one implementation's outputs."""

    ok: bool
    max_ulp: float = 0.0
    max_abs: float = 0.0
    tolerance: Tolerance | None = None
    problems: list[str] = field(default_factory=list)


def decode_outputs(
    raw: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, np.ndarray], dict[str, tuple[int, ...]]]:
    """Outputs as bench.js returns them ({dataType, shape, data: base64 little-endian, truncated?}) to arrays,
    and their shapes.  A truncated output (too large to ship whole) stays a 1-D array of its first values."""
    arrays, shapes = {}, {}
    for name, o in raw.items():
        dtype = np.dtype(o["dataType"]).newbyteorder("<")
        arr = np.frombuffer(base64.b64decode(o["data"]), dtype=dtype).astype(o["dataType"])
        shapes[name] = tuple(int(d) for d in o["shape"])
        arrays[name] = arr if o.get("truncated") else arr.reshape(shapes[name])
    return arrays, shapes


def tolerance_for(case: BenchCase, contexts: Sequence[OpUnderTest], dtype: str) -> Tolerance:
    """The WPT rule summed over the case's operators; members of the case's own `tolerance` replace it."""
    own = case.tolerance or {}
    if "ulp" in own and "atol" in own:
        return Tolerance(int(own["ulp"]), float(own["atol"]))
    rule = graph_tolerance(contexts or [OpUnderTest(n) for n in case.ops], dtype)
    return Tolerance(int(own.get("ulp", rule.ulp)), float(own.get("atol", rule.atol)))


FLOAT64 = "float64 reference"


def expected_arrays(
    case: BenchCase,
    reference: Mapping[str, np.ndarray] | None,
    float64: tuple[Mapping[str, np.ndarray], Mapping[str, str]] | None = None,
) -> tuple[dict[str, tuple[np.ndarray, bool, str, tuple[int, ...]]], str | None]:
    """name -> (values, prefix-only, dataType, shape), and where they come from: "case" (its own values, the
    spec's float64 results for WPT), the "float64 reference" (outputs computed in float64, with their operand
    types), else "reference" (the CPython reference in the operand types)."""
    if case.has_expected:
        out = {}
        for name, spec in case.graph["expectedOutputs"].items():
            d = spec["descriptor"]
            values, prefix = wpt.expected_values(spec["data"], d["dataType"], tuple(d["shape"]))
            out[name] = (values, prefix, d["dataType"], tuple(d["shape"]))
        return out, "case"
    if float64 is not None:
        outputs, dtypes = float64
        return {n: (a.ravel(), False, dtypes[n], tuple(a.shape)) for n, a in outputs.items()}, FLOAT64
    if reference is not None:
        return {n: (a.ravel(), False, a.dtype.name, tuple(a.shape)) for n, a in reference.items()}, "reference"
    return {}, None


def check_outputs(
    case: BenchCase,
    actual: Mapping[str, np.ndarray],
    contexts: Sequence[OpUnderTest],
    reference: Mapping[str, np.ndarray] | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    float64: tuple[Mapping[str, np.ndarray], Mapping[str, str]] | None = None,
) -> tuple[Check, str | None]:
    """Compare `actual` with the case's expected values (or, when it has none, the float64 reference's outputs,
    else the reference's).  `shapes` gives the shapes of truncated outputs (their first values, 1-D)."""
    expected, source = expected_arrays(case, reference, float64)
    if source is None:
        return Check(False, problems=["no expected values: the case has none and the reference failed"]), None
    result = Check(True)
    for name, (values, prefix, dtype, shape) in expected.items():
        if name not in actual:
            result.problems.append(f"{name}: missing from the outputs")
            continue
        arr = np.asarray(actual[name])
        got_shape = tuple((shapes or {}).get(name, arr.shape))
        if arr.dtype.name != dtype or got_shape != shape:
            result.problems.append(f"{name}: got {arr.dtype.name}{list(got_shape)}, expected {dtype}{list(shape)}")
            continue
        try:
            tol = tolerance_for(case, contexts, dtype)
        except (KeyError, ValueError) as e:
            result.problems.append(f"{name}: no tolerance rule ({e}); give the case a 'tolerance'")
            continue
        result.tolerance = tol if result.tolerance is None else max(result.tolerance, tol, key=lambda t: t.ulp)
        if prefix or arr.size < values.size:  # WPT's prefix rule, or a truncated output: the first values
            n = min(values.size, arr.size)
            got, values = arr.reshape(-1)[:n], values.reshape(-1)[:n]
        else:
            got = arr
        c = check(list(contexts), got, values, dtype, tolerance=tol)
        result.max_ulp, result.max_abs = max(result.max_ulp, c.max_ulp), max(result.max_abs, c.max_abs)
        if not c.ok:
            budget = f"{tol.ulp} ULP" + (f" / {tol.atol:g} ATOL" if tol.atol else "")
            result.problems.append(f"{name}: max {c.max_ulp:g} ULP / {c.max_abs:g} abs exceeds {budget}")
    result.ok = not result.problems
    return result, source


def distance(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> tuple[float, float]:
    """Maximum ULP distance and absolute difference between two sets of outputs (inf when they do not even
    agree in names, data types or shapes).  Integer outputs: the ULP column is the exact difference."""
    if set(a) != set(b):
        return math.inf, math.inf
    worst_ulp, worst_abs = 0.0, 0.0
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.dtype != y.dtype:
            return math.inf, math.inf
        if x.shape != y.shape:
            small, large = (x, y) if x.size < y.size else (y, x)
            if small.ndim != 1 or small.size >= large.size:
                return math.inf, math.inf
            # a truncated output (its first values, 1-D) against a whole one: compare what both have
            x, y = small, large.reshape(-1)[: small.size]
        if x.size == 0:
            continue
        dtype = x.dtype.name
        if dtype in FLOAT_TYPES:
            u = float(np.max(ulp_distance(x, y, dtype)))
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            with np.errstate(invalid="ignore"):
                d = np.where((np.isnan(x64) & np.isnan(y64)) | (x64 == y64), 0.0, np.abs(x64 - y64))
            ab = float(np.max(np.where(np.isnan(d), math.inf, d)))
        else:
            u = float(max(int(v) for v in np.ravel(ulp_distance(x, y, dtype))))
            ab = u
        worst_ulp, worst_abs = max(worst_ulp, u), max(worst_abs, ab)
    return worst_ulp, worst_abs


@dataclass(frozen=True)
class Pair:
    """Two implementations compared on one case."""

    case: str
    a: str
    b: str
    max_ulp: float
    max_abs: float


def pairwise(case_id: str, outputs: Mapping[str, Mapping[str, np.ndarray]]) -> list[Pair]:
    """Every two implementations (by column label) that produced outputs for the case."""
    labels = sorted(outputs)
    return [Pair(case_id, a, b, *distance(outputs[a], outputs[b])) for a, b in itertools.combinations(labels, 2)]
