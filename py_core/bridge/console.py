"""py_core's log to the browser console: inside Pyodide the polyfill mutes stderr, so the traceback of an
internal error (py_core.errors.internal_error) would otherwise be lost; the page only sees a WebNN error."""

from __future__ import annotations

import logging
import sys

from py_core.errors import LOG


class _ConsoleHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            import js  # type: ignore[import-not-found]  # Pyodide's JavaScript globals

            js.console.error(f"pyodide-webnn: {self.format(record)}")
        except Exception:  # logging must never raise into the kernel's error path
            self.handleError(record)


def install() -> None:
    """Send py_core's log to console.error when running in Pyodide (once); a no-op under CPython."""
    if sys.platform == "emscripten" and not any(isinstance(h, _ConsoleHandler) for h in LOG.handlers):
        LOG.addHandler(_ConsoleHandler())
