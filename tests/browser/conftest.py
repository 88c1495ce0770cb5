"""Browser test fixtures: the real dev server on a free port, offline system browsers, one booted page
per browser shared by the tests that allow it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pages import BOOT_TIMEOUT_MS, POLYFILL_BOOT, WEBKIT_OVER_WEBDRIVER, booted_page, open_window

from bench.cases import client_models as client_model_files
from bench.server import dev_server as serve_dev_server
from web.browsers import launch_args, native_chromium_launch_args, playwright_has
from web.fault_injection import Faults
from web.served_files import ServedFiles
from web.webdriver import WebDriverUnavailable, webkitgtk_session


@pytest.fixture(scope="session")
def served_files() -> ServedFiles:
    """Files the tests put on the dev server at /__files/<name> (web.served_files)."""
    return ServedFiles()


@pytest.fixture(scope="session")
def dev_server(served_files: ServedFiles) -> Iterator[str]:
    """The project's FastAPI dev server, served by uvicorn in a thread on a free port; yields its base URL."""
    with serve_dev_server(wrap=served_files.wrap) as url:
        yield url


@pytest.fixture(scope="session")
def fault_server() -> Iterator[tuple[str, Faults]]:
    """A dev server of its own for the fault suite, behind web.fault_injection: (its base URL, its Faults)."""
    faults = Faults()
    with serve_dev_server(wrap=faults.wrap) as url:
        yield url, faults


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any], browser_name: str) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at the offline system browsers when present."""
    return launch_args(browser_name, base=browser_type_launch_args)


@pytest.fixture(scope="session")
def browser_type(playwright: Any, browser_name: str) -> Any:
    """pytest-playwright's browser type, skipped with the reason where Playwright cannot launch it here: WebKit
    without Playwright's own build (`playwright install webkit`) runs as WebKitGTK over WebDriver, in the tests
    that open their pages through `pages.open_window` (webnn_page among them)."""
    found = getattr(playwright, browser_name)
    if not playwright_has(found):
        pytest.skip(f"drives a Playwright browser, and Playwright's {browser_name} is not installed here "
                    f"(playwright install {browser_name})" + (WEBKIT_OVER_WEBDRIVER if browser_name == "webkit" else ""))
    return found


@pytest.fixture(scope="session")
def webkit_driver() -> Iterator[Any]:
    """The WebKitGTK session (MiniBrowser through WebKitWebDriver, under Xvfb when there is no display) whose
    windows the WebKit tests open; skipped with the reason where this machine lacks a part."""
    try:
        with webkitgtk_session() as driver:
            yield driver
    except WebDriverUnavailable as e:
        pytest.skip(str(e))


@contextmanager
def _polyfill_page(request: pytest.FixtureRequest, browser_name: str, url: str) -> Iterator[Any]:
    """A page at url with the polyfill booted (createContext done) in the browser under test."""
    with open_window(request, browser_name, url, BOOT_TIMEOUT_MS) as page:
        page.evaluate(POLYFILL_BOOT)
        yield page


@pytest.fixture(scope="session")
def webnn_page(request: pytest.FixtureRequest, browser_name: str, dev_server: str) -> Iterator[Any]:
    """A page of the dev server with the polyfill booted once (createContext done), shared per browser."""
    with _polyfill_page(request, browser_name, f"{dev_server}/test/smoke.html") as page:
        yield page


@pytest.fixture(scope="session")
def webnn_strict_page(request: pytest.FixtureRequest, browser_name: str, dev_server: str) -> Iterator[Any]:
    """Like webnn_page, with the polyfill in strict mode (data-strict: the draft's behaviour, not Chromium's)."""
    with _polyfill_page(request, browser_name, f"{dev_server}/test/strict.html") as page:
        yield page


@pytest.fixture(scope="session")
def native_chromium_browser(playwright: Any) -> Iterator[Any]:
    """The npm Chromium 153 whose native WebNN works (make setup installs it), one per session for every test
    that needs a usable native WebNN; skipped with the setup's reason where it is not installed."""
    try:
        kw = native_chromium_launch_args()
    except RuntimeError as e:
        pytest.skip(str(e))
    browser = playwright.chromium.launch(**kw)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def native_webnn_page(native_chromium_browser: Any, dev_server: str) -> Iterator[Any]:
    """One page of the npm Chromium with both implementations ready, shared by every native comparison:
    `window.__ctx` a polyfill context, `window.__nctx` a native one (MLGraphBuilder is the native builder)."""
    boot = ("async () => { window.__ctx = await webnnPolyfill.ml.createContext();"
            " window.__nctx = await navigator.ml.createContext(); }")
    with booted_page(native_chromium_browser, f"{dev_server}/test/smoke.html", boot) as page:
        yield page


@pytest.fixture(scope="session")
def client_models() -> dict[str, Any]:
    """The real clients' ONNX models (bench/cases/client_models.py), generated once into build/client-models and
    kept between sessions; the dev server serves them at /clients/models/<name>.onnx."""
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    models: dict[str, Any] = client_model_files.generate()["models"]
    return models
