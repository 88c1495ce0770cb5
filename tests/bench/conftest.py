"""Bench tests: the shipped suite on a representative subset, the user-facing fixture, remote browsers through
`playwright run-server`, the CLI.  Known polyfill bugs the bench found are xfailed here by test id, so they
stay visible (XFAIL, then XPASS once fixed) without turning CI red."""

from __future__ import annotations

import pytest

# substring of a test id -> why it is expected to fail today (e.g. "polyfill-wpt:clamp/...": "bridge JSON bug")
KNOWN_FAILURES: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for needle, reason in KNOWN_FAILURES.items():
            if needle in item.nodeid:
                item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
