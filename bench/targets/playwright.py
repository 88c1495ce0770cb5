"""The Playwright Session: local browsers launched offline (web.browsers) and remote ones reached through a
`playwright run-server` endpoint, each with one page of the dev server where the polyfill has booted and
pages/bench/bench.js runs cases."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.targets import NATIVE_CHROMIUM, BrowserUnavailable, Target
from bench.targets.probe import Probe, probe_page
from web.browsers import launch_args, native_chromium_launch_args

BENCH_PAGE = "/bench/bench.html"
# Playwright option names as run-server expects them in its launch-options (camelCase JSON).
_CAMEL = {
    "executable_path": "executablePath",
    "chromium_sandbox": "chromiumSandbox",
    "slow_mo": "slowMo",
    "firefox_user_prefs": "firefoxUserPrefs",
    "ignore_default_args": "ignoreDefaultArgs",
}


def remote_launch_options(browser: str, *, native_webnn: bool = True, headless: bool = True) -> dict[str, Any]:
    """This machine's offline launch options (web.browsers) in run-server's launch-options form.  The
    server must run with --unsafe to accept args and executablePath; `env` cannot travel (set it on the
    server's own environment)."""
    kw = launch_args(browser, native_webnn=native_webnn)
    out: dict[str, Any] = {"headless": headless}
    for k, v in kw.items():
        if k != "env":
            out[_CAMEL.get(k, k)] = v
    return out


def _fulfil_with(body: bytes, headers: dict[str, str]) -> Any:
    """A Playwright route handler answering with these bytes."""

    def serve(route: Any) -> None:
        route.fulfill(status=200, body=body, headers=headers)

    return serve


class BrowserSession:
    """One browser (launched or connected), one context and one booted bench page.  A subclass serves
    another page of the dev server that also loads the bench harness (bench/perf/run.py: /perf/)."""

    page_path = BENCH_PAGE
    ready_js = "() => !!globalThis.webnnBench"

    def __init__(
        self,
        playwright: Any,
        target: Target,
        server_url: str,
        *,
        launch_base: Mapping[str, Any] | None = None,
        native_webnn: bool = True,
        timeout_ms: int = 180_000,
        init_scripts: Sequence[str] = (),
    ) -> None:
        self.playwright = playwright
        self.init_scripts = list(init_scripts)  # JS run in the page before anything else (see --init-script)
        self.target = target
        self.server_url = server_url.rstrip("/")
        self.launch_base = dict(launch_base or {})
        self.native_webnn = native_webnn
        self.timeout_ms = timeout_ms
        self.browser: Any = None
        self.context: Any = None
        self.page: Any = None
        self.page_errors: list[str] = []
        self._probe: Probe | None = None
        self._tracing = False
        self._served: set[str] = set()  # model URLs routed to their files (framework cases)

    @property
    def version(self) -> str:
        """The browser's version string."""
        return str(self.browser.version) if self.browser else ""

    def start(self) -> BrowserSession:
        """Launch or connect the browser, open a context and the bench page."""
        browser_type = getattr(self.playwright, self.target.browser)
        if self.target.remote:
            headers = {}
            if "launch-options" not in (self.target.endpoint or ""):
                opts = {_CAMEL.get(k, k): v for k, v in self.launch_base.items() if k in ("headless", "slow_mo")}
                headers["x-playwright-launch-options"] = json.dumps(opts)
            # the remote browser opens http://127.0.0.1:<port> through this machine: loopback is a secure
            # context, so WebNN and crossOriginIsolated work there as they do here
            self.browser = browser_type.connect(
                self.target.endpoint, headers=headers, expose_network="<loopback>", timeout=self.timeout_ms
            )
        elif self.target.id == NATIVE_CHROMIUM:
            try:
                kw = native_chromium_launch_args(self.launch_base)
            except RuntimeError as e:
                raise BrowserUnavailable(str(e)) from None
            self.browser = browser_type.launch(**kw)
        else:
            kw = launch_args(self.target.browser, native_webnn=self.native_webnn, base=self.launch_base)
            if self.target.browser == "chromium" and self.launch_base.get("channel"):
                kw.pop("executable_path", None)  # --browser-channel chrome/msedge: that browser, not Debian's
            self.browser = browser_type.launch(**kw)
        self.context = self.browser.new_context()
        for script in self.init_scripts:
            self.context.add_init_script(script=script)
        self.open_page()
        return self

    def start_tracing(self) -> None:
        """Start the context's trace once, after the polyfill booted: chunks then hold test actions, not the
        Pyodide downloads.  No screencast: the bench page barely changes, and frames cost CPU."""
        if not self._tracing:
            self.context.tracing.start(
                title=f"webnn bench {self.target.id}", screenshots=False, snapshots=True, sources=True
            )
            self._tracing = True

    def open_page(self) -> None:
        """(Re)open the bench page; the polyfill boots at the probe's first createContext()."""
        if self.page is not None:
            try:
                self.page.close()
            except Exception:  # noqa: BLE001 - a crashed page may refuse to close
                pass
        self.page = self.context.new_page()
        self.page.set_default_timeout(self.timeout_ms)
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.goto(self.server_url + self.page_path)
        self.page.wait_for_function(self.ready_js)

    def probe(self, variants: list[str]) -> Probe:
        """What this browser offers (cached for the session)."""
        if self._probe is None:
            self._probe = probe_page(
                self.page, self.target.id, self.target.browser, self.version, variants, self.timeout_ms
            )
        return self._probe

    def run(
        self, wire: Mapping[str, Any], impl: str, variant: str, options: Mapping[str, Any], repeat: int
    ) -> dict[str, Any]:
        """webnnBench.run in the page; a crashed or hung page is reopened and the failure returned as data."""
        run_options = {"impl": impl, "variant": {"name": variant, "options": dict(options)}, "repeat": repeat,
                       "timeoutMs": self.timeout_ms}
        return self._evaluate("async ([wire, o]) => await webnnBench.run(wire, o)", [dict(wire), run_options])

    def run_client(
        self, client: Mapping[str, Any], impl: str, options: Mapping[str, Any], repeat: int
    ) -> dict[str, Any]:
        """webnnBench.runClient in the page: a framework case (bench/cases/frameworks.py) through its client on
        'wasm', the polyfill or native WebNN with the variant's context options; failures come back as data."""
        if client["url"] not in self._served:
            body = Path(client["path"]).read_bytes()
            headers = {"content-type": "application/octet-stream", "cross-origin-resource-policy": "same-origin"}

            self.context.route(f"**{client['url']}", _fulfil_with(body, headers))
            self._served.add(client["url"])
        spec = {k: client[k] for k in ("kind", "url", "inputs", "outputs")}
        run_options = {"impl": impl, "options": dict(options), "repeat": repeat, "timeoutMs": self.timeout_ms}
        return self._evaluate("async ([spec, o]) => await webnnBench.runClient(spec, o)", [spec, run_options])

    def _evaluate(self, js: str, arg: Any) -> dict[str, Any]:
        """page.evaluate(js, arg) as a result dict; a Playwright error (crash, timeout, closed page) reopens the
        page and comes back as a 'page' stage error."""
        try:
            return dict(self.page.evaluate(js, arg))
        except Exception as e:  # noqa: BLE001 - Playwright errors: crash, timeout, closed page
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            try:
                self.open_page()
            except Exception:  # noqa: BLE001
                pass
            return {"status": "error", "stage": "page", "error": {"name": type(e).__name__, "message": message},
                    "timings": {}}

    def close(self) -> None:
        """Close the context and the browser (a remote one: the connection)."""
        try:
            if self.context is not None:
                self.context.close()
        finally:
            if self.browser is not None:
                self.browser.close()
