"""Browsers for the bench: local ones launched offline (web.browsers), remote ones reached through a
`playwright run-server` endpoint, each with one page of the dev server where the polyfill has booted and
static/bench.js runs cases.  Also the dev server itself, in a thread, when no URL is given."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from web.bench.probe import Probe, probe_page
from web.browsers import launch_args, native_chromium_launch_args
from web.settings import Settings

BENCH_PAGE = "/bench/bench.html"
BROWSER_TYPES = ("chromium", "firefox", "webkit")
# The npm Chromium 153 whose native WebNN works (scripts/setup_native_chromium.py): a local target of its own,
# added next to "chromium", so one of its pages runs the polyfill and every native variant side by side.
NATIVE_CHROMIUM = "chromium-npm"
# Playwright option names as run-server expects them in its launch-options (camelCase JSON).
_CAMEL = {
    "executable_path": "executablePath",
    "chromium_sandbox": "chromiumSandbox",
    "slow_mo": "slowMo",
    "firefox_user_prefs": "firefoxUserPrefs",
    "ignore_default_args": "ignoreDefaultArgs",
}


@dataclass(frozen=True)
class Target:
    """A browser the bench runs in: local (launched here) or remote (a run-server endpoint)."""

    id: str  # in test ids and results: "chromium", "firefox", "remote-lab1-chromium"
    browser: str  # Playwright browser type
    endpoint: str | None = None

    @property
    def remote(self) -> bool:
        """Whether the browser is reached through a run-server endpoint."""
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


# A freshly launched Chromium 156 keeps about 1.7 of the 2 cores busy for its first 0.6-0.7 s (a renderer loading
# its omnibox popup, chrome://omnibox-popup.top-chrome, among others).  A page that starts then competes with the
# browser's own start-up, which a visit to a browser already running does not: a warm start measured 1,167 ms
# (median) right after the launch and 889 after a 3 s wait (4 interleaved rounds, session 10).
QUIET_BUSY = 0.15  # fraction of all cores; an idle browser and this machine's background stay under 0.05
QUIET_WINDOWS = 2  # consecutive 100 ms windows under QUIET_BUSY
SETTLE_MAX_S = 10.0  # a machine that never goes quiet (another job's load) costs each visit this much at most


def _cpu_jiffies() -> tuple[int, int] | None:
    """(all, idle) CPU time so far from /proc/stat; None where there is none (not Linux)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(v), v[3] + v[4]  # idle + iowait


def settle(max_s: float = SETTLE_MAX_S) -> float:
    """Wait until the machine's CPUs are quiet (QUIET_WINDOWS windows of 100 ms under QUIET_BUSY), at most max_s;
    the seconds waited.  Start-up benches call it after launching a browser and before each visit, so a visit
    measures the page and not the browser's own start.  Without /proc/stat: a fixed 2 s."""
    t0 = time.perf_counter()
    last = _cpu_jiffies()
    if last is None:
        time.sleep(min(2.0, max_s))
        return time.perf_counter() - t0
    quiet = 0
    while quiet < QUIET_WINDOWS and time.perf_counter() - t0 < max_s:
        time.sleep(0.1)
        now = _cpu_jiffies()
        assert now is not None
        total, idle = now[0] - last[0], now[1] - last[1]
        last = now
        quiet = quiet + 1 if total > 0 and 1 - idle / total < QUIET_BUSY else 0
    return time.perf_counter() - t0


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dev_server(port: int | None = None, wrap: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """The project's dev server (web.app) served by uvicorn in a daemon thread; yields its base URL.  `wrap`
    puts an ASGI middleware around the app (the perf bench counts the bytes a page load downloads)."""
    env = Settings.from_env()
    settings = Settings(
        host="127.0.0.1",
        port=port or free_port(),
        cache_dir=env.cache_dir,
        repo_root=env.repo_root,
        reports_dir=env.reports_dir,
    )
    with serve_app(settings, wrap) as url:
        yield url


@contextmanager
def serve_app(settings: Settings, wrap: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """create_app(settings), wrapped in `wrap` if given, served by uvicorn in a daemon thread on
    settings.host:port; yields its base URL."""
    import uvicorn

    from web.app import create_app

    app = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(wrap(app) if wrap else app, host=settings.host, port=settings.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True, name="webnn-bench-server")
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the dev server did not start")
        time.sleep(0.05)
    try:
        yield f"http://{settings.host}:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _fulfil_with(body: bytes, headers: dict[str, str]) -> Any:
    """A Playwright route handler answering with these bytes."""

    def serve(route: Any) -> None:
        route.fulfill(status=200, body=body, headers=headers)

    return serve


class BrowserSession:
    """One browser (launched or connected), one context and one booted bench page.  A subclass serves
    another page of the dev server that also loads the bench harness (web/bench/perf.py: /perf/)."""

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
        """webnnBench.runClient in the page: a framework case (web/bench/frameworks.py) through its client on
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
