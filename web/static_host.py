"""A plain static file host, as a CDN or a user's own server would be: files, MIME types, CORS, nothing else.

Used by the cross-origin tests, the example app's test and the network bench (make bench): it sends
`Access-Control-Allow-Origin: *` and no isolation or CORP headers; with `precompressed=True` it answers
`Accept-Encoding: br` / `gzip` with the `.br` / `.gz` sibling a file has (as nginx's `brotli_static` /
`gzip_static` do). It counts connections, responses and the body bytes it sends per path (`Transfer`).

As a CDN (`link=`, `cache_headers=True`): HTTP/1.1 keep-alive connections whose handshakes, requests and body
bytes go through a shared web.network_profile.Link (a downlink rate and a round-trip time), and Cache-Control
headers: `assets/` holds content-hashed names, cached for a year as immutable; every other file (the entry script
`webnn-polyfill.js`, a page) is `no-cache`, revalidated on each visit (one round trip and a 304 when unchanged),
so a new release reaches a returning user at once.

    python -m web.static_host DIR [--port 8021] [--precompressed] [--network 20mbit-40ms]
"""

from __future__ import annotations

import argparse
import email.utils
import http.server
import os
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from web.network_profile import Link, parse_profile

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
class Response:
    """One response: its path, status, Content-Encoding ('' for none) and body bytes sent so far (counted before
    they are written, so a client that has them finds them counted)."""

    path: str
    status: int
    coding: str
    size: int


@dataclass
class Transfer:
    """What the host sent: one Response per request answered, and how many connections it accepted."""

    responses: list[Response] = field(default_factory=list)
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, response: Response) -> None:
        """Record one response."""
        with self.lock:
            self.responses.append(response)

    def connected(self) -> None:
        """Count one accepted connection."""
        with self.lock:
            self.connections += 1

    def total(self) -> int:
        """Body bytes sent so far."""
        with self.lock:
            return sum(r.size for r in self.responses)

    def counts(self) -> dict[str, Any]:
        """bytes, requests, notModified (304s), connections, encodings and the largest paths, so far."""
        with self.lock:
            responses, connections = list(self.responses), self.connections
        by_path: dict[str, int] = {}
        for r in responses:
            by_path[r.path] = by_path.get(r.path, 0) + r.size
        return {"bytes": sum(r.size for r in responses), "requests": len(responses),
                "notModified": sum(r.status == 304 for r in responses), "connections": connections,
                "encodings": sorted({r.coding or "identity" for r in responses if r.status == 200}),
                "largest": dict(sorted(by_path.items(), key=lambda kv: -kv[1])[:6])}

    def clear(self) -> None:
        """Forget what was sent."""
        with self.lock:
            self.responses.clear()
            self.connections = 0


IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


def cache_control(url_path: str) -> str:
    """A CDN's Cache-Control for the package: content-hashed assets/ for a year, anything else revalidated."""
    path = urllib.parse.urlsplit(url_path).path
    return IMMUTABLE if path.startswith("/assets/") else REVALIDATE


def make_handler(directory: Path, precompressed: bool, transfer: Transfer, link: Link | None = None,
                 cache_headers: bool = False) -> type[http.server.BaseHTTPRequestHandler]:
    """A request handler class serving directory, through `link` when given."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        # keep-alive through a link: a connection's handshake is paid once, as browsers reuse connections
        protocol_version = "HTTP/1.1" if link is not None else "HTTP/1.0"
        status = 0
        coding = ""
        record: Response | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(directory), **kwargs)

        def setup(self) -> None:
            super().setup()
            transfer.connected()
            if link is not None:
                link.round_trip()  # the TCP handshake

        def send_response(self, code: int, message: str | None = None) -> None:
            self.status = int(code)
            super().send_response(code, message)

        def send_header(self, keyword: str, value: str) -> None:
            if keyword.lower() == "content-encoding":
                self.coding = value
            super().send_header(keyword, value)

        def end_headers(self) -> None:
            self.send_header("Access-Control-Allow-Origin", "*")
            if cache_headers and self.status in (200, 304):
                self.send_header("Cache-Control", cache_control(self.path))
            self.record = Response(self.path, self.status, self.coding, 0)
            transfer.add(self.record)
            super().end_headers()

        def guess_type(self, path: str | os.PathLike[str]) -> str:
            return MIME_TYPES.get(Path(path).suffix.lower()) or super().guess_type(path)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def _answer(self, with_body: bool) -> None:
            self.status, self.coding, self.record = 0, "", None
            if link is not None:
                link.round_trip()  # the request's way out and its response's first byte back
            try:
                body = self.send_head()
                if body is not None:
                    try:
                        if with_body:
                            self.copyfile(body, self.wfile)
                    finally:
                        body.close()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (an aborted fetch): what it got still counts

        def copyfile(self, source: Any, outputfile: Any) -> None:
            step = link.chunk_bytes if link is not None else 1 << 20
            record = self.record
            assert record is not None  # end_headers() ran
            while chunk := source.read(step):
                if link is not None:
                    link.transmit(len(chunk))
                record.size += len(chunk)
                try:
                    outputfile.write(chunk)
                except OSError:
                    record.size -= len(chunk)
                    raise

        def send_head(self) -> Any:
            # As python -m http.server and nginx by default: Last-Modified, a 304 for If-Modified-Since, no
            # Cache-Control unless cache_headers; plus the sibling for a negotiated Content-Encoding.
            path = Path(self.translate_path(self.path))
            accept = self.headers.get("Accept-Encoding", "")
            sibling = precompressed_sibling(path, accept) if precompressed and path.is_file() else None
            if sibling is None:
                return super().send_head()
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
            body = open(served, "rb")  # closed by _answer
            size = os.fstat(body.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("Content-Length", str(size))
            self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
            self.send_header("Vary", "Accept-Encoding")
            self.send_header("Content-Encoding", coding)
            self.end_headers()
            return body

    return Handler


class StaticHost:
    """A threaded static server on host:port (0 = any free port), started in a daemon thread; through `link` (a
    web.network_profile.Link, shared with other hosts to share the downlink) and with a CDN's Cache-Control when
    asked."""

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0, precompressed: bool = False,
                 link: Link | None = None, cache_headers: bool = False) -> None:
        self.transfer = Transfer()
        handler = make_handler(Path(directory).resolve(), precompressed, self.transfer, link, cache_headers)
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
    parser.add_argument("--network", type=parse_profile,
                        help="serve as a CDN over a network profile: loopback, 20mbit-40ms, 5mbit-100ms or RATE-RTT "
                        "(web/network_profile.py), with Cache-Control (immutable assets/, the rest no-cache)")
    args = parser.parse_args(argv)
    link = Link(args.network) if args.network else None
    with StaticHost(args.directory, args.host, args.port, args.precompressed, link, link is not None) as host:
        shaping = f" over {args.network.describe()}" if args.network else ""
        print(f"serving {args.directory} at {host.url}{shaping}", flush=True)
        try:
            host.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
