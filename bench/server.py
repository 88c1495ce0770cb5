"""The dev server (web.app) with the bench's pages and /reports/, served by uvicorn in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from web.settings import Settings


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dev_server(port: int | None = None, wrap: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """The project's dev server (web.app) with the bench's pages, served by uvicorn in a daemon thread; yields its
    base URL.  `wrap` puts an ASGI middleware around the app (the perf bench counts the bytes a page load
    downloads)."""
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
    """create_app(settings) with the bench's pages (bench.pages), wrapped in `wrap` if given, served by uvicorn in
    a daemon thread on settings.host:port; yields its base URL."""
    import uvicorn  # the server's packages load when a server starts, not with the pytest plugin

    from bench.pages import add_bench_routes
    from web.app import create_app

    app = create_app(settings, [add_bench_routes])
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
