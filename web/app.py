"""FastAPI app factory: cross-origin isolation headers, static mounts, the core wheel and health."""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web import mediapipe_models
from web.core_wheel import CoreWheelCache, read_project_meta
from web.settings import Settings
from web.static_host import precompressed_sibling

WEB_DIR = Path(__file__).resolve().parent
# Browsers need cross-origin isolation for SharedArrayBuffer; these go on every response.
ISOLATION_HEADERS = {
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-embedder-policy": "require-corp",
    "cross-origin-resource-policy": "same-origin",
}
MIME_TYPES = {
    ".wasm": "application/wasm",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".map": "application/json",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".ts": "text/plain; charset=utf-8",
}
# Browsers must not guess a type other than the one we send (a report or JSON sniffed as HTML or script).
NOSNIFF = {"x-content-type-options": "nosniff"}
NO_CACHE = "no-cache"
LONG_CACHE = "public, max-age=86400"
IMMUTABLE = "public, max-age=31536000, immutable"
# The polyfill and what it loads may be included from any origin (the dev server can play the CDN): these paths
# are sent with CORP cross-origin and CORS instead of CORP same-origin.
CROSS_ORIGIN_PREFIXES = ("/polyfill/", "/pyodide/", "/core/", "/dist/")
CROSS_ORIGIN_HEADERS = {"cross-origin-resource-policy": "cross-origin", "access-control-allow-origin": "*"}
# Other installed packages add their pages to the dev server through entry points of this group: a function
# (app, settings) -> None that adds routes, mounts and middleware (the bench: its pages and /reports/).
EXTENSION_GROUP = "pyodide_webnn.server"
Extension = Callable[[FastAPI, Settings], None]


class IsolationHeaders:
    """Pure ASGI middleware: adds the isolation headers to every HTTP response it sees."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        added = dict(ISOLATION_HEADERS)
        if str(scope.get("path", "")).startswith(CROSS_ORIGIN_PREFIXES):
            added.update(CROSS_ORIGIN_HEADERS)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in added]
                headers += [(k.encode(), v.encode()) for k, v in added.items()]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


class AddHeaders:
    """Pure ASGI middleware: sets `headers` (replacing any of the same name) on every HTTP response whose path
    is `prefix` or below it (every response when `prefix` is empty): errors, 404s and static files included."""

    def __init__(self, app: ASGIApp, headers: dict[str, str], prefix: str = "") -> None:
        self.app = app
        self.prefix = prefix.rstrip("/")
        self.names = {k.lower().encode() for k in headers}
        self.raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == self.prefix or path.startswith(self.prefix + "/")):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self.names]
                message["headers"] = kept + self.raw
            await send(message)

        await self.app(scope, receive, send_with_headers)


class AssetFiles(StaticFiles):
    """StaticFiles with our MIME table, a Cache-Control value, and 404 (not 500) for a missing dir.

    `precompressed`: a file's `.br` / `.gz` sibling (make dist writes them) is sent with `Content-Encoding` when
    the request's `Accept-Encoding` allows it (`Vary: Accept-Encoding` either way). `immutable_under`: paths
    below this folder carry a content hash, and are sent `immutable`."""

    def __init__(
        self,
        directory: Path,
        cache_control: str,
        html: bool = False,
        precompressed: bool = False,
        immutable_under: str | None = None,
    ) -> None:
        super().__init__(directory=directory, html=html, check_dir=False)
        self.cache_control = cache_control
        self.precompressed = precompressed
        self.immutable_under = immutable_under

    async def check_config(self) -> None:
        """Accept a directory that does not exist yet (unbuilt bundle, unfetched assets): it 404s."""

    def file_response(
        self, full_path: Any, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        """Serve one file with the MIME type from MIME_TYPES and this mount's Cache-Control."""
        path = Path(str(full_path))
        coding = ""
        if self.precompressed:
            accept = dict((k.decode().lower(), v.decode()) for k, v in scope.get("headers", [])).get(
                "accept-encoding", ""
            )
            sibling = precompressed_sibling(path, accept)
            if sibling:
                full_path, coding = sibling[0], sibling[1]
                stat_result = os.stat(full_path)
        response = super().file_response(full_path, stat_result, scope, status_code)
        mime = MIME_TYPES.get(path.suffix.lower())
        if mime and response.status_code != 304:
            response.headers["content-type"] = mime
        if self.precompressed:
            response.headers["vary"] = "Accept-Encoding"
        if coding:
            response.headers["content-encoding"] = coding
        immutable = False
        if self.immutable_under is not None and self.directory is not None:
            root = Path(str(self.directory)).resolve()
            immutable = path.resolve().is_relative_to(root / self.immutable_under)
        response.headers["cache-control"] = IMMUTABLE if immutable else self.cache_control
        return response


def _health(settings: Settings, wheels: CoreWheelCache) -> dict[str, Any]:
    pyodide_dir = settings.pyodide_dir
    lock = pyodide_dir / "pyodide-lock.json"
    core_ok = all(
        (pyodide_dir / f).is_file() for f in ("pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
    )
    numpy_ok = False
    try:
        numpy_file = json.loads(lock.read_text())["packages"]["numpy"]["file_name"]
        numpy_ok = (pyodide_dir / numpy_file).is_file()
    except (OSError, ValueError, KeyError):
        pass  # no or broken lock: report numpy as absent
    return {
        "status": "ok",
        "pyodide": core_ok and lock.is_file(),
        "numpy": numpy_ok,
        "core": wheels.get().short_hash,
        "version": read_project_meta(settings.repo_root / "pyproject.toml").version,
    }


def _model_file(name: str) -> Path | None:
    """A MediaPipe .tflite by name: web.mediapipe_models' registry first, else any file of that name under
    mediapipe/modules/ (the gallery also uses models the registry does not list); None when absent."""
    if not name.replace("_", "").isalnum():
        return None
    try:
        if name in mediapipe_models.MODELS:
            return Path(mediapipe_models.model_path(name))
        return next((mediapipe_models.mediapipe_dir() / "modules").glob(f"*/{name}.tflite"), None)
    except FileNotFoundError:
        return None


def installed_extensions() -> list[Extension]:
    """The route sets installed packages add to the dev server (entry points of EXTENSION_GROUP)."""
    return [ep.load() for ep in sorted(importlib.metadata.entry_points(group=EXTENSION_GROUP), key=lambda e: e.name)]


def create_app(settings: Settings | None = None, extensions: Sequence[Extension] | None = None) -> FastAPI:
    """Build the dev server app for the given settings (default: from the environment), with `extensions` adding
    their routes (default: the installed ones)."""
    settings = settings or Settings.from_env()
    wheels = CoreWheelCache(settings.core_src, settings.repo_root / "pyproject.toml")
    app = FastAPI(title="pyodide-webnn dev server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.core_wheels = wheels

    async def server_error(request: Request, exc: Exception) -> Response:
        # 500s are answered outside all middleware, so the isolation headers are set here too.
        headers = {**ISOLATION_HEADERS, **NOSNIFF}
        return JSONResponse({"detail": "Internal Server Error"}, status_code=500, headers=headers)

    app.add_exception_handler(Exception, server_error)
    app.add_middleware(IsolationHeaders)
    app.add_middleware(AddHeaders, headers=NOSNIFF)

    @app.get("/api/health")
    def health() -> Response:
        return JSONResponse(_health(settings, wheels), headers={"cache-control": "no-store"})

    @app.get("/core/manifest.json")
    def core_manifest() -> Response:
        wheel = wheels.get()
        body: dict[str, Any] = {"wheel": wheel.url, "sha256": wheel.sha256, "files": wheel.files}
        snapshot = settings.snapshot_asset()
        if snapshot:
            body["snapshot"] = snapshot
        numpy_snapshot = settings.snapshot_asset("pyodide-snapshot-numpy")
        if numpy_snapshot:
            body["numpySnapshot"] = numpy_snapshot
        return JSONResponse(body, headers={"cache-control": NO_CACHE})

    @app.get("/core/{digest}/{filename}")
    def core_wheel(digest: str, filename: str) -> Response:
        wheel = wheels.find(digest)
        if wheel is None or filename != wheel.filename:
            return JSONResponse({"detail": "unknown or stale core wheel; fetch /core/manifest.json"}, 404)
        headers = {"cache-control": IMMUTABLE}
        return Response(wheel.data, media_type=MIME_TYPES[".whl"], headers=headers)

    @app.get("/")
    def index() -> Response:
        return FileResponse(WEB_DIR / "gallery" / "index.html", headers={"cache-control": NO_CACHE})

    @app.get("/favicon.ico")
    def favicon() -> Response:
        # browsers ask every page's origin for it: an icon instead of a 404 on each page's console
        return FileResponse(WEB_DIR / "lib" / "favicon.svg", media_type="image/svg+xml",
                            headers={"cache-control": NO_CACHE})

    @app.get("/models/{name}.tflite")
    def model_file(name: str) -> Response:
        path = _model_file(name)
        if path is None or not path.is_file():
            return JSONResponse({"detail": f"no model '{name}' (pip install mediapipe==0.10.14)"}, 404)
        return FileResponse(path, media_type="application/octet-stream", headers={"cache-control": NO_CACHE})

    @app.get("/gallery/samples/{name}.png")
    def sample_photo(name: str) -> Response:
        # generated from scikit-image on first use (web/samples.py), not committed
        from web import samples  # NumPy loads with the first sample asked for, not with the server

        path = settings.samples_dir / f"{name}.png"
        if name not in samples.SAMPLES:
            return JSONResponse({"detail": f"no sample photo '{name}'"}, 404)
        if not path.is_file():
            try:
                samples.make_samples(path.parent)
            except ImportError:
                return JSONResponse({"detail": "scikit-image is needed: pip install -e '.[models]'"}, 404)
        return FileResponse(path, media_type="image/png", headers={"cache-control": NO_CACHE})

    app.mount("/polyfill", AssetFiles(settings.polyfill_dist, NO_CACHE), name="polyfill")
    app.mount("/pyodide", AssetFiles(settings.pyodide_dir, LONG_CACHE), name="pyodide")
    # make dist's package, as a CDN would serve it: precompressed siblings, hashed assets immutable
    dist = AssetFiles(settings.repo_root / "dist", NO_CACHE, precompressed=True, immutable_under="assets/")
    app.mount("/dist", dist, name="dist")
    # modules shared by the pages (the graph file reader and replayer: web/lib/graphfile.js)
    app.mount("/lib", AssetFiles(WEB_DIR / "lib", NO_CACHE), name="lib")
    app.mount("/test", AssetFiles(WEB_DIR / "pages" / "test", NO_CACHE, html=True), name="test")
    app.mount("/gallery", AssetFiles(WEB_DIR / "gallery", NO_CACHE, html=True), name="gallery")
    for extend in installed_extensions() if extensions is None else extensions:
        extend(app, settings)
    return app
