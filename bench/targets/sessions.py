"""Which Session drives a target: Playwright's, or WebDriver's for WebDriver endpoints and for a local WebKit
that Playwright cannot launch here (WebKitGTK through WebKitWebDriver)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.targets import Target
from bench.targets.playwright import BrowserSession
from bench.targets.webdriver import WebDriverSession
from web.browsers import webkit_over_webdriver
from web.served_files import ServedFiles


def open_session(playwright: Any, target: Target, server_url: str, *, served: ServedFiles | None = None,
                 launch_base: Mapping[str, Any] | None = None, init_scripts: Sequence[str] = ()) -> BrowserSession:
    """The target's started session.  `served`: the bench's own dev server's /__files/ (framework models reach
    WebDriver browsers through it)."""
    if target.protocol == "webdriver" or (not target.remote and webkit_over_webdriver(target.browser, playwright)):
        return WebDriverSession(target, server_url, served=served, init_scripts=init_scripts).start()
    return BrowserSession(playwright, target, server_url, launch_base=launch_base, init_scripts=init_scripts).start()
