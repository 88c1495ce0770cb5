"""The WebDriver Session: a browser behind a W3C WebDriver server, WebKitGTK on this machine (`--browser webkit`
where Playwright's own WebKit is not installed) or any `--webdriver-endpoint` (safaridriver on a Mac, a Selenium
Grid, a cloud grid), with the same bench page, results, probe states and report as the Playwright targets.
https://www.w3.org/TR/webdriver2/
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.targets import BrowserUnavailable, Target
from bench.targets.playwright import BrowserSession
from web.served_files import ServedFiles
from web.webdriver import WebDriverPage, WebDriverUnavailable, remote_session, webkitgtk_session


class WebDriverSession(BrowserSession):
    """One WebDriver session, its window on the bench page: the Playwright session's page-side calls (probe, run,
    the reopen on a crashed page) over WebDriverPage, which evaluates as Playwright's page does.
    Framework cases' model files come from `served` (the bench's dev server serves them at /__files/);
    tracing and init scripts are Playwright features and refuse clearly."""

    def __init__(self, target: Target, server_url: str, *, served: ServedFiles | None,
                 timeout_ms: int = 180_000, init_scripts: Sequence[str] = ()) -> None:
        super().__init__(None, target, server_url, timeout_ms=timeout_ms, init_scripts=list(init_scripts))
        self.served = served
        self.driver: Any = None
        self._stack = ExitStack()

    @property
    def version(self) -> str:
        """browserName and browserVersion as the WebDriver server reports them."""
        if self.driver is None:
            return ""
        caps = self.driver.capabilities
        return f"{caps.get('browserName', '')} {caps.get('browserVersion', '')}".strip()

    def start(self) -> WebDriverSession:
        """Open the WebDriver session (WebKitGTK here, or the endpoint's) and the bench page."""
        if self.init_scripts:
            raise BrowserUnavailable("--webnn-init-script needs a Playwright target: WebDriver classic has no "
                                     "script that runs before the page's own")
        try:
            if self.target.endpoint is None:
                self.driver = self._stack.enter_context(webkitgtk_session())
            else:
                caps = json.loads(self.target.capabilities or "{}")
                self.driver = self._stack.enter_context(remote_session(self.target.endpoint, caps))
        except WebDriverUnavailable as e:
            raise BrowserUnavailable(str(e)) from None
        self.open_page()
        return self

    def start_tracing(self) -> None:
        """Playwright traces have no WebDriver counterpart."""
        raise BrowserUnavailable(f"--tracing needs a Playwright target, not {self.target.id} (WebDriver)")

    def open_page(self) -> None:
        """(Re)open the bench page in the session's window; the polyfill boots at the probe's createContext()."""
        page = WebDriverPage(self.driver)
        page.set_default_timeout(self.timeout_ms)
        page.goto(self.server_url + self.page_path)
        page.wait_for_function(self.ready_js)
        self.page = page

    def run_client(
        self, client: Mapping[str, Any], impl: str, options: Mapping[str, Any], repeat: int
    ) -> dict[str, Any]:
        """A framework case: its model file put on the bench's dev server, then webnnBench.runClient."""
        if self.served is None:
            return {"status": "error", "stage": "page", "timings": {},
                    "error": {"name": "NotSupportedError",
                              "message": "framework cases on a WebDriver target need the bench's own dev server "
                                         "(not --webnn-server): it serves their model files"}}
        url = self.served.put(client["url"].lstrip("/"), Path(client["path"]).read_bytes())
        spec = {**{k: client[k] for k in ("kind", "inputs", "outputs")}, "url": url}
        run_options = {"impl": impl, "options": dict(options), "repeat": repeat, "timeoutMs": self.timeout_ms}
        return self._evaluate("async ([spec, o]) => await webnnBench.runClient(spec, o)", [spec, run_options])

    def close(self) -> None:
        """End the WebDriver session (and the local browser and display it started)."""
        self._stack.close()
