"""The network bench's shaped link, without a browser: web.static_host over a web.network_profile.Link against a
local HTTP client.  Only lower bounds on time (a shared machine is never too fast, often too slow): a body of N
bytes at R bit/s takes at least N*8/R s, a request at least one round trip and a new connection one more, two
downloads at once share the rate; the CDN's Cache-Control; what a visit counts.  Also the table's targets and make
bench's report of it."""

from __future__ import annotations

import gzip
import http.client
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from bench import cli, results
from bench.perf import network
from bench.perf import run as perf
from bench.report import perf as perf_report
from web.network_profile import PROFILES, Link, NetworkProfile, parse_profile
from web.static_host import IMMUTABLE, REVALIDATE, StaticHost

ASSET = "assets/pyodide.asm.0123456789abcdef.wasm"
ENTRY = "webnn-polyfill.js"


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    """A package folder: a hashed asset of 96 KB (random-looking, so gzip cannot shrink it) and an entry script
    with a .gz sibling."""
    root = tmp_path / "dist"
    (root / "assets").mkdir(parents=True)
    (root / ASSET).write_bytes(bytes((i * 7919 + (i >> 8) * 104729) % 251 for i in range(96 * 1024)))
    script = b"/* the entry script */\n" * 400
    (root / ENTRY).write_bytes(script)
    (root / f"{ENTRY}.gz").write_bytes(gzip.compress(script))
    return root


def _get(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[http.client.HTTPResponse, bytes]:
    """One request on a new connection; (response, body)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("GET", "/" + path, headers=headers or {})
        r = conn.getresponse()
        return r, r.read()
    finally:
        conn.close()


def _timed(fn: object) -> float:
    t0 = time.monotonic()
    fn()  # type: ignore[operator]
    return time.monotonic() - t0


def test_profiles_by_name_and_by_rate_and_rtt() -> None:
    assert PROFILES["loopback"].rate_bps is None and not PROFILES["loopback"].shaped
    assert parse_profile("20mbit-40ms") == NetworkProfile("20mbit-40ms", 20e6, 0.040)
    assert parse_profile("5mbit-100ms").describe() == "5 Mbit/s, 100 ms RTT"
    custom = parse_profile("512kbit-300ms")
    assert custom.rate_bps == 512e3 and custom.rtt_s == pytest.approx(0.3) and custom.shaped
    assert parse_profile("1.5gbit-2.5ms").rate_bps == 1.5e9
    for bad in ("fast", "20mbit", "20mbps-40ms", "0mbit-10ms", "20mbit-40"):
        with pytest.raises(ValueError, match="RATE-RTT"):
            parse_profile(bad)


def test_a_body_of_n_bytes_takes_at_least_n_times_8_over_r(dist: Path) -> None:
    rate = 4e6  # 96 KB in at least 0.197 s
    with StaticHost(dist, link=Link(NetworkProfile("t", rate, 0.0))) as host:
        took = _timed(lambda: _get(host.url, ASSET))
        counts = host.transfer.counts()
    size = (dist / ASSET).stat().st_size
    assert counts["bytes"] == size
    assert took >= size * 8 / rate


def test_a_request_waits_one_round_trip_and_a_new_connection_one_more(dist: Path) -> None:
    rtt = 0.15
    with StaticHost(dist, link=Link(NetworkProfile("t", None, rtt))) as host:
        parts = urllib.parse.urlsplit(host.url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        try:
            def ask() -> None:
                conn.request("GET", "/" + ENTRY)
                response = conn.getresponse()
                response.read()
                assert response.status == 200

            first, second = _timed(ask), _timed(ask)  # keep-alive: the second reuses the connection
        finally:
            conn.close()
        counts = host.transfer.counts()
    assert first >= 2 * rtt  # the handshake, then the request
    assert second >= rtt
    assert counts["connections"] == 1 and counts["requests"] == 2


def test_two_downloads_at_once_share_the_link_across_hosts(dist: Path, tmp_path: Path) -> None:
    """The page's host and the package's on one link: together they cannot beat the link's rate."""
    rate = 4e6
    link = Link(NetworkProfile("t", rate, 0.0))
    with StaticHost(dist, link=link) as cdn, StaticHost(dist, host="localhost", link=link) as site:
        done: list[float] = []

        def fetch(url: str) -> None:
            _get(url, ASSET)
            done.append(time.monotonic())

        t0 = time.monotonic()
        threads = [threading.Thread(target=fetch, args=(url,)) for url in (cdn.url, site.url)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        both = cdn.transfer.counts()["bytes"] + site.transfer.counts()["bytes"]
    assert len(done) == 2 and both == 2 * (dist / ASSET).stat().st_size
    assert max(done) - t0 >= both * 8 / rate


def test_a_cdn_caches_hashed_assets_for_a_year_and_revalidates_the_rest(dist: Path) -> None:
    with StaticHost(dist, precompressed=True, link=Link(PROFILES["loopback"]), cache_headers=True) as host:
        asset, _ = _get(host.url, ASSET)
        assert asset.status == 200 and asset.headers["Cache-Control"] == IMMUTABLE == \
            "public, max-age=31536000, immutable"
        entry, body = _get(host.url, ENTRY, {"Accept-Encoding": "gzip"})
        assert entry.headers["Cache-Control"] == REVALIDATE == "no-cache"
        assert entry.headers["Content-Encoding"] == "gzip" and gzip.decompress(body) == (dist / ENTRY).read_bytes()
        again, rest = _get(host.url, ENTRY, {"Accept-Encoding": "gzip",
                                             "If-Modified-Since": entry.headers["Last-Modified"]})
        assert again.status == 304 and rest == b"" and again.headers["Cache-Control"] == REVALIDATE
        plain, _ = _get(host.url, ENTRY)  # no Accept-Encoding: the file as it is
        assert plain.headers["Content-Encoding"] is None
        counts = host.transfer.counts()
    assert counts == {"bytes": (dist / ASSET).stat().st_size + len(body) + (dist / ENTRY).stat().st_size,
                      "requests": 4, "notModified": 1, "connections": 4, "encodings": ["gzip", "identity"],
                      "largest": counts["largest"]}
    assert next(iter(counts["largest"])) == "/" + ASSET
    with StaticHost(dist) as bare:  # a plain host: no Cache-Control, HTTP/1.0
        r, _ = _get(bare.url, ASSET)
        assert r.headers["Cache-Control"] is None and r.version == 10


def test_counts_start_afresh_per_visit(dist: Path) -> None:
    with StaticHost(dist, link=Link(PROFILES["loopback"])) as host:
        _get(host.url, ENTRY)
        _get(host.url, "missing.js")
        first = host.transfer.counts()
        host.transfer.clear()
        empty = host.transfer.counts()
        _get(host.url, ENTRY)
        second = host.transfer.counts()
    assert first["requests"] == 2 and first["connections"] == 2
    assert empty["requests"] == empty["bytes"] == empty["connections"] == 0
    assert second["requests"] == 1 and second["bytes"] == (dist / ENTRY).stat().st_size


def _visit(ms: float, mb: float, requests: int = 10) -> dict[str, float]:
    return {"ms": ms, "bytes": mb * 1e6, "requests": requests, "notModified": 0, "connections": 3}


def test_the_table_says_which_targets_hold() -> None:
    result = {"dist": {"filesMB": 60.0, "withSiblingsMB": 90.0}, "rounds": 3, "profiles": {
        "20mbit-40ms": {"describe": "20 Mbit/s, 40 ms RTT", "browsers": {
            "chromium": {"cold": [_visit(3900, 4.8), _visit(5000, 4.8), _visit(3000, 4.8)],
                         "warm": [_visit(900, 0.1)] * 3},
            "firefox": {"cold": [_visit(3000, 5.2)], "warm": [_visit(900, 0.0)]},
            "webkit": {"cold": [_visit(3500, 4.0)], "warm": [_visit(3400, 4.0)]}}},
        "5mbit-100ms": {"describe": "5 Mbit/s, 100 ms RTT", "browsers": {
            "webkit": {"cold": [], "warm": [], "error": "WebDriverUnavailable: no Xvfb"}}}}}
    lines = network.summary(result)
    text = "\n".join(lines)
    chromium_cold = next(ln for ln in lines if ln.startswith("chromium  cold"))
    assert "3900" in chromium_cold and "<= 4000" in chromium_cold and chromium_cold.endswith("yes")  # the median
    assert next(ln for ln in lines if ln.startswith("chromium  warm")).endswith("NO (time)")  # 900 > 800
    assert next(ln for ln in lines if ln.startswith("firefox   cold")).endswith("NO (bytes)")  # 5.2 MB > 5
    assert next(ln for ln in lines if ln.startswith("firefox   warm")).endswith("yes")  # 900 <= 1000
    assert next(ln for ln in lines if ln.startswith("webkit    warm")).endswith("NO (time)")
    assert text.count("kept no cache between the two") == 1  # webkit's warm visit downloaded it all again
    assert "webkit    ERROR WebDriverUnavailable: no Xvfb" in text and "median of 3 round(s)" in text
    assert network.target_ms("loopback", "firefox", "cold") == 2000
    assert network.target_ms("5mbit-100ms", "chromium", "cold") is None
    assert network.verdict("5mbit-100ms", "chromium", "warm", _visit(9000, 0)) == "-"


def test_the_mode_documents_itself(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["network", "--help"])
    usage = capsys.readouterr().out
    for knob in ("--profiles", "--browsers", "--rounds", "--dist", "--uncompressed", "20mbit-40ms", "RATE-RTT"):
        assert knob in usage, knob
    with pytest.raises(SystemExit):
        cli.main(["network", "--profiles", "fast"])
    assert "RATE-RTT" in capsys.readouterr().err


def test_an_aborted_download_counts_what_was_sent(dist: Path) -> None:
    """A fetch the page aborts (a timeout) still cost the bytes that crossed the link before it."""
    with StaticHost(dist, link=Link(NetworkProfile("t", 4e6, 0.0))) as host:
        parts = urllib.parse.urlsplit(host.url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        conn.request("GET", "/" + ASSET)
        response = conn.getresponse()
        assert len(response.read(1000)) == 1000
        conn.close()
        (aborted,) = host.transfer.responses
    assert aborted.status == 200 and 1000 <= aborted.size < (dist / ASSET).stat().st_size


def test_make_bench_reports_the_table(tmp_path: Path) -> None:
    """A perf run's network measure line: the same table in the text summary and the report's HTML."""
    run_dir = tmp_path / "20260101-000000-perf"
    results.write_meta(run_dir, {"kind": "perf", "schema": perf.PERF_SCHEMA, "started": "then", "command": "x"})
    results.RunWriter(run_dir).measure("network", "", {
        "dist": {"filesMB": 31.2, "withSiblingsMB": 48.4}, "rounds": 1, "profiles": {
            "20mbit-40ms": {"describe": "20 Mbit/s, 40 ms RTT", "browsers": {
                "chromium": {"cold": [_visit(3700, 4.5)], "warm": [_visit(1200, 0.0)]},
                "webkit": {"cold": [], "warm": [], "error": "WebDriverUnavailable: no Xvfb"}}}}})
    perf_report.write_report(run_dir, {"finished": "now"})
    html = (run_dir / "report.html").read_text()
    for needle in ("<td>20mbit-40ms</td><td>chromium</td><td>cold</td><td>3700</td><td>4000</td><td>4.50</td>",
                   "<td>1200</td><td>800</td><td>0.00</td>", "NO (time)", "no Xvfb", "median of 1 round(s)"):
        assert needle in html, needle
    text = "\n".join(perf_report.summary_lines(*perf_report.load_run(run_dir)))
    assert "-- 20mbit-40ms: 20 Mbit/s, 40 ms RTT" in text and "webkit    ERROR WebDriverUnavailable" in text
