"""Where the bench runs: a Target names a browser and how it is reached (launched here, or a remote endpoint);
a Session is one browser with the bench page open, the interface the runner and the perf bench drive.

targets/playwright.py implements Session with Playwright: local browsers launched offline (web.browsers) and
remote ones behind a `playwright run-server` endpoint; targets/webdriver.py with W3C WebDriver: WebKitGTK here
and any `--webdriver-endpoint` (safaridriver, a Selenium Grid, a cloud grid).  targets/sessions.py picks one."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit, urlunsplit

from bench.targets.probe import Probe

BROWSER_TYPES = ("chromium", "firefox", "webkit")
# The npm Chromium 153 whose native WebNN works (scripts/setup_native_chromium.py): a local target of its own,
# added next to "chromium", so one of its pages runs the polyfill and every native variant side by side.
NATIVE_CHROMIUM = "chromium-npm"


@dataclass(frozen=True)
class Target:
    """A browser the bench runs in: local (launched here) or remote (a run-server or WebDriver endpoint)."""

    id: str  # in test ids and results: "chromium", "firefox", "remote-lab1-chromium", "webdriver-mac1-webkit"
    browser: str  # the engine: chromium, firefox or webkit (Playwright's browser type names)
    endpoint: str | None = None  # a run-server ws:// URL, or a WebDriver server's http(s):// URL
    protocol: str = "playwright"  # or "webdriver"
    capabilities: str = ""  # WebDriver: the session's capabilities, JSON

    @property
    def remote(self) -> bool:
        """Whether the browser is reached through an endpoint (run-server or WebDriver)."""
        return self.endpoint is not None


class BrowserUnavailable(RuntimeError):
    """A target browser that is not installed here (e.g. the native Chromium on another architecture): its
    items are reported unavailable with this reason, not failed."""


def local_target(name: str) -> Target:
    """A browser launched on this machine: a Playwright browser type, or the native-WebNN Chromium."""
    if name == NATIVE_CHROMIUM:
        return Target(NATIVE_CHROMIUM, "chromium")
    if name not in BROWSER_TYPES:
        raise ValueError(f"unknown browser '{name}' (one of {', '.join((*BROWSER_TYPES, NATIVE_CHROMIUM))})")
    return Target(name, name)


def local_targets(names: Sequence[str], *, native_chromium: bool = True) -> list[Target]:
    """Targets for browser names; with native_chromium, the npm Chromium with native WebNN joins "chromium"."""
    out = [local_target(n) for n in names]
    if native_chromium and "chromium" in names and NATIVE_CHROMIUM not in names:
        out.insert(list(names).index("chromium") + 1, local_target(NATIVE_CHROMIUM))
    return out


def remote_target(endpoint: str) -> Target:
    """A `--browser-endpoint ws://HOST:PORT/PATH[?browser=firefox&name=lab1&launch-options=...]` target.
    `browser` and `launch-options` are run-server's own query parameters; `name` labels the device."""
    url = urlsplit(endpoint)
    if url.scheme not in ("ws", "wss"):
        raise ValueError(f"--browser-endpoint '{endpoint}': expected a ws:// or wss:// URL")
    query = parse_qs(url.query)
    browser = query.get("browser", ["chromium"])[0]
    if browser not in BROWSER_TYPES:
        raise ValueError(f"--browser-endpoint '{endpoint}': unknown browser '{browser}'")
    name = query.get("name", [f"{url.hostname}-{url.port or ''}".rstrip("-")])[0]
    return Target(f"remote-{name}-{browser}", browser, endpoint)


# browserName as WebDriver servers spell it -> the engine the bench reports
WEBDRIVER_ENGINES = {"safari": "webkit", "safari technology preview": "webkit", "minibrowser": "webkit",
                     "webkitgtk": "webkit", "wpewebkit": "webkit", "chrome": "chromium", "chromium": "chromium",
                     "microsoftedge": "chromium", "msedge": "chromium", "firefox": "firefox"}


WEBDRIVER_ENDPOINT_HELP = ("a browser behind a W3C WebDriver server (repeatable): safaridriver, a Selenium Grid, a "
                           "cloud grid: http://HOST:PORT/PATH[#browser=safari&name=LABEL&capabilities=JSON] "
                           "(docs/webdriver.md)")


def webdriver_target(spec: str) -> Target:
    """`--webdriver-endpoint URL[#browser=NAME&name=LABEL&capabilities=JSON]`: a WebDriver server (its URL as
    Selenium takes it) and the capabilities of the session to ask for; `browser` is the browserName (default
    the capabilities' own), `name` labels the device in test ids (default host-port).  docs/webdriver.md"""
    url = urlsplit(spec)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"--webdriver-endpoint '{spec}': expected an http:// or https:// URL")
    options = parse_qs(url.fragment)
    try:
        capabilities = json.loads(options.get("capabilities", ["{}"])[0])
    except ValueError as e:
        raise ValueError(f"--webdriver-endpoint '{spec}': capabilities are not JSON ({e})") from None
    if not isinstance(capabilities, dict):
        raise ValueError(f"--webdriver-endpoint '{spec}': capabilities must be a JSON object")
    browser = options.get("browser", [capabilities.get("browserName", "")])[0]
    if not browser:
        raise ValueError(f"--webdriver-endpoint '{spec}': say which browser (#browser=safari or a browserName "
                         "capability)")
    capabilities["browserName"] = browser
    engine = WEBDRIVER_ENGINES.get(browser.lower(), browser.lower())
    name = options.get("name", [f"{url.hostname}-{url.port or ''}".rstrip("-")])[0]
    endpoint = urlunsplit(url._replace(fragment=""))
    return Target(f"webdriver-{name}-{engine}", engine, endpoint, protocol="webdriver",
                  capabilities=json.dumps(capabilities, sort_keys=True))


class Session(Protocol):
    """One browser with one page of the dev server where the bench harness (pages/bench/bench.js) runs."""

    target: Target
    page_errors: list[str]

    @property
    def version(self) -> str:
        """The browser's version string."""

    def start(self) -> Session:
        """Launch or connect the browser and open the bench page."""

    def probe(self, variants: list[str]) -> Probe:
        """What this browser offers: the polyfill, native WebNN per context variant."""

    def run(self, wire: Mapping[str, Any], impl: str, variant: str, options: Mapping[str, Any],
            repeat: int) -> dict[str, Any]:
        """One graph case on one implementation; failures come back as data."""

    def run_client(self, client: Mapping[str, Any], impl: str, options: Mapping[str, Any],
                   repeat: int) -> dict[str, Any]:
        """One framework case (onnxruntime-web, LiteRT.js) on one implementation; failures come back as data."""

    def close(self) -> None:
        """Close the page and the browser (a remote one: the connection)."""
