"""Test support shared by CPython tests, the Pyodide runner and the cross-browser bench: WPT tolerance rules
and the data-driven WPT conformance runner.  https://www.w3.org/TR/webnn/"""

from __future__ import annotations

from py_core.testing.tolerance import CheckResult, OpUnderTest, Tolerance, check, tolerance_for, ulp_distance

__all__ = ["CheckResult", "OpUnderTest", "Tolerance", "check", "tolerance_for", "ulp_distance"]
