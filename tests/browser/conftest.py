"""Browser test fixtures: the real dev server on a free port, offline system browsers, one booted page
per browser shared by the tests that allow it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from web.app import create_app
from web.browsers import launch_args
from web.settings import Settings

# One test graph run plus Pyodide boot stays well under this; a hang fails instead of stalling CI.
BOOT_TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def dev_server() -> Iterator[str]:
    """The project's FastAPI dev server, served by uvicorn in a thread; yields its base URL."""
    env = Settings.from_env()
    settings = Settings(host="127.0.0.1", port=_free_port(), cache_dir=env.cache_dir, repo_root=env.repo_root)
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the dev server did not start")
        time.sleep(0.05)
    yield f"http://{settings.host}:{settings.port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any], browser_name: str) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at the offline system browsers when present."""
    return launch_args(browser_name, base=browser_type_launch_args)


@pytest.fixture(scope="session")
def webnn_page(browser: Any, dev_server: str) -> Iterator[Any]:
    """A page of the dev server with the polyfill booted once (createContext done), shared per browser."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{dev_server}/test/smoke.html")
    page.evaluate("async () => { window.__ctx = await navigator.ml.createContext(); }")
    page.webnn_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()
