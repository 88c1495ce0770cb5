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

from py_core.testing import wpt
from py_core.testing.tolerance import FLOAT_TYPES, OpContext, Tolerance, check, graph_tolerance, ulp_distance
from web.bench.cases import BenchCase


@dataclass
class Check:
    """The verdict on one implementation's outputs."""

    ok: bool
    max_ulp: float = 0.0
    max_abs: float = 0.0
    tolerance: Tolerance | None = None
    problems: list[str] = field(default_factory=list)


def decode_outputs(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Outputs as bench.js returns them ({dataType, shape, data: base64 little-endian}) to arrays."""
    out = {}
    for name, o in raw.items():
        dtype = np.dtype(o["dataType"]).newbyteorder("<")
        arr = np.frombuffer(base64.b64decode(o["data"]), dtype=dtype).astype(o["dataType"])
        out[name] = arr.reshape(tuple(o["shape"]))
    return out


def tolerance_for(case: BenchCase, contexts: Sequence[OpContext], dtype: str) -> Tolerance:
    """The WPT rule summed over the case's operators; members of the case's own `tolerance` replace it."""
    own = case.tolerance or {}
    if "ulp" in own and "atol" in own:
        return Tolerance(int(own["ulp"]), float(own["atol"]))
    rule = graph_tolerance(contexts or [OpContext(n) for n in case.ops], dtype)
    return Tolerance(int(own.get("ulp", rule.ulp)), float(own.get("atol", rule.atol)))


def expected_arrays(
    case: BenchCase, reference: Mapping[str, np.ndarray] | None
) -> tuple[dict[str, tuple[np.ndarray, bool, str, tuple[int, ...]]], str | None]:
    """name -> (values, prefix-only, dataType, shape), and where they come from ("case" or "reference")."""
    if case.has_expected:
        out = {}
        for name, spec in case.graph["expectedOutputs"].items():
            d = spec["descriptor"]
            values, prefix = wpt.expected_values(spec["data"], d["dataType"], tuple(d["shape"]))
            out[name] = (values, prefix, d["dataType"], tuple(d["shape"]))
        return out, "case"
    if reference is not None:
        return {n: (a.ravel(), False, a.dtype.name, tuple(a.shape)) for n, a in reference.items()}, "reference"
    return {}, None


def check_outputs(
    case: BenchCase,
    actual: Mapping[str, np.ndarray],
    contexts: Sequence[OpContext],
    reference: Mapping[str, np.ndarray] | None = None,
) -> tuple[Check, str | None]:
    """Compare `actual` with the case's expected values (or the reference's outputs when it has none)."""
    expected, source = expected_arrays(case, reference)
    if source is None:
        return Check(False, problems=["no expected values: the case has none and the reference failed"]), None
    result = Check(True)
    for name, (values, prefix, dtype, shape) in expected.items():
        if name not in actual:
            result.problems.append(f"{name}: missing from the outputs")
            continue
        arr = np.asarray(actual[name])
        if arr.dtype.name != dtype or tuple(arr.shape) != shape:
            result.problems.append(f"{name}: got {arr.dtype.name}{list(arr.shape)}, expected {dtype}{list(shape)}")
            continue
        try:
            tol = tolerance_for(case, contexts, dtype)
        except (KeyError, ValueError) as e:
            result.problems.append(f"{name}: no tolerance rule ({e}); give the case a 'tolerance'")
            continue
        result.tolerance = tol if result.tolerance is None else max(result.tolerance, tol, key=lambda t: t.ulp)
        got = arr.reshape(-1)[: values.size] if prefix else arr
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
        if x.dtype != y.dtype or x.shape != y.shape:
            return math.inf, math.inf
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
