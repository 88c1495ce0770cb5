"""Shared fixtures for the infrastructure tests (asset fetcher, dev server)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from web.scripts import load_script

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
