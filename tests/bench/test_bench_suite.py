"""The shipped suite (bench.suite) on a representative subset: the first WPT case of every operator and
the example graph files, in every --browser, on the polyfill, on native WebNN per context variant (probed:
Chromium runs with the WebNN feature flag) and on the CPython reference.  One test id per (case,
implementation, browser); results and the report go to ./reports/<run id>/."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.suite import test_probe, test_webnn  # noqa: F401 - collected here with this module's cases

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "graphs"

pytestmark = [pytest.mark.browser, pytest.mark.webnn_cases(f"wpt@1,{GRAPHS}")]
