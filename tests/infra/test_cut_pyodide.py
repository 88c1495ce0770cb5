"""The Pyodide the polyfill serves (scripts/trim_pyodide.mjs, `make pyodide`): its standard library and NumPy cut to
what the engine imports, as bytecode, and consistent with its lock file.  The trace that chose the modules is
checked here against the core's own import statements, read independently with CPython's ast."""

from __future__ import annotations

import ast
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from web.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings.from_env()
CUT = SETTINGS.cut_pyodide_dir

pytestmark = pytest.mark.skipif(not (CUT / "trim.json").is_file(), reason="no cut Pyodide: make pyodide")


def meta() -> dict:
    return json.loads((CUT / "trim.json").read_text())


def core_imports() -> set[str]:
    """Every absolute import in the shipped core (module level and inside functions), as dotted names."""
    names: set[str] = set()
    for path in (ROOT / "py_core").rglob("*.py"):
        if "testing" in path.relative_to(ROOT / "py_core").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return names


def test_the_dev_server_serves_the_cut_build() -> None:
    assert SETTINGS.pyodide_dir == CUT


def test_every_standard_library_module_the_core_imports_is_in_the_cut_zip_as_bytecode() -> None:
    with zipfile.ZipFile(SETTINGS.official_pyodide_dir / "python_stdlib.zip") as z:
        official = set(z.namelist())
    with zipfile.ZipFile(CUT / "python_stdlib.zip") as z:
        cut = set(z.namelist())
    assert not any(n.endswith(".py") for n in cut)  # bytecode only
    outside = set(meta()["stdlib"]["outsideZip"])  # Pyodide's own copies outside the zip (os, site, ...)
    checked = 0
    for name in core_imports() - outside:
        base = name.replace(".", "/")
        for source in (f"{base}.py", f"{base}/__init__.py"):
            if source in official:
                assert source + "c" in cut, name
                checked += 1
    assert checked >= 10  # dataclasses, json, struct, ...: the check saw the standard library


def test_numpy_keeps_what_the_core_names_and_drops_what_it_never_imports() -> None:
    lock = json.loads((CUT / "pyodide-lock.json").read_text())
    entry = lock["packages"]["numpy"]
    wheel = CUT / entry["file_name"]
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == entry["sha256"]
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        listed = {line.split(",")[0] for line in z.read(record).decode().splitlines() if line}
    assert listed == names  # RECORD lists exactly what the wheel holds
    assert "numpy/__init__.pyc" in names and "numpy/polynomial/chebyshev.pyc" in names  # py_core/kernels/mathfn.py
    assert not any(n.startswith(("numpy/random/", "numpy/f2py/", "numpy/testing/")) for n in names)
    assert not any(n.endswith(".py") for n in names)
    m = meta()
    assert m["sha256"][entry["file_name"]] == entry["sha256"]
    assert m["bytes"]["after"]["python_stdlib.zip"] < m["bytes"]["before"]["python_stdlib.zip"] * 2
