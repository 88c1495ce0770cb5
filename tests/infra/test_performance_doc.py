"""docs/performance.md is a design doc: about 400 lines at most, and one table of current results that says when,
with which command and under which report id it was measured.  Its history wording is test_repo_hygiene.py's to
find, as in every tracked file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "performance.md"
MAX_LINES = 400
REPORT_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")


def results_sections(text: str) -> list[str]:
    """The bodies of the `## Current results` sections."""
    return re.findall(r"^## Current results\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)


def test_the_performance_doc_stays_a_design_doc() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES


def test_one_table_of_current_results_with_date_command_and_report() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    (section,) = results_sections(text)
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", section) and "python -m bench perf" in section
    assert REPORT_ID.search(section)
    tables = [block for block in re.split(r"\n\s*\n", section) if block.lstrip().startswith("|")]
    assert len(tables) == 1


def test_a_second_results_section_is_found() -> None:
    assert len(results_sections("## Current results\na\n## Other\nb\n## Current results\nc\n")) == 2
