"""The WPT conformance runner gives the same pass list inside Pyodide (under Node) as in CPython.

Runs tests/pyodide/run_wpt.mjs: Pyodide (the version in PYODIDE_VERSION) + NumPy 2.0.2 from the asset cache
($PYODIDE_WEBNN_CACHE/pyodide-<version>, filled by `python scripts/fetch_assets.py`), the repository mounted
with NODEFS, py_core.testing.wpt over tests/data/wpt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from py_core.testing import native_check, wpt
from web.settings import PYODIDE_VERSION

pytestmark = pytest.mark.pyodide

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATA = REPO / "tests" / "data" / "wpt"
RUNNER = HERE / "run_wpt.mjs"
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"


def asset_dir() -> Path:
    root = os.environ.get("PYODIDE_WEBNN_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "pyodide-webnn"
    return base / f"pyodide-{PYODIDE_VERSION}"


# The two builds of the C kernels (scripts/build_native.sh): "plain" SIMD128 and "relaxed" (f32x4.relaxed_madd
# in the packed product), each through every check: the relaxed one loads under Node with the V8 flag.
BUILDS = {"plain": ("0", [], "_webnn_kernels.wasm32.wasm"),
          "relaxed": ("1", ["--experimental-wasm-relaxed-simd"], "_webnn_kernels.relaxed.wasm32.wasm")}
# an engine without relaxed SIMD (Node 20 without the flag) refuses the relaxed file: the plain one loads instead
FALLBACK = ("1", [], "_webnn_kernels.wasm32.wasm")


def run_node(build: str, *args: str, timeout: int = 900) -> dict:  # type: ignore[type-arg]
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the Pyodide conformance run needs Node.js")
    assets = asset_dir()
    if not (assets / "pyodide.mjs").is_file() or not (assets / NUMPY_WHEEL).is_file():
        pytest.skip(f"Pyodide asset cache missing at {assets}: run `python scripts/fetch_assets.py`")
    relaxed, flags, lib = FALLBACK if build == "fallback" else BUILDS[build]
    if build == "fallback":
        probe = REPO / "py_core" / "kernels" / "native" / BUILDS["relaxed"][2]
        valid = subprocess.run([node, "-p", f"WebAssembly.validate(require('fs').readFileSync({str(probe)!r}))"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
        if valid != "false":
            pytest.skip("this Node compiles relaxed SIMD by default: no engine here refuses the relaxed build")
    if not (REPO / "py_core" / "kernels" / "native" / lib).is_file():
        pytest.skip(f"{lib} is not built (make build)")
    proc = subprocess.run([node, *flags, str(RUNNER), "--relaxed", relaxed, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"run_wpt.mjs {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout)
    # the build asked for is the one that ran the kernels
    assert report["native"] and report["native_file"] == lib, (report["native"], report["native_file"])
    return report


@pytest.fixture(scope="module", params=list(BUILDS))
def pyodide_report(request: pytest.FixtureRequest) -> dict:  # type: ignore[type-arg]
    report = run_node(request.param, "--data", str(DATA))
    report["build"] = request.param
    t = report["timings"]
    print(f"\nPyodide {report['python']} / NumPy {report['numpy']} ({request.param} C kernels): boot "
          f"{t['pyodide_boot_s']} s, numpy {t['numpy_load_s']} s, {len(report['results'])} cases in {t['run_s']} s, "
          f"total {t['total_s']} s", file=sys.stderr)
    return report


def test_pyodide_runs_every_case(pyodide_report: dict) -> None:  # type: ignore[type-arg]
    assert pyodide_report["python"].startswith("3.12")
    assert pyodide_report["numpy"] == "2.0.2"
    # the wasm C kernels (make build) ran the compiled conv2d/gemm/matmul cases, as in the browser's worker
    assert pyodide_report["native"], "py_core/kernels/native/_webnn_kernels.wasm32.wasm did not load in Pyodide"
    assert len(pyodide_report["results"]) == len(wpt.load_dir(DATA))


@pytest.mark.parametrize("build", [*BUILDS, "fallback"])
def test_wasm_c_kernels_match_float64(build: str) -> None:
    """Each wasm build of the C kernels against float64 formulas (py_core.testing.native_check), in Pyodide."""
    report = run_node(build, "--native", timeout=300)
    assert len(report["checks"]) == len(list(native_check.cases()))
    bad = [c for c in report["checks"] if not c["error"] <= c["tolerance"]]
    assert not bad, bad[:10]
    # geometry at 2^31 - 1, 2^31 and 2^32 - 1 would read the worker heap into outputs with 32-bit indices; each
    # case runs the kernels directly and through a compiled graph, both layouts, and
    # the NCHW conv whose columns are gathered into the product's panels
    edge = [c["case"] for c in report["checks"] if c["case"].startswith("edge")]
    assert len(edge) == 9 * len(native_check.EDGE_CASES), edge


def test_pyodide_pass_list_equals_cpython(pyodide_report: dict) -> None:  # type: ignore[type-arg]
    cpython = wpt.run_dir(DATA)
    cpython_passed = sorted(r.id for r in cpython if r.status == wpt.PASS)
    pyodide_passed = pyodide_report["passed"]
    only_cpython = sorted(set(cpython_passed) - set(pyodide_passed))
    only_pyodide = sorted(set(pyodide_passed) - set(cpython_passed))
    by_id = {r["op"] + "/" + r["name"]: r for r in pyodide_report["results"]}
    detail = [f"{i}: {by_id[i]['status']} {by_id[i]['message']}" for i in only_cpython[:20]]
    assert not only_cpython and not only_pyodide, (
        f"passes only in CPython: {len(only_cpython)}, only in Pyodide: {len(only_pyodide)}\n"
        + "\n".join(detail) + ("\n" + "\n".join(only_pyodide[:20]) if only_pyodide else ""))


def test_pyodide_pass_list_is_the_same_without_the_compiled_plan(pyodide_report: dict) -> None:  # type: ignore[type-arg]
    """The compiled plan (py_core/compiler/plan.py) on (the other runs) and off (--plan 0): the same passes."""
    if pyodide_report["build"] != "plain":
        pytest.skip("once, with the plain build")
    off = run_node("plain", "--data", str(DATA), "--plan", "0")
    assert sorted(off["passed"]) == sorted(pyodide_report["passed"])
