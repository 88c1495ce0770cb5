"""The core wheel that browsers get (served by the dev server, packed by make dist, imported into the snapshots)
carries the engine and not the test oracles of py_core/testing, and nothing in it imports them."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from web.core_wheel import CoreWheelCache, build_wheel, read_project_meta

ROOT = Path(__file__).resolve().parents[2]


def _names(data: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_the_shipped_wheel_has_no_test_oracles() -> None:
    wheel = build_wheel(ROOT / "py_core", read_project_meta(ROOT / "pyproject.toml"))
    names = _names(wheel.data)
    assert "py_core/spec/table.py" in names and "py_core/bridge/worker_host.py" in names
    assert not [n for n in names if n.startswith("py_core/testing/")]
    record = zipfile.ZipFile(io.BytesIO(wheel.data)).read("py_core-0.1.0.dist-info/RECORD").decode()
    assert "py_core/testing/" not in record
    # the dev server's wheel is the same build
    assert CoreWheelCache(ROOT / "py_core", ROOT / "pyproject.toml").get().sha256 == wheel.sha256


def test_nothing_in_the_wheel_imports_the_oracles() -> None:
    wheel = build_wheel(ROOT / "py_core", read_project_meta(ROOT / "pyproject.toml"))
    archive = zipfile.ZipFile(io.BytesIO(wheel.data))
    importing = re.compile(r"^\s*(from\s+(py_core\.testing|\.+testing)\b|import\s+py_core\.testing\b)", re.M)
    offenders = [n for n in archive.namelist() if n.endswith(".py") and importing.search(archive.read(n).decode())]
    assert not offenders, f"modules of the shipped wheel import py_core.testing: {offenders}"


def test_the_oracles_stay_in_the_checkout() -> None:
    """The exclusion is of the testing package only: the checkout (CPython, tests/pyodide's mount) keeps it."""
    assert (ROOT / "py_core" / "testing" / "tolerance.py").is_file()
