"""pyodide-webnn dev server: a FastAPI app serving the polyfill, Pyodide assets, the core wheel and pages.

`web.create_app` and `web.Settings` load lazily, so importing `web.browsers` or `web.settings` (the bench's
pytest plugin, loaded by every pytest run, does) does not pay for FastAPI.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Settings", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from web.app import create_app

        return create_app
    if name == "Settings":
        from web.settings import Settings

        return Settings
    raise AttributeError(name)
