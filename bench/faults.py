"""The fault suite: every case of tests/browser/test_faults_*.py (marked `fault`) in every browser asked for, and a
table of case, browser, outcome and seconds.  The cases are browser tests (a network fault on a real server, an
execution worker ended from outside); `make test` runs a fixed subset of them, this runs them all
(WEBNN_FAULT_SUITE=all).

    python -m bench faults                                   # chromium, firefox and webkit
    python -m bench faults --browsers chromium -k network    # one browser, the cases whose name has "network"

pytest's progress shows while it runs; after the table come the failures' own messages, and the junit XML is
kept (--junit, default build/fault-suite.xml).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the fault files, and the start-up tests whose damaged-cache cases are marked `fault`
TESTS = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "browser").glob("test_faults_*.py")),
         "tests/browser/test_startup_snapshot.py"]


def outcomes(junit: Path) -> list[tuple[str, str, str, float]]:
    """(case, browser, outcome, seconds) of each test case in a pytest junit XML file."""
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        base, _, params = name.partition("[")
        parts = params.rstrip("]").split("-") if params else []
        browser = next((p for p in parts if p in ("chromium", "firefox", "webkit")), "")
        rest = "-".join(p for p in parts if p != browser)
        label = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{base}" + (f"[{rest}]" if rest else "")
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                detail = (found.get("message") or "").splitlines()[0][:80] if found.get("message") else ""
                outcome = {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}[tag] + (
                    f": {detail}" if detail else "")
                break
        rows.append((label, browser, outcome, float(case.get("time", 0.0))))
    return rows


# a failure's text as printed: its last lines (the assertion), each cut (a Pyodide stack has lines of megabytes)
DETAIL_LINES = 12
DETAIL_WIDTH = 240


def failures(junit: Path) -> str:
    """The text of each failed or erroring case in a pytest junit XML file: its last lines, cut to a width."""
    blocks = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for tag in ("failure", "error"):
            found = case.find(tag)
            if found is None:
                continue
            text = (found.text or found.get("message") or "").splitlines()
            lines = [line[:DETAIL_WIDTH] for line in text if line.strip()][-DETAIL_LINES:]
            blocks.append("\n".join([f"--- {case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}",
                                      *lines]))
    return "\n".join(blocks)


def table(rows: list[tuple[str, str, str, float]]) -> str:
    """The rows as an aligned text table."""
    head = ("case", "browser", "outcome", "seconds")
    cells = [head] + [(c, b, o, f"{s:.1f}") for c, b, o, s in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>7}" for r in cells)


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench faults: run the fault suite and print its table; exits non-zero when a case failed."""
    parser = argparse.ArgumentParser(prog="python -m bench faults", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--browsers", default="chromium,firefox,webkit", help="comma-separated browsers")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression over the case names")
    parser.add_argument("--junit", type=Path, default=ROOT / "build" / "fault-suite.xml",
                        help="where pytest's junit XML is kept (default %(default)s)")
    args = parser.parse_args(argv)
    junit = args.junit.resolve()
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.unlink(missing_ok=True)
    # (--tb=no: the failures' text is printed from the junit after the table, cut)
    cmd = [sys.executable, "-m", "pytest", *TESTS, "-m", "fault", "-p", "no:cacheprovider", "-q", "--tb=no",
           f"--junitxml={junit}"]
    for browser in args.browsers.split(","):
        cmd += ["--browser", browser.strip()]
    if args.keyword:
        cmd += ["-k", args.keyword]
    env = {**os.environ, "WEBNN_FAULT_SUITE": "all"}
    code = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
    if not junit.exists():
        print(f"the fault suite did not run (pytest exited {code})", file=sys.stderr)
        return code or 1
    print(table(outcomes(junit)))
    detail = failures(junit)
    if detail:
        print("\nfailures (the whole text is in " + str(junit) + "):\n" + detail)
    return code
