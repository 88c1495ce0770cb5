"""/reports/ in a real browser: the pages keep their inline CSS and SVG under the reports' Content-Security-Policy,
and markup that slipped into a run directory (a hand-made report.html) runs no script."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import results
from bench.report import writer as report
from bench.server import dev_server

pytestmark = pytest.mark.browser

HOSTILE = """<!doctype html><html><head><style>#p{color:rgb(1, 2, 3)}</style></head><body>
<p id="p">report</p><script>window.ran = 'script'</script><img src="data:," onerror="window.ran = 'onerror'">
<svg width="10" height="10" onload="window.ran = 'svg'"><rect width="10" height="10" fill="red"/></svg>
<a id="js" href="javascript:void(window.ran='href')">x</a></body></html>"""


@pytest.fixture
def reports_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The dev server on a reports folder holding a real run (through write_report) and a hostile one."""
    run = tmp_path / "20260101-000000-real"
    writer = results.RunWriter(run)
    writer.probe({"target": "chromium", "browser": "chromium", "environment": {"userAgent": "UA"}, "states": []})
    for impl in ("polyfill", "reference"):
        r = results.Result(
            "wpt:relu/a",
            impl,
            "default",
            results.PASS,
            "chromium" if impl == "polyfill" else "cpython",
            target="chromium" if impl == "polyfill" else "cpython",
            op="relu",
            max_ulp=0.0,
            max_abs=0.0,
            tolerance={"ulp": 0, "atol": 0},
            timings={"median_ms": 0.5},
        )
        writer.result(r, {"y": np.array([1.0, 2.0], np.float32)})
    report.write_report(run, {"started": "2026-01-01T00:00:00"})
    hostile = tmp_path / "20260102-000000-hostile"
    hostile.mkdir()
    (hostile / "run.json").write_text('{"started": "2026-01-02"}')
    (hostile / "report.html").write_text(HOSTILE)
    monkeypatch.setenv("PYODIDE_WEBNN_REPORTS", str(tmp_path))
    with dev_server() as url:
        yield f"{url}/reports"


# Playwright's init scripts are not subject to the page's policy: they record what the policy blocked.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.effectiveDirective));
"""


def _open(browser: Any, url: str) -> Any:
    page = browser.new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(url)
    page.wait_for_load_state("load")
    return page


def test_reports_keep_their_styles_and_run_no_script(browser: Any, reports_url: str) -> None:
    for path in ("/", "/20260101-000000-real/"):
        page = _open(browser, reports_url + path)
        assert page.evaluate("getComputedStyle(document.body).marginTop") != "8px", path  # the inline CSS applies
        assert page.evaluate("window.__csp") == [], path
        if path != "/":
            assert page.locator("svg").count() > 0 and "Pass matrix" in page.content()
        page.close()

    page = _open(browser, reports_url + "/20260102-000000-hostile/")
    assert page.evaluate("window.ran === undefined"), page.evaluate("window.ran")
    page.click("#js")
    page.wait_for_timeout(200)
    assert page.evaluate("window.ran === undefined"), page.evaluate("window.ran")
    assert page.evaluate("getComputedStyle(document.getElementById('p')).color") == "rgb(1, 2, 3)"
    blocked = set(page.evaluate("window.__csp"))
    assert "script-src-elem" in blocked and "script-src-attr" in blocked, blocked
    page.close()
