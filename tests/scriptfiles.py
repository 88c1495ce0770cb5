"""The repo's scripts/ files (not a package) as modules, for the tests that test a script as a script."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def load_script(name: str, repo_root: Path = REPO_ROOT) -> ModuleType:
    """scripts/<name>.py loaded once per root, registered in sys.modules (dataclasses and pickling need it)."""
    module_name = f"webnn_scripts_{name}" if repo_root == REPO_ROOT else f"webnn_scripts_{name}_{hash(repo_root)}"
    spec = importlib.util.spec_from_file_location(module_name, repo_root / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
