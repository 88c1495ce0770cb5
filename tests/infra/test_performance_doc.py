"""docs/performance.md is a design doc: about 400 lines at most, one table of current results that says when, with
which command and under which report id it was measured, and no development history (that is the git log)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "performance.md"
BENCH = ROOT / "docs" / "bench.md"
MAX_LINES = 400
# wording of a diary: sessions, issue lines, what was done before, branches
HISTORY = re.compile(r"session \d|#\d+ line|\bbefore this (session|branch|change)|\bthis branch\b|\bpreviously\b|"
                     r"\btried and reverted\b|\bas before\b", re.IGNORECASE)
REPORT_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")


def history(text: str) -> list[str]:
    """The lines of `text` that speak of the project's history instead of itself."""
    return [line for line in text.splitlines() if HISTORY.search(line)]


def results_sections(text: str) -> list[str]:
    """The bodies of the `## Current results` sections."""
    return re.findall(r"^## Current results\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)


def test_the_performance_doc_stays_a_design_doc() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    assert history(text) == []


def test_one_table_of_current_results_with_date_command_and_report() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    (section,) = results_sections(text)
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", section) and "python -m bench perf" in section
    assert REPORT_ID.search(section)
    tables = [block for block in re.split(r"\n\s*\n", section) if block.lstrip().startswith("|")]
    assert len(tables) == 1


def test_the_bench_manual_has_no_history() -> None:
    assert history(BENCH.read_text(encoding="utf-8")) == []


def test_history_and_a_second_results_section_are_found() -> None:
    assert history("Session 10 measured it\nthe plan (#16 line 2)\nfine") == ["Session 10 measured it",
                                                                           "the plan (#16 line 2)"]
    assert len(results_sections("## Current results\na\n## Other\nb\n## Current results\nc\n")) == 2
