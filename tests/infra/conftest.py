"""Shared fixtures for the infrastructure tests (asset fetcher, dev server)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scriptfiles import load_script

ROOT = Path(__file__).resolve().parents[2]
# `web` lives at the repo root and is not an installed package: make it importable under plain `pytest`.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def fetch_assets() -> ModuleType:
    """scripts/fetch_assets.py loaded as a module (scripts/ is not a package)."""
    return load_script("fetch_assets")


@pytest.fixture(scope="session")
def real_assets(fetch_assets: ModuleType) -> Path:
    """The real asset dir in the user cache, fetched once if needed (make setup already did)."""
    return fetch_assets.ensure_pyodide_assets(None, quiet=True)


@pytest.fixture
def run_in_pyodide_node() -> Callable[[str], Any]:
    """Run an ES-module script (its `%(root)s` the repository) with Node, where the Pyodide assets are cached;
    return the JSON document on its last line of output.  Skips without node or the assets."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not list(Path.home().glob(".cache/pyodide-webnn/pyodide-*/pyodide.asm.wasm")):
        pytest.skip("no Pyodide assets (scripts/fetch_assets.py)")

    def run(script: str) -> Any:
        done = subprocess.run([node, "--input-type=module", "-e", script % {"root": ROOT}], capture_output=True,
                              text=True, timeout=600, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
