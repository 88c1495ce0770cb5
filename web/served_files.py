"""Bytes put on the dev server at run time, at /__files/<name>: real HTTP, so every browser sees them whatever
drives it (Playwright's request routing has no WebDriver counterpart).  The tests and the bench wrap the app in
it (`dev_server(wrap=served.wrap)`); the served app itself never holds it."""

from __future__ import annotations

from typing import Any


class ServedFiles:
    """Bytes a test puts on the dev server at /__files/<name>: real HTTP, so every browser sees them whatever
    drives it (Playwright's request routing has no WebDriver counterpart).  `wrap` is the ASGI middleware."""

    PREFIX = "/__files/"

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def put(self, name: str, body: bytes) -> str:
        """Serve body at /__files/<name> from now on; returns that path."""
        self.files[name] = body
        return self.PREFIX + name

    def wrap(self, app: Any) -> Any:
        async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http" or not scope["path"].startswith(self.PREFIX):
                await app(scope, receive, send)
                return
            body = self.files.get(scope["path"][len(self.PREFIX):])
            headers = [(b"content-type", b"application/octet-stream"), (b"cache-control", b"no-store"),
                       (b"cross-origin-resource-policy", b"same-origin")]
            await send({"type": "http.response.start", "status": 404 if body is None else 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"not served" if body is None else body})

        return serve
