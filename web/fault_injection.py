"""Network faults on the dev server, for the fault suite (tests/browser/test_faults_*.py, `python -m bench faults`):
a 404 for a named file, a download that stalls after its first bytes, a connection dropped mid-body; and a script
served with the test's own lines in front of it (`prefix`: storage that fails as a browser's does, in the page and
in the worker alike).  Real HTTP from a real server, so every browser sees the same faults whatever drives it.

Every run of a case gets a path prefix of its own (`/run-<n>/...` is served as `/...`): its page, the polyfill,
Pyodide and the manifest are new URLs to the browser, so no cache (HTTP, Cache Storage, a shared WebDriver profile)
answers in place of the server.  The tests and the bench wrap the app in it (`dev_server(wrap=faults.wrap)`); the
served app itself never holds it.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from dataclasses import dataclass, field
from typing import Any

KINDS = ("404", "stall", "drop", "prefix")
# bytes of the body sent before a stall or a drop: a download under way, not a refused one
HEAD_BYTES = 4096
# a stalled response holds its connection at most this long (the polyfill's bound under test is far shorter); the
# server then drops it, so no test leaves a connection open for the rest of the session
STALL_LIMIT_S = 120.0
_RUN = re.compile(r"^/run-\d+(/.*)$")


class DroppedConnection(Exception):
    """Raised inside the server to cut a response mid-body (the browser sees a network error)."""


@dataclass
class Fault:
    """A fault for every request whose path contains `match` (the first `times` of them only, when given); `hits`
    counts the requests it met; `text`: what a `prefix` fault puts in front of the body."""

    match: str
    kind: str
    times: int | None = None
    hits: int = 0
    text: str = ""


@dataclass
class Faults:
    """The faults in force (none by default) and the ASGI middleware (`wrap`) that injects them."""

    rules: list[Fault] = field(default_factory=list)
    _runs: Any = field(default_factory=lambda: itertools.count(1))
    # (loop, event) of the stalled responses: set by clear(), from the test's thread
    _released: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run_prefix(self) -> str:
        """A fresh `/run-<n>` prefix for one run of a case (see the module's docstring)."""
        return f"/run-{next(self._runs)}"

    def inject(self, match: str, kind: str, times: int | None = None, text: str = "") -> Fault:
        """From now on, answer requests whose path contains `match` with fault `kind` (one of KINDS): every one, or
        the first `times`; `text` for a `prefix` fault."""
        if kind not in KINDS:
            raise ValueError(f"fault kind {kind!r}: expected one of {', '.join(KINDS)}")
        fault = Fault(match, kind, times, text=text)
        self.rules.append(fault)
        return fault

    def clear(self) -> None:
        """No faults from now on; stalled responses end (dropped)."""
        self.rules.clear()
        with self._lock:
            released, self._released = self._released, None
        if released is not None:
            loop, event = released
            loop.call_soon_threadsafe(event.set)

    def _fault_for(self, path: str) -> Fault | None:
        return next((f for f in self.rules if f.match in path and (f.times is None or f.hits < f.times)), None)

    def wrap(self, app: Any) -> Any:
        """The ASGI middleware: strips a run prefix, then serves the request or its fault."""

        async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            m = _RUN.match(scope["path"])
            if m:
                scope = {**scope, "path": m.group(1), "raw_path": m.group(1).encode()}
            fault = self._fault_for(scope["path"])
            if fault is None:
                await app(scope, receive, send)
                return
            fault.hits += 1
            if fault.kind == "404":
                headers = [(b"content-type", b"text/plain"), (b"cache-control", b"no-store")]
                await send({"type": "http.response.start", "status": 404, "headers": headers})
                await send({"type": "http.response.body", "body": b"not found (injected fault)"})
                return
            if fault.kind == "prefix":
                # the body uncompressed, so that the text goes in front of the script's own
                plain = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"]
                await app({**scope, "headers": plain}, receive, self._prefixed(send, fault.text.encode()))
                return
            await app(scope, receive, self._cut(send, fault.kind))

        return serve

    @staticmethod
    def _prefixed(send: Any, text: bytes) -> Any:
        """A `send` that holds the response until its body is whole, then sends it with `text` in front (its
        length and no validators: another body than the file's)."""
        start: dict[str, Any] = {}
        body = bytearray()

        async def prefixed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            out = text + bytes(body)
            drop = (b"content-length", b"etag", b"last-modified", b"cache-control")
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in drop]
            await send({**start, "headers": [*headers, (b"content-length", str(len(out)).encode()),
                                             (b"cache-control", b"no-store")]})
            await send({"type": "http.response.body", "body": out})

        return prefixed

    def _cut(self, send: Any, kind: str) -> Any:
        """A `send` that passes the response's start and the first bytes of its body (HEAD_BYTES, at most half of
        the first part), then stalls or drops: the response never completes."""
        cut_off = False

        async def cut(message: dict[str, Any]) -> None:
            nonlocal cut_off
            if message["type"] != "http.response.body":
                await send(message)
                return
            if cut_off:
                return
            cut_off = True
            body = message.get("body", b"")
            await send({"type": "http.response.body", "body": body[:min(HEAD_BYTES, len(body) // 2)],
                        "more_body": True})
            if kind == "stall":
                await self._stall()
            # returning with the response unfinished makes the server close the connection mid-body
            raise DroppedConnection("injected fault: the connection is dropped mid-body")

        return cut

    async def _stall(self) -> None:
        """Wait until clear() or STALL_LIMIT_S."""
        with self._lock:
            if self._released is None:
                self._released = (asyncio.get_running_loop(), asyncio.Event())
            loop, event = self._released
        try:
            await asyncio.wait_for(event.wait(), STALL_LIMIT_S)
        except TimeoutError:
            pass
