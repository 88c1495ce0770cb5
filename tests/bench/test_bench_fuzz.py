"""The fuzzer's small fixed set (`fuzz:32@7`, bench/cases/fuzz.py) in make test.

In every --browser the polyfill must agree with the CPython reference on each case: the same accept or
reject, error type and output descriptors, values within tolerance of the float64 reference.  In the npm
Chromium, native WebNN runs the same cases too: its findings are reported with standalone reproducers
(what `python -m bench upstream` writes up), never test failures, since they are the browser's bugs."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench import results as res
from bench.cases.select import select
from bench.report import fuzz as fuzz_report
from bench.report import repro
from bench.suite import test_webnn  # noqa: F401 - collected here with this module's cases
from bench.targets import NATIVE_CHROMIUM
from web.browsers import native_chromium, native_chromium_launch_args

FIXED_SET = "fuzz:32@7"
REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser, pytest.mark.webnn_cases(FIXED_SET), pytest.mark.webnn_impl("polyfill")]


@pytest.mark.slow
def test_native_findings_come_with_counts_and_reproducers(tmp_path: Path) -> None:
    found = native_chromium()
    if found.path is None:
        pytest.skip(f"{NATIVE_CHROMIUM} is not installed here: {found.reason}")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--browser", NATIVE_CHROMIUM, "--cases", FIXED_SET, "--impl",
         "polyfill", "--impl", "native:default", "--repeat", "0", "--quiet", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert "fuzz: 32 cases" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((run_dir / "fuzz.json").read_text(encoding="utf-8"))
    columns = summary["columns"]
    assert columns["reference"] == {"agree": 32}
    assert columns[f"polyfill@{NATIVE_CHROMIUM}"].get("agree", 0) == 32
    native = columns[f"native:default@{NATIVE_CHROMIUM}"]
    assert sum(native.values()) == 32 and native.get("hang", 0) == 0
    findings = [f for f in summary["findings"] if f["column"].startswith("native")]
    md = (run_dir / "fuzz.md").read_text(encoding="utf-8")
    pages = []
    for f in findings:
        page = run_dir / "repro" / (f["case"].replace(":", "-").replace("/", "-") + ".html")
        assert page.is_file() and "navigator.ml.createContext()" in page.read_text(encoding="utf-8")
        assert f"repro/{page.name}" in md
        pages.append(page)
    # the pages run on their own, from a file: a finding FAILs on native, a case native agrees on PASSes
    _, results = res.load(run_dir)
    agreed = [r.case for r in results if r.implementation == "native"
              and (r.metrics.get("fuzz") or {}).get("category") == "agree"]
    defects = {c.id: bool(c.fuzz and c.fuzz["defect"]) for c in select(FIXED_SET)}
    chosen = [next(c for c in agreed if defects[c]), next(c for c in agreed if not defects[c])]
    passing = [repro.write(fuzz_report.case_of(c, c), tmp_path / "agreed") for c in chosen]
    verdicts = _open_pages(found.path, [*pages[:3], *passing])
    assert verdicts == ["FAIL"] * len(pages[:3]) + ["PASS", "PASS"], verdicts


def _open_pages(executable: str, pages: list[Path]) -> list[str]:
    """Each page's verdict line (its title starts with PASS or FAIL) in the native-WebNN Chromium; in a thread of
    its own (the browser tests' Playwright may run an event loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_verdicts, executable, pages).result()


def _verdicts(executable: str, pages: list[Path]) -> list[str]:
    from playwright.sync_api import sync_playwright

    verdicts = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**native_chromium_launch_args({"headless": True}))
        try:
            for path in pages:
                page = browser.new_page()
                page.goto(path.resolve().as_uri())
                page.wait_for_function("/^(PASS|FAIL)/.test(document.title)", timeout=60_000)
                verdicts.append(page.title().split(":", 1)[0])
                page.close()
        finally:
            browser.close()
    return verdicts
