"""Browser test fixtures: the real dev server on a free port, offline system browsers, one booted page
per browser shared by the tests that allow it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import POLYFILL_BOOT, booted_page

from bench.cases import client_models as client_model_files
from bench.server import dev_server as serve_dev_server
from web.browsers import launch_args, native_chromium_launch_args


@pytest.fixture(scope="session")
def dev_server() -> Iterator[str]:
    """The project's FastAPI dev server, served by uvicorn in a thread on a free port; yields its base URL."""
    with serve_dev_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any], browser_name: str) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at the offline system browsers when present."""
    return launch_args(browser_name, base=browser_type_launch_args)




@pytest.fixture(scope="session")
def webnn_page(browser: Any, dev_server: str) -> Iterator[Any]:
    """A page of the dev server with the polyfill booted once (createContext done), shared per browser."""
    with booted_page(browser, f"{dev_server}/test/smoke.html", POLYFILL_BOOT) as page:
        yield page


@pytest.fixture(scope="session")
def webnn_strict_page(browser: Any, dev_server: str) -> Iterator[Any]:
    """Like webnn_page, with the polyfill in strict mode (data-strict: the draft's behaviour, not Chromium's)."""
    with booted_page(browser, f"{dev_server}/test/strict.html", POLYFILL_BOOT) as page:
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
