"""A network profile (downlink rate + round-trip time) and the one shared link that web.static_host's servers
send through, so a page and its package load as over a user's connection.

The model: every connection of every host on a Link shares one token bucket for the response body bytes (no burst:
the bucket never holds more than it owes, so N bytes take at least N*8/R seconds, and two downloads at once each get
about half the rate); a new connection waits one RTT (its TCP handshake) before its first request is read, and every
request waits one RTT before the first byte of its response.  Not modelled: packet loss, TCP slow start and
congestion windows, TLS handshakes, the uplink, header bytes, HTTP/2 multiplexing (connections are HTTP/1.1
keep-alive, as many as the browser opens).

    parse_profile("20mbit-40ms"), parse_profile("loopback"), PROFILES
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

# 16 KB: a TLS record's size, about what a CDN writes at a time; 26 ms of link time at 5 Mbit/s, so sleeps stay
# far above the scheduler's granularity
CHUNK_BYTES = 16 * 1024
UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


@dataclass(frozen=True)
class NetworkProfile:
    """A downlink rate in bit/s (None: unlimited) and a round-trip time in seconds."""

    name: str
    rate_bps: float | None
    rtt_s: float

    @property
    def shaped(self) -> bool:
        """Whether the link delays anything at all."""
        return self.rate_bps is not None or self.rtt_s > 0

    def describe(self) -> str:
        """'20 Mbit/s, 40 ms RTT' or 'loopback (no shaping)'."""
        if not self.shaped:
            return "loopback (no shaping)"
        rate = "unlimited" if self.rate_bps is None else f"{self.rate_bps / 1e6:g} Mbit/s"
        return f"{rate}, {self.rtt_s * 1e3:g} ms RTT"


PROFILES = {
    "loopback": NetworkProfile("loopback", None, 0.0),
    "20mbit-40ms": NetworkProfile("20mbit-40ms", 20e6, 0.040),  # a good home or office line
    "5mbit-100ms": NetworkProfile("5mbit-100ms", 5e6, 0.100),  # a weak mobile connection
}
_SYNTAX = re.compile(r"^(?P<rate>\d+(?:\.\d+)?)(?P<unit>kbit|mbit|gbit)-(?P<rtt>\d+(?:\.\d+)?)ms$")


def parse_profile(text: str) -> NetworkProfile:
    """A named profile of PROFILES, or RATE-RTT such as '20mbit-40ms', '512kbit-300ms'; ValueError otherwise."""
    text = text.strip().lower()
    if text in PROFILES:
        return PROFILES[text]
    m = _SYNTAX.match(text)
    if not m or float(m["rate"]) <= 0:
        raise ValueError(f"network profile {text!r}: expected one of {', '.join(PROFILES)} or RATE-RTT such as "
                         "20mbit-40ms (rate in kbit, mbit or gbit per second, round trip in ms)")
    return NetworkProfile(text, float(m["rate"]) * UNITS[m["unit"]], float(m["rtt"]) / 1e3)


@dataclass
class Link:
    """The shared downlink of a profile: body bytes draw on one token bucket, waits are round trips."""

    profile: NetworkProfile
    _tokens: float = 0.0  # bytes the link may still send now; never above 0 (no burst), below 0 while it owes
    _stamp: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def chunk_bytes(self) -> int:
        """How many bytes a sender writes between two draws on the bucket."""
        return CHUNK_BYTES if self.profile.rate_bps is not None else 1 << 20

    def transmit(self, nbytes: int) -> None:
        """Block until `nbytes` have crossed the link (the caller writes them after this returns)."""
        rate = self.profile.rate_bps
        if rate is None or nbytes <= 0:
            return
        per_s = rate / 8
        with self._lock:
            now = time.monotonic()
            self._tokens = min(0.0, self._tokens + (now - self._stamp) * per_s) - nbytes
            self._stamp = now
            wait = -self._tokens / per_s
        time.sleep(wait)

    def round_trip(self) -> None:
        """One RTT: a handshake, or a request's way out and its response's first byte back."""
        if self.profile.rtt_s > 0:
            time.sleep(self.profile.rtt_s)
