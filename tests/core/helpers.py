"""Helpers shared by the tests/core modules: running one operator or a small graph through the executor,
random arrays, the tolerance checks, the validation-error check and the vendored WPT vectors.

Imported as `from helpers import ...`, like compiler_check: tests/core has no __init__.py, so pytest puts
this folder on sys.path when it imports the test modules."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from py_core.builder import GraphBuilder
from py_core.errors import WebNNTypeError
from py_core.runtime.executor import check_inputs, prepare
from py_core.testing import wpt

F16 = np.dtype(np.float16)
EPS32 = 2.0**-23
DTYPES = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]
WPT_DIR = Path(__file__).resolve().parents[1] / "data" / "wpt"


# ------------------------------------------------------------------------------------------------ running

def run_op(op: str, arrays: dict[str, np.ndarray], label: str = "", **options: Any) -> np.ndarray:
    """Build inputs -> op -> output and run it through the executor (which checks dtype and shape)."""
    b = GraphBuilder()
    handles = {k: b.input(k, {"dataType": v.dtype.name, "shape": list(v.shape)}) for k, v in arrays.items()}
    exe = prepare(b.build({"y": b.call(op, {**handles, **options}, label)}))
    check_inputs(exe, arrays)
    return exe.run(arrays)["y"]


def run_graph(build: Callable[[GraphBuilder, dict[str, Any]], Any], **arrays: np.ndarray) -> list[np.ndarray]:
    """Build a graph over named inputs with build(builder, handles), run it, return the outputs in order."""
    b = GraphBuilder()
    hs = {n: b.input(n, (a.dtype.name, list(a.shape))) for n, a in arrays.items()}
    out = build(b, hs)
    outs = out if isinstance(out, list) else [out]
    res = prepare(b.build({f"o{i}": o for i, o in enumerate(outs)})).run(arrays)
    return [res[f"o{i}"] for i in range(len(outs))]


def t64(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x, np.float64))


# ---------------------------------------------------------------------------------------------------- data

def rand(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Random data over the type's whole range; floats include NaN, +/-inf and -0.0."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = np.asarray(rng.standard_normal(shape) * 100, dtype=dt).reshape(shape)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt)
        mask = np.asarray(rng.random(shape) < 0.1).reshape(shape)
        a[mask] = rng.choice(specials, size=int(mask.sum()))
        return a
    info = np.iinfo(dt)
    return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)).reshape(shape)


# ------------------------------------------------------------------------------------------------- checks

def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Bit-exact: same dtype, shape and bytes (NaN payloads and -0.0 included)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                              expected.dtype, expected.shape)
    assert actual.tobytes() == expected.tobytes()


def assert_close_ulps(actual: np.ndarray, expected: np.ndarray, ulps: float, atol: float | np.ndarray = 0.0):
    """`expected` is float64; it is rounded once to the output type, then compared within `ulps` units in the
    last place (plus `atol`).  NaN and infinities must match exactly."""
    dt = actual.dtype
    want = np.asarray(expected, np.float64).astype(dt).astype(np.float64)
    got = actual.astype(np.float64)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    inf = np.isinf(got) | np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), (got[inf], want[inf])
    fin = ~(inf | np.isnan(want))
    spacing = np.spacing(np.abs(want[fin]).astype(dt)).astype(np.float64)
    tol = np.broadcast_to(atol, want.shape)[fin] + ulps * spacing
    err = np.abs(got[fin] - want[fin])
    assert (err <= tol).all(), f"max error {np.max(err - tol, initial=0)} over tolerance\n{got}\n{want}"


def assert_close_terms(got: np.ndarray, ref: np.ndarray, mag: np.ndarray, dtype: np.dtype, k: int) -> None:
    """A sum of k terms: float32 error <= (k + 4) eps |terms| (`mag`: the same computation over magnitudes);
    float16 adds one ULP of the result.  NaN must match NaN."""
    assert got.dtype == dtype and got.shape == ref.shape
    g = got.astype(np.float64)
    tol = (k + 4) * EPS32 * mag
    with np.errstate(invalid="ignore"):  # spacing(inf), inf - inf
        if dtype == F16:
            tol = tol + np.spacing(np.abs(ref).astype(F16)).astype(np.float64)
        ok = (np.isnan(g) & np.isnan(ref)) | (g == ref) | (np.abs(g - ref) <= tol)
    assert ok.all(), (f"max error {np.nanmax(np.abs(g - ref))}, "
                      f"worst tol {np.broadcast_to(tol, ok.shape).ravel()[np.argmax(~ok.ravel())]}")


def assert_type_error(fn: Callable[[], object], label: str, op: str, *fragments: str) -> str:
    """fn() raises WebNNTypeError whose message starts with "[label] op:" and holds every fragment; returns it."""
    with pytest.raises(WebNNTypeError, match=f"^{re.escape(f'[{label}] {op}:')}") as err:
        fn()
    message = str(err.value)
    assert message.startswith(f"[{label}] {op}:"), message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------------------------------- WPT vectors

def wpt_dir() -> Path:
    """The vendored WPT vectors (tests/data/wpt); their absence is an error, never an empty (skipped) case list."""
    if not WPT_DIR.is_dir():
        raise FileNotFoundError(f"the vendored WPT vectors are missing: {WPT_DIR} (see tests/data/wpt/README.md)")
    return WPT_DIR


def wpt_file(op: str) -> Path:
    """The vendored WPT file of one operator (file stem such as `conv_transpose2d`); missing is an error."""
    path = wpt_dir() / f"{op}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no vendored WPT vectors for {op!r}: {path} (see tests/data/wpt/README.md)")
    return path


def wpt_json(op: str) -> list[dict]:
    """The raw JSON test entries of one operator's vendored WPT file."""
    return json.loads(wpt_file(op).read_text(encoding="utf-8"))["tests"]


def wpt_cases(op: str) -> list:
    """The vendored WPT cases of one operator, for the official runner (py_core.testing.wpt)."""
    return [pytest.param(c, id=c.name) for c in wpt.load_file(wpt_file(op))]


def check_wpt_case(case) -> None:
    result = wpt.run_case(case)
    assert result.status == wpt.PASS, result.message


def decode_wpt(v):
    """A value from the WPT conformance JSON: bigints are strings ending in "n"."""
    return int(v[:-1]) if isinstance(v, str) and v.endswith("n") else v


def conformance_cases(*files: str) -> list:
    """The single-operator cases of the vendored WPT files, one pytest.param each.  The JSON lost NaN/Infinity
    (null), so cases holding a null are left out."""
    cases = [c for f in files for c in wpt_json(f)]
    return [pytest.param(c, id=c["name"]) for c in cases if "null" not in json.dumps(c)]
