"""pyodide-webnn dev server: a FastAPI app serving the polyfill, Pyodide assets, the core wheel and pages."""

from web.app import create_app
from web.settings import Settings

__all__ = ["Settings", "create_app"]
