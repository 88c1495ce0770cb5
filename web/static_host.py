"""A plain static file host, as a CDN or a user's own server would be: files, MIME types, CORS, nothing else.

Used by the cross-origin tests, the example app's test and the transfer measurement (make bench): it
sends `Access-Control-Allow-Origin: *` and no isolation or CORP headers; with `precompressed=True` it answers
`Accept-Encoding: br` / `gzip` with the `.br` / `.gz` sibling a file has (as nginx's `brotli_static` /
`gzip_static` do). It counts the body bytes it sends per path.

    python -m web.static_host DIR [--port 8021] [--precompressed]
"""

from __future__ import annotations

import argparse
import email.utils
import http.server
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIME_TYPES = {
    ".wasm": "application/wasm",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".tgz": "application/gzip",
}
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))


def accepted_encodings(header: str) -> set[str]:
    """The codings an Accept-Encoding header allows (q=0 excluded)."""
    accepted = set()
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        q = params.strip()
        if q.startswith("q=") and float(q[2:] or 0) == 0:
            continue
        if name.strip():
            accepted.add(name.strip().lower())
    return accepted


def precompressed_sibling(path: Path, accept_encoding: str) -> tuple[Path, str] | None:
    """(the .br or .gz sibling of path, its Content-Encoding) the client accepts, br first; None if none."""
    accepted = accepted_encodings(accept_encoding)
    for coding, suffix in ENCODINGS:
        sibling = path.with_name(path.name + suffix)
        if (coding in accepted or "*" in accepted) and sibling.is_file():
            return sibling, coding
    return None


@dataclass
class Transfer:
    """What the host sent: one entry per response (path, Content-Encoding or '', body bytes)."""

    sent: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str, coding: str, size: int) -> None:
        """Record one response."""
        with self.lock:
            self.sent.append((path, coding, size))

    def total(self) -> int:
        """Body bytes sent so far."""
        with self.lock:
            return sum(size for _, _, size in self.sent)

    def clear(self) -> None:
        """Forget what was sent."""
        with self.lock:
            self.sent.clear()


def make_handler(directory: Path, precompressed: bool, transfer: Transfer) -> type[http.server.BaseHTTPRequestHandler]:
    """A request handler class serving directory."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(directory), **kwargs)

        def end_headers(self) -> None:
            self.send_header("Access-Control-Allow-Origin", "*")
            super().end_headers()

        def guess_type(self, path: str | os.PathLike[str]) -> str:
            return MIME_TYPES.get(Path(path).suffix.lower()) or super().guess_type(path)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def send_head(self) -> Any:
            # As python -m http.server and nginx by default: Last-Modified, a 304 for If-Modified-Since, no
            # Cache-Control (browsers cache heuristically); plus the sibling for a negotiated Content-Encoding.
            path = Path(self.translate_path(self.path))
            accept = self.headers.get("Accept-Encoding", "")
            sibling = precompressed_sibling(path, accept) if precompressed and path.is_file() else None
            if sibling is None:
                body = super().send_head()
                if body is not None and self.command == "GET" and hasattr(body, "fileno"):
                    transfer.add(self.path, "", os.fstat(body.fileno()).st_size)
                return body
            served, coding = sibling
            stat = path.stat()
            since = self.headers.get("If-Modified-Since")
            if since:
                try:
                    if int(stat.st_mtime) <= email.utils.parsedate_to_datetime(since).timestamp():
                        self.send_response(304)
                        self.send_header("Vary", "Accept-Encoding")
                        self.end_headers()
                        return None
                except (TypeError, ValueError, IndexError, OverflowError):
                    pass
            body = open(served, "rb")  # closed by the base class's do_GET
            size = os.fstat(body.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("Content-Length", str(size))
            self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
            self.send_header("Vary", "Accept-Encoding")
            self.send_header("Content-Encoding", coding)
            self.end_headers()
            if self.command == "GET":
                transfer.add(self.path, coding, size)
            return body

    return Handler


class StaticHost:
    """A threaded static server on host:port (0 = any free port), started in a daemon thread."""

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0, precompressed: bool = False) -> None:
        self.transfer = Transfer()
        handler = make_handler(Path(directory).resolve(), precompressed, self.transfer)
        self.server = http.server.ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StaticHost:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    """Serve a directory until interrupted."""
    parser = argparse.ArgumentParser(description="static files with CORS (a stand-in for a CDN)")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8021)
    parser.add_argument("--precompressed", action="store_true", help="serve .br/.gz siblings when accepted")
    args = parser.parse_args(argv)
    with StaticHost(args.directory, args.host, args.port, args.precompressed) as host:
        print(f"serving {args.directory} at {host.url}", flush=True)
        try:
            host.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
