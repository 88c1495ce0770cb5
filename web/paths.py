"""Path checks for files named by data (a run directory, a results line): standard library only."""

from __future__ import annotations

import os
from pathlib import Path


def inside(root: str | Path, path: str | Path) -> bool:
    """Whether `path`'s real location (every symlink resolved) is `root`'s real location or below it."""
    real_root = os.path.realpath(root)
    try:
        return os.path.commonpath([real_root, os.path.realpath(path)]) == real_root
    except ValueError:  # different drives (Windows): not inside
        return False
