"""Start-up over real network profiles: make dist's package served as a CDN would (web.static_host over a
web.network_profile.Link), one script tag on a page of another origin, a cold visit (new browser, new profile) and a
warm one (the same profile again), each timed from navigation start to a relu graph's result.

    python -m bench network [--profiles loopback,20mbit-40ms,5mbit-100ms] [--browsers chromium,firefox,webkit]
                            [--rounds 3] [--dist dist] [--json out.json]

The page comes from http://localhost:P1 and the package from http://127.0.0.1:P2, two servers on one shared link
(its downlink rate and round-trip time: docs/bench.md says what it models and what not).  The package's hashed
`assets/` are immutable for a year; the entry script `webnn-polyfill.js` and the page are `no-cache`, revalidated on
each visit.  A visit's time is `performance.now()` in the page when the relu's result is there: the page runs the
graph as soon as the polyfill's script has run, so no driver round trip is counted.  Its bytes (response bodies)
and requests are what both servers sent during it.  Chromium gets an on-disk profile, closed after the cold visit
and launched again on it for the warm one (a throwaway context's in-memory cache skips files as large as
pyodide.asm.wasm); Firefox a new browser whose context keeps its caches for a second page; WebKit (WebKitGTK through
WebDriver where Playwright has no WebKit) a new session, whose second window is the warm visit (an ephemeral session:
nothing is kept, and the table says so).  `make bench` runs
it (bench/perf/run.py); medians over --rounds, rounds interleaved over profiles and browsers so a shared machine's
drift spreads over all of them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.perf.settle import settle
from web.browsers import launch_args, playwright_has, webkit_over_webdriver
from web.network_profile import Link, NetworkProfile, parse_profile
from web.settings import REPO_ROOT
from web.static_host import StaticHost

DEFAULT_PROFILES = "loopback,20mbit-40ms,5mbit-100ms"
DEFAULT_BROWSERS = "chromium,firefox,webkit"
VISIT_TIMEOUT_MS = 600_000
TARGET_MB = 5.0  # a first visit's budget: at most 5 MB on the wire (compressed)
# Start-up budgets in ms from navigation start to the graph's result, per profile: cold for every browser, warm
# per browser (Chromium's own, "*" for the others).
TARGET_COLD_MS = {"loopback": 2000.0, "20mbit-40ms": 4000.0}
TARGET_WARM_MS = {"20mbit-40ms": {"chromium": 800.0, "*": 1000.0}}

RUN = """async () => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const desc = {dataType: 'float32', shape: [4]};
  const graph = await b.build({y: b.relu(b.input('x', desc))});
  const [xt, yt] = await Promise.all([ctx.createTensor({...desc, writable: true}),
    ctx.createTensor({...desc, readable: true})]);
  ctx.writeTensor(xt, new Float32Array([-1, 2, -3, 4]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  return Array.from(new Float32Array(await ctx.readTensor(yt)));
}"""
EXPECTED = [0, 2, 0, 4]
# The page starts the graph once the polyfill's (blocking) script has run and keeps the answer in window.visit.
PAGE = """<!doctype html><meta charset="utf-8"><title>a visit</title>
<script src="{assets}webnn-polyfill.js"></script>
<script>
window.visit = ({run})().then(
  (y) => ({{y, ms: performance.now(), bootTimings: globalThis.webnnPolyfill && webnnPolyfill.bootTimings}}),
  (e) => ({{error: String((e && e.stack) || e), ms: performance.now()}}));
</script>
"""


def dist_size(dist: Path) -> dict[str, float]:
    """MB in dist/: the package's files, and with the precompressed siblings."""
    files = [p for p in dist.rglob("*") if p.is_file()]
    plain = sum(p.stat().st_size for p in files if p.suffix not in (".br", ".gz"))
    return {"filesMB": plain / 1e6, "withSiblingsMB": sum(p.stat().st_size for p in files) / 1e6}


class Origins:
    """The page's server (localhost) and the package's (127.0.0.1) on one Link: what a visit downloads."""

    def __init__(self, stack: ExitStack, dist: Path, site: Path, profile: NetworkProfile,
                 precompressed: bool = True) -> None:
        self.profile = profile
        link = Link(profile)
        self.cdn = stack.enter_context(StaticHost(dist, precompressed=precompressed, link=link, cache_headers=True))
        site.mkdir(parents=True, exist_ok=True)
        (site / "index.html").write_text(PAGE.format(assets=self.cdn.url, run=RUN))
        self.site = stack.enter_context(StaticHost(site, host="localhost", link=link, cache_headers=True))
        self.url = f"{self.site.url}index.html"

    def clear(self) -> None:
        """Start counting a new visit."""
        self.cdn.transfer.clear()
        self.site.transfer.clear()

    def counts(self) -> dict[str, Any]:
        """Bytes, requests, 304s and connections of both servers since clear(); the package's encodings."""
        cdn, site = self.cdn.transfer.counts(), self.site.transfer.counts()
        out = {k: cdn[k] + site[k] for k in ("bytes", "requests", "notModified", "connections")}
        out["encodings"], out["largest"] = cdn["encodings"], cdn["largest"]
        return out


def visit(open_page: Callable[[], Any], origins: Origins) -> dict[str, Any]:
    """One visit in a page from open_page() (Playwright's or a WebDriver window), once the machine is quiet; the
    page is closed once it is quiet again (the polyfill's background stores done)."""
    settled = settle()
    page = open_page()
    page.set_default_timeout(VISIT_TIMEOUT_MS)
    origins.clear()
    page.goto(origins.url)
    out = dict(page.evaluate("() => window.visit"))
    settle()
    out.update(origins.counts(), settledMs=settled * 1e3)
    page.close()
    if "error" in out:
        raise RuntimeError(f"the page failed: {out['error'][:1500]}")
    if out.get("y") != EXPECTED:
        raise RuntimeError(f"the graph computed {out.get('y')}, not {EXPECTED}")
    return out


def _playwright_pages(context: Any) -> Callable[[], Any]:
    return lambda: context.new_page()


def cold_and_warm(pw: Any, browser: str, origins: Origins) -> dict[str, Any]:
    """A cold visit on a fresh profile, then a warm one on the same profile (module docstring: how, per browser)."""
    if webkit_over_webdriver(browser, pw):
        from web.webdriver import WebDriverPage, webkitgtk_session

        with webkitgtk_session() as driver:
            def window() -> Any:
                return WebDriverPage.new_window(driver, VISIT_TIMEOUT_MS)
            return {"cold": visit(window, origins), "warm": visit(window, origins)}
    kind = getattr(pw, browser)
    if not playwright_has(kind):
        raise RuntimeError(f"Playwright cannot launch {browser} here")
    if browser == "chromium":
        with tempfile.TemporaryDirectory(prefix="bench-network-") as profile:
            out = {}
            for label in ("cold", "warm"):
                context = kind.launch_persistent_context(profile, **launch_args("chromium"))
                try:
                    out[label] = visit(_playwright_pages(context), origins)
                finally:
                    context.close()
            return out
    owner = kind.launch(**launch_args(browser))
    try:
        context = owner.new_context()
        return {label: visit(_playwright_pages(context), origins) for label in ("cold", "warm")}
    finally:
        owner.close()


@contextmanager
def serving(dist: Path, profiles: Sequence[NetworkProfile], precompressed: bool = True) -> Iterator[list[Origins]]:
    """Two servers (page, package) on one link per profile, for the block's duration."""
    if not (dist / "webnn-polyfill.js").is_file():
        raise SystemExit(f"network: no package in {dist}: run make dist")
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-network-site-") as tmp:
        yield [Origins(stack, dist, Path(tmp) / p.name, p, precompressed) for p in profiles]


def measure(pw: Any, browsers: Sequence[str], dist: Path, profiles: Sequence[NetworkProfile], rounds: int = 1,
            log: Callable[[str], None] = lambda _: None, precompressed: bool = True) -> dict[str, Any]:
    """Per profile x browser, `rounds` pairs of cold and warm visits (lists, in round order) or the error."""
    out: dict[str, Any] = {"dist": dist_size(dist), "rounds": rounds, "precompressed": precompressed,
                           "profiles": {p.name: {"describe": p.describe(), "rateBps": p.rate_bps,
                                                 "rttMs": p.rtt_s * 1e3, "browsers": {}} for p in profiles}}
    with serving(dist, profiles, precompressed) as all_origins:
        for r in range(rounds):
            for origins in all_origins:
                for browser in browsers:
                    entry = out["profiles"][origins.profile.name]["browsers"].setdefault(
                        browser, {"cold": [], "warm": []})
                    if "error" in entry:
                        continue
                    log(f"{origins.profile.name} {browser} round {r + 1}/{rounds}")
                    try:
                        pair = cold_and_warm(pw, browser, origins)
                    except Exception as e:  # noqa: BLE001 - the other browsers and profiles still run
                        entry["error"] = f"{type(e).__name__}: {e}"[:2000]
                        log(f"{origins.profile.name} {browser}: {entry['error'][:300]}")
                        continue
                    for label in ("cold", "warm"):
                        entry[label].append(pair[label])
    return out


def target_ms(profile: str, browser: str, label: str) -> float | None:
    """The start-up budget of a visit, or None where there is none."""
    if label == "cold":
        return TARGET_COLD_MS.get(profile)
    warm = TARGET_WARM_MS.get(profile, {})
    return warm.get(browser, warm.get("*"))


def medians(visits: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The median of each measured number over rounds."""
    keys = ("ms", "bytes", "requests", "notModified", "connections")
    return {k: float(statistics.median(v[k] for v in visits)) for k in keys}


def verdict(profile: str, browser: str, label: str, m: dict[str, float]) -> str:
    """'yes', 'NO (time, bytes)', or '-' where no target applies."""
    checks = []
    budget = target_ms(profile, browser, label)
    if budget is not None:
        checks.append(("time", m["ms"] <= budget))
    if label == "cold":
        checks.append(("bytes", m["bytes"] <= TARGET_MB * 1e6))
    if not checks:
        return "-"
    failed = [name for name, ok in checks if not ok]
    return "yes" if not failed else f"NO ({', '.join(failed)})"


def not_warm(entry: dict[str, Any]) -> bool:
    """Whether the warm visits downloaded at least half of what the cold ones did (no cache survived)."""
    return medians(entry["warm"])["bytes"] >= 0.5 * medians(entry["cold"])["bytes"] > 0


def summary(result: dict[str, Any]) -> list[str]:
    """Report lines: a table per profile, a row per browser and visit with its targets and whether they hold."""
    d = result["dist"]
    lines = [f"\n== start-up over network profiles: make dist's package (dist/ {d['filesMB']:.1f} MB, "
             f"{d['withSiblingsMB']:.1f} MB with .br/.gz) from 127.0.0.1, page on localhost, navigation start to a "
             f"relu's result; median of {result['rounds']} round(s); cold bytes target <= {TARGET_MB:g} MB"
             + ("" if result.get("precompressed", True) else "; files sent uncompressed")]
    for name, p in result["profiles"].items():
        lines.append(f"-- {name}: {p['describe']}")
        lines.append(f"{'browser':9} {'visit':5} {'ms':>7} {'target':>9} {'MB':>7} {'requests':>8} {'304':>4} "
                     f"{'conns':>5}  holds")
        for browser, entry in p["browsers"].items():
            if "error" in entry and not entry["cold"]:
                lines.append(f"{browser:9} ERROR {entry['error'][:300]}")
                continue
            for label in ("cold", "warm"):
                if not entry[label]:
                    continue
                m = medians(entry[label])
                budget = target_ms(name, browser, label)
                lines.append(f"{browser:9} {label:5} {m['ms']:7.0f} "
                             f"{'<= ' + format(budget, '.0f') if budget else '':>9} {m['bytes'] / 1e6:7.2f} "
                             f"{m['requests']:8.0f} {m['notModified']:4.0f} {m['connections']:5.0f}  "
                             f"{verdict(name, browser, label, m)}")
            if entry["cold"] and entry["warm"] and not_warm(entry):
                lines.append(f"{browser:9} (its warm visit downloaded as much as its cold one: this browser kept no "
                             "cache between the two, as WebKitGTK's ephemeral WebDriver session does)")
            if "error" in entry:
                lines.append(f"{browser:9} ERROR in a later round: {entry['error'][:300]}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench network: cold and warm start-up over network profiles, with the targets."""
    ap = argparse.ArgumentParser(prog="python -m bench network", description=__doc__.split("\n\n")[0],
                                 epilog="profiles: loopback (no shaping), 20mbit-40ms, 5mbit-100ms, or RATE-RTT with "
                                 "RATE in kbit/mbit/gbit per second and RTT in ms, e.g. 50mbit-20ms",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default=DEFAULT_PROFILES, help=f"comma-separated (default {DEFAULT_PROFILES})")
    ap.add_argument("--browsers", default=DEFAULT_BROWSERS,
                    help=f"comma-separated: chromium, firefox, webkit (default {DEFAULT_BROWSERS}; webkit is "
                    "WebKitGTK through WebDriver where Playwright has no WebKit)")
    ap.add_argument("--rounds", type=int, default=3, help="cold + warm pairs per profile and browser (median)")
    ap.add_argument("--dist", type=Path, default=REPO_ROOT / "dist", help="make dist's package (default dist/)")
    ap.add_argument("--uncompressed", action="store_true",
                    help="send the files as they are, not their precompressed .br/.gz siblings")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)
    try:
        profiles = [parse_profile(p) for p in args.profiles.split(",") if p]
    except ValueError as e:
        ap.error(str(e))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        result = measure(pw, [b for b in args.browsers.split(",") if b], args.dist, profiles, args.rounds,
                         log=lambda m: print(f"network: {m}", file=sys.stderr, flush=True),
                         precompressed=not args.uncompressed)
    print("\n".join(summary(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0
