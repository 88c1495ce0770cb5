"""Browsers reached over W3C WebDriver: WebKitGTK (Safari's engine) on this machine, or any remote endpoint
(safaridriver, a Selenium Grid, a cloud grid), with a page object that evaluates like Playwright's.

WebKitGTK's MiniBrowser has no headless mode, so a local session runs it under its own Xvfb display when no
DISPLAY is set.  https://www.w3.org/TR/webdriver2/#execute-async-script
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEBKIT_DRIVER_PATHS = ("/usr/bin/WebKitWebDriver", "/usr/libexec/webkit2gtk-4.1/WebKitWebDriver")
MINIBROWSER_PATHS = ("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser", "/usr/lib/webkit2gtk-4.1/MiniBrowser",
                     "/usr/libexec/webkit2gtk-4.1/MiniBrowser")
WEBKIT_SETUP = "make setup (or, as root: apt-get install -y webkit2gtk-driver xvfb)"
# Xvfb answers on its display file descriptor within a second here; a machine that cannot start it fails clearly
XVFB_START_SECONDS = 20.0


class WebDriverUnavailable(RuntimeError):
    """This machine cannot start the WebDriver browser asked for; the message says what is missing."""


class EvaluateError(RuntimeError):
    """A script evaluated in a WebDriver page threw or rejected: the page's error name and message."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def _first(paths: tuple[str, ...], env: str) -> str | None:
    override = os.environ.get(env)
    if override:
        return override
    return next((p for p in paths if Path(p).is_file() and os.access(p, os.X_OK)), None)


@dataclass(frozen=True)
class WebKitGTK:
    """Where WebKitGTK's WebDriver server and browser are, or why they are not (`driver` None)."""

    driver: str | None
    browser: str | None
    reason: str = ""


def webkitgtk() -> WebKitGTK:
    """WebKitWebDriver and MiniBrowser ($PYODIDE_WEBNN_WEBKIT_DRIVER / $PYODIDE_WEBNN_MINIBROWSER override), plus
    Xvfb when there is no display; otherwise the reason."""
    driver = _first(WEBKIT_DRIVER_PATHS, "PYODIDE_WEBNN_WEBKIT_DRIVER")
    browser = _first(MINIBROWSER_PATHS, "PYODIDE_WEBNN_MINIBROWSER")
    missing = [what for what, path in (("WebKitWebDriver", driver), ("MiniBrowser", browser)) if not path]
    if not os.environ.get("DISPLAY") and not shutil.which("Xvfb"):
        missing.append("Xvfb (no DISPLAY is set)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium Python package")
    if missing:
        return WebKitGTK(None, None, f"WebKitGTK through WebDriver needs {', '.join(missing)}: run {WEBKIT_SETUP}")
    return WebKitGTK(driver, browser)


@contextmanager
def xvfb_display() -> Iterator[str]:
    """The DISPLAY to use: the session's own when set, else a private Xvfb server for the block's duration."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        number = _read_display_number(read_fd, proc)
        yield f":{number}"
    finally:
        os.close(read_fd)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def _read_display_number(fd: int, proc: subprocess.Popen[bytes]) -> str:
    """Xvfb writes its display number and a newline to -displayfd once it accepts clients."""
    deadline, text = time.monotonic() + XVFB_START_SECONDS, b""
    while not text.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            raise WebDriverUnavailable(f"Xvfb did not start within {XVFB_START_SECONDS:.0f} s "
                                       f"(exit code {proc.poll()})")
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 64)
            if not chunk:
                raise WebDriverUnavailable(f"Xvfb closed its display pipe (exit code {proc.poll()})")
            text += chunk
    return text.decode().strip()


# Values JSON cannot carry (NaN, the infinities, -0, undefined) travel as tagged objects, both ways, so a page's
# results read as Playwright's evaluate() returns them.
_TAG = "__webnn_value__"
_ENCODE_JS = r"""
const encodeValue = (v, seen = new Set()) => {
  if (v === undefined) return {__webnn_value__: 'undefined'};
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return {__webnn_value__: 'NaN'};
    if (v === Infinity) return {__webnn_value__: 'Infinity'};
    if (v === -Infinity) return {__webnn_value__: '-Infinity'};
    if (Object.is(v, -0)) return {__webnn_value__: '-0'};
    return v;
  }
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return typeof v === 'function' ? {__webnn_value__: 'undefined'} : v;
  if (seen.has(v)) return null;
  seen.add(v);
  let out;
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) out = Array.from(v, (x) => encodeValue(x, seen));
  else if (Array.isArray(v)) out = v.map((x) => encodeValue(x, seen));
  else if (v instanceof Error) out = {name: v.name, message: v.message};
  else { out = {}; for (const [k, x] of Object.entries(v)) out[k] = encodeValue(x, seen); }
  seen.delete(v);
  return out;
};
const decodeValue = (text) => JSON.parse(text, (k, v) => {
  if (v && typeof v === 'object' && '__webnn_value__' in v) {
    const special = {'undefined': undefined, 'NaN': NaN, 'Infinity': Infinity, '-Infinity': -Infinity, '-0': -0};
    return special[v.__webnn_value__];
  }
  return v;
});
"""
# The page's uncaught errors and unhandled rejections, kept for `webnn_errors` (Playwright's "pageerror").
_ERRORS_JS = r"""
if (!window.__webnnPageErrors) {
  window.__webnnPageErrors = [];
  addEventListener('error', (e) => window.__webnnPageErrors.push(String(e.error || e.message)));
  addEventListener('unhandledrejection', (e) => window.__webnnPageErrors.push(String(e.reason)));
}
"""
_EVALUATE_JS = _ENCODE_JS + r"""
const [source, argText, done] = arguments;
const finish = (value) => done(JSON.stringify(value));
try {
  const target = (0, eval)('(' + source + ')');
  const arg = decodeValue(argText);
  Promise.resolve(typeof target === 'function' ? target(arg) : target).then(
    (v) => finish({ok: encodeValue(v)}),
    (e) => finish({error: {name: (e && e.name) || 'Error', message: String((e && e.message) || e)}}));
} catch (e) {
  finish({error: {name: e.name || 'Error', message: String(e.message || e)}});
}
"""


def _encode_arg(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return {_TAG: "NaN"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {_TAG: "Infinity" if value > 0 else "-Infinity"}
    if isinstance(value, dict):
        return {k: _encode_arg(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode_arg(v) for v in value]
    return value


def _decode_result(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_TAG}:
            return {"undefined": None, "NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"),
                    "-0": -0.0}[value[_TAG]]
        return {k: _decode_result(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_result(v) for v in value]
    return value


@dataclass
class WebDriverPage:
    """One WebDriver window seen as a page: goto(), evaluate() as Playwright's (a function source is called
    with `arg`, an expression is evaluated; promises are awaited; a throw raises EvaluateError).  Several pages
    may share one session, each its own window (`new_window`): every call first brings its window forward."""

    driver: Any
    timeout_ms: float = 30_000
    handle: str | None = None  # the window; None: whichever window the session has

    @classmethod
    def new_window(cls, driver: Any, timeout_ms: float = 30_000) -> WebDriverPage:
        """A page in a new top-level window of the session (same cookies and caches as its other windows)."""
        driver.switch_to.new_window("window")
        page = cls(driver, timeout_ms, driver.current_window_handle)
        driver.webnn_focus = page.handle
        return page

    def _focus(self) -> None:
        """Make this page's window the session's current one, and its timeout the script timeout."""
        if self.handle is not None and getattr(self.driver, "webnn_focus", None) != self.handle:
            self.driver.switch_to.window(self.handle)
            self.driver.webnn_focus = self.handle
        if getattr(self.driver, "webnn_timeout", None) != self.timeout_ms:
            self.driver.set_script_timeout(self.timeout_ms / 1000)
            self.driver.set_page_load_timeout(self.timeout_ms / 1000)
            self.driver.webnn_timeout = self.timeout_ms

    def set_default_timeout(self, timeout_ms: float) -> None:
        """The longest one evaluate() or goto() may take before it fails (WebDriver's timeouts)."""
        self.timeout_ms = timeout_ms

    def goto(self, url: str) -> None:
        """Navigate and wait for the load event; from then on the page's uncaught errors are collected."""
        self._focus()
        self.driver.get(url)
        self.driver.execute_script(_ERRORS_JS)

    @property
    def url(self) -> str:
        self._focus()
        return str(self.driver.current_url)

    def evaluate(self, source: str, arg: Any = None) -> Any:
        """Run `source` in the page, as Playwright's `page.evaluate(source, arg)`."""
        self._focus()
        raw = self.driver.execute_async_script(_EVALUATE_JS, source, json.dumps(_encode_arg(arg)))
        out = json.loads(raw)
        if "error" in out:
            raise EvaluateError(out["error"]["name"], out["error"]["message"])
        return _decode_result(out["ok"])

    def wait_for_function(self, expression: str, timeout_ms: float | None = None) -> None:
        """Poll `expression` every 100 ms until it is truthy, as Playwright's; TimeoutError past the timeout."""
        deadline = time.monotonic() + (timeout_ms if timeout_ms is not None else self.timeout_ms) / 1000
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} stayed false for {self.timeout_ms / 1000:.0f} s")
            time.sleep(0.1)

    def close(self) -> None:
        """Close this page's window (a session keeps its first window, so it never runs out of them)."""
        if self.handle is None:
            return
        self._focus()
        self.driver.close()
        self.driver.webnn_focus = None
        self.driver.switch_to.window(self.driver.window_handles[0])

    @property
    def webnn_errors(self) -> list[str]:
        """The uncaught errors and unhandled rejections the page has seen since goto()."""
        self._focus()
        return list(self.driver.execute_script("return window.__webnnPageErrors || []"))

    def screenshot(self, path: str) -> None:
        """A PNG of the window, for looking at what the page shows."""
        self._focus()
        self.driver.save_screenshot(path)


@contextmanager
def webkitgtk_session() -> Iterator[Any]:
    """A Selenium session of WebKitGTK's MiniBrowser through a local WebKitWebDriver, under Xvfb when needed;
    WebDriverUnavailable with the reason when this machine lacks a part."""
    found = webkitgtk()
    if found.driver is None or found.browser is None:
        raise WebDriverUnavailable(found.reason)
    from selenium import webdriver
    from selenium.webdriver.webkitgtk.options import Options
    from selenium.webdriver.webkitgtk.service import Service

    with xvfb_display() as display:
        options = Options()
        options.binary_location = found.browser
        options.add_argument("--automation")
        env = {**os.environ, "DISPLAY": display}
        service = Service(executable_path=found.driver, env=env)
        try:
            driver = webdriver.WebKitGTK(options=options, service=service)
        except Exception as e:  # selenium raises its own classes; the reason is in the text
            raise WebDriverUnavailable(f"WebKitWebDriver could not open MiniBrowser: {e}") from e
        try:
            yield driver
        finally:
            driver.quit()


@contextmanager
def remote_session(endpoint: str, capabilities: dict[str, Any]) -> Iterator[Any]:
    """A Selenium session on any W3C WebDriver endpoint (safaridriver, a Selenium Grid, a cloud grid) with the
    given capabilities (browserName and any vendor keys)."""
    from selenium import webdriver
    from selenium.webdriver.common.options import ArgOptions

    options = ArgOptions()
    for key, value in capabilities.items():
        options.set_capability(key, value)
    driver = webdriver.Remote(command_executor=endpoint, options=options)
    try:
        yield driver
    finally:
        driver.quit()
