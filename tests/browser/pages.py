"""Opening a dev-server page for a browser test: one place for the timeout and the page-error capture."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from web.browsers import webkit_over_webdriver
from web.webdriver import WebDriverPage


def open_page(owner: Any, url: str, timeout_ms: int) -> tuple[Any, list[str]]:
    """A new page of `owner` (a browser context, or a browser) at url, with the default timeout set and its
    uncaught errors collected in the returned list."""
    page = owner.new_page()
    page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors


# One graph run plus Pyodide boot stays well under this; a hang fails instead of stalling CI.
BOOT_TIMEOUT_MS = 120_000
POLYFILL_BOOT = "async () => { window.__ctx = await navigator.ml.createContext(); }"


@contextmanager
def booted_page(browser: Any, url: str, boot_js: str) -> Iterator[Any]:
    """A page at url in a fresh context of `browser`, after boot_js ran; its page errors in `webnn_errors`."""
    context = browser.new_context()
    page, errors = open_page(context, url, BOOT_TIMEOUT_MS)
    page.evaluate(boot_js)
    page.webnn_errors = errors  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        context.close()


WEBKIT_OVER_WEBDRIVER = "; WebKitGTK through WebDriver runs the tests whose pages need no Playwright-only API"


def over_webdriver(request: Any, browser_name: str) -> bool:
    """Whether this test's WebKit is WebKitGTK over WebDriver (Playwright's own WebKit is not installed)."""
    return webkit_over_webdriver(browser_name, request.getfixturevalue("playwright"))


@contextmanager
def open_window(request: Any, browser_name: str, url: str, timeout_ms: int) -> Iterator[Any]:
    """A fresh page at url in the browser under test: a Playwright page in a new context of the `browser`
    fixture, or a new window of the session's WebKitGTK (the `webkit_driver` fixture: its windows share one
    ephemeral profile, so Pyodide's assets are cached after the first).  Either way `page.webnn_errors` lists
    the page's uncaught errors."""
    if not over_webdriver(request, browser_name):
        context = request.getfixturevalue("browser").new_context()
        try:
            page, errors = open_page(context, url, timeout_ms)
            page.webnn_errors = errors
            yield page
        finally:
            context.close()
        return
    page = WebDriverPage.new_window(request.getfixturevalue("webkit_driver"), timeout_ms)
    try:
        page.goto(url)
        yield page
    finally:
        page.close()


# Empties an origin's storage (Cache Storage, and the Origin Private File System where there is one)
CLEAR_STORAGE_JS = """async () => {
  for (const name of await caches.keys()) await caches.delete(name);
  if (navigator.storage && navigator.storage.getDirectory) {
    const root = await navigator.storage.getDirectory();
    for await (const [name] of root.entries()) await root.removeEntry(name, {recursive: true});
  }
}"""

# The polyfill's Cache Storage caches (polyfill/src/boot/snapstore.js, sitecache.js), opened and kept by a page
HOLD_CACHES_JS = """async () => {
  window.__heldCaches = await Promise.all(
    ['webnn-polyfill-pyodide-snapshot', 'webnn-polyfill-site'].map((name) => caches.open(name)));
}"""


class Profile:
    """Pages that share one browser profile (its storage and caches), opened with `open(url)`: pages of a
    Playwright browser context, or windows of the session's WebKitGTK (`driver`)."""

    def __init__(self, context: Any = None, driver: Any = None, timeout_ms: int = BOOT_TIMEOUT_MS) -> None:
        self.context = context
        self.driver = driver
        self.timeout_ms = timeout_ms

    def open(self, url: str) -> Any:
        """A new page at url; its uncaught errors in `page.webnn_errors`."""
        if self.driver is None:
            page, errors = open_page(self.context, url, self.timeout_ms)
            page.webnn_errors = errors
            return page
        page = WebDriverPage.new_window(self.driver, self.timeout_ms)
        page.goto(url)
        return page


@contextmanager
def fresh_profile(request: Any, browser_name: str, origin: str, timeout_ms: int) -> Iterator[Profile]:
    """A profile with empty storage for `origin`: a new context of the `browser` fixture, or in WebKitGTK over
    WebDriver its session's windows with the origin's storage emptied before and after.  There a window of the
    origin holds the polyfill's caches open meanwhile: its automation session is ephemeral and keeps a cache's
    entries only while a page holds that cache open (a visit's stored snapshot is gone once its window closes)."""
    if not over_webdriver(request, browser_name):
        context = request.getfixturevalue("browser").new_context()
        try:
            yield Profile(context=context, timeout_ms=timeout_ms)
        finally:
            context.close()
        return
    driver = request.getfixturevalue("webkit_driver")
    holder = WebDriverPage.new_window(driver, timeout_ms)
    try:
        holder.goto(f"{origin}/api/health")
        holder.evaluate(CLEAR_STORAGE_JS)
        holder.evaluate(HOLD_CACHES_JS)
        yield Profile(driver=driver, timeout_ms=timeout_ms)
        holder.evaluate(CLEAR_STORAGE_JS)
    finally:
        holder.close()


# Runs one single-operator graph; the filter is a graph input or a constant.  Resolves to {y} or {error}.
RUN_ONE_OP_JS = r"""
async ({op, x, xShape, w, wShape, bias, options, constantFilter, label}) => {
  const P = webnnPolyfill;
  const ctx = window.__boundedCtx || (window.__boundedCtx = await P.ml.createContext());
  const b = new P.MLGraphBuilder(ctx);
  const f32 = (shape) => ({dataType: 'float32', shape});
  try {
    const input = b.input('x', f32(xShape));
    let out;
    if (w === null) {  // a pool: no filter
      out = b[op](input, {...options, label});
    } else {
      const filter = constantFilter ? b.constant(f32(wShape), new Float32Array(w)) : b.input('w', f32(wShape));
      const biasOp = b.constant(f32([bias.length]), new Float32Array(bias));
      out = b[op](input, filter, {...options, bias: biasOp, label});
    }
    const graph = await b.build({y: out});
    const xt = await ctx.createTensor({...f32(xShape), writable: true});
    const yt = await ctx.createTensor({...f32(out.shape), readable: true});
    ctx.writeTensor(xt, new Float32Array(x));
    const inputs = {x: xt};
    if (w !== null && !constantFilter) {
      inputs.w = await ctx.createTensor({...f32(wShape), writable: true});
      ctx.writeTensor(inputs.w, new Float32Array(w));
    }
    const t0 = performance.now();
    ctx.dispatch(graph, inputs, {y: yt});
    const y = Array.from(new Float32Array(await ctx.readTensor(yt)));
    return {y, shape: out.shape, ms: performance.now() - t0};
  } catch (e) {
    return {error: {name: e.name, message: e.message}};
  }
}
"""
