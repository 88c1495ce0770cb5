"""A run's report, of the kind its run.json says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import results as res
from bench.report import comparison, perf


def write_report(run_dir: str | Path, meta: Mapping[str, Any] | None = None) -> Path:
    """(Re)write run_dir/report.html with the report of its kind (run.json "kind"); returns its path."""
    if res.read_meta(Path(run_dir)).get("kind") == "perf":
        return perf.write_report(run_dir, meta)
    return comparison.write_report(run_dir, meta)
