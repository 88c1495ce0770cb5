"""`make bench` under its old name: `python scripts/bench.py ARGS` is `python -m web.bench perf ARGS`
(web/bench/perf.py), with the same options (--browsers, --cases, --reps, --seconds, --baseline, --memory-runs,
--skip-startup, --skip-node, --skip-transfer, --regen, --out).  The run lands in reports/<run id>/ with a report
listed at /reports/."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's web/ and py_core/, whatever the current directory

from web.bench.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["perf", *sys.argv[1:]]))
