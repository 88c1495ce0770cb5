"""Opening a dev-server page for a browser test: one place for the timeout and the page-error capture."""

from __future__ import annotations

from typing import Any


def open_page(owner: Any, url: str, timeout_ms: int) -> tuple[Any, list[str]]:
    """A new page of `owner` (a browser context, or a browser) at url, with the default timeout set and its
    uncaught errors collected in the returned list."""
    page = owner.new_page()
    page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors
