"""What a first visit downloads: make dist's package on a static host, one script tag on a page of another
origin, a fresh browser profile, up to a graph's result; the host counts the body bytes it sends.

Measured twice per browser: from a host that sends the precompressed `.br` / `.gz` siblings when the browser
accepts them (nginx `brotli_static`, a CDN), and from one that sends the files as they are. `make bench` runs it
(bench/perf/run.py); alone: `python -m bench transfer [--browsers chromium,firefox] [--dist dist]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from web.browsers import launch_args
from web.settings import REPO_ROOT
from web.static_host import StaticHost

TARGET_MB = 8.0  # the first visit's budget: at most 8 MB compressed
PAGE = """<!doctype html><meta charset="utf-8"><title>first visit</title>
<script src="{assets}webnn-polyfill.js"></script>
"""
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


def dist_size(dist: Path) -> dict[str, float]:
    """MB in dist/: the package's files, and with the precompressed siblings."""
    files = [p for p in dist.rglob("*") if p.is_file()]
    plain = sum(p.stat().st_size for p in files if p.suffix not in (".br", ".gz"))
    return {"filesMB": plain / 1e6, "withSiblingsMB": sum(p.stat().st_size for p in files) / 1e6}


def first_visit(pw: Any, browser_name: str, dist: Path, precompressed: bool) -> dict[str, Any]:
    """One cold visit (new browser, new profile) from a page on localhost to the package on 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        with StaticHost(dist, precompressed=precompressed) as cdn:
            (site / "index.html").write_text(PAGE.format(assets=cdn.url))
            with StaticHost(site, host="localhost") as page_host:
                # Chromium gets an on-disk profile: a throwaway context's in-memory cache skips files as large as
                # pyodide.asm.wasm, and the worker's Pyodide would download it a second time (bench/perf/run.py)
                if browser_name == "chromium":
                    owner = pw.chromium.launch_persistent_context(str(Path(tmp) / "profile"),
                                                                  **launch_args("chromium"))
                    context = owner
                else:
                    owner = getattr(pw, browser_name).launch(**launch_args(browser_name))
                    context = owner.new_context()
                try:
                    page = context.new_page()
                    page.set_default_timeout(300_000)
                    page.goto(f"{page_host.url}index.html")
                    y = page.evaluate(RUN)
                finally:
                    owner.close()
            sent = list(cdn.transfer.sent)
    if y != [0, 2, 0, 4]:
        raise RuntimeError(f"{browser_name}: the graph computed {y}")
    by_path: dict[str, int] = {}
    for path, _coding, size in sent:
        by_path[path] = by_path.get(path, 0) + size
    return {"bytes": sum(size for _, _, size in sent), "requests": len(sent),
            "encodings": sorted({coding or "identity" for _, coding, _ in sent}),
            "largest": dict(sorted(by_path.items(), key=lambda kv: -kv[1])[:6])}


def measure(pw: Any, browsers: list[str], dist: Path) -> dict[str, Any]:
    """Per browser: the first visit's transfer with and without the precompressed siblings."""
    if not (dist / "webnn-polyfill.js").is_file():
        raise SystemExit(f"transfer: no package in {dist}: run make dist")
    out: dict[str, Any] = {"dist": dist_size(dist), "browsers": {}}
    for name in browsers:
        out["browsers"][name] = {label: first_visit(pw, name, dist, pre)
                                 for label, pre in (("compressed", True), ("uncompressed", False))}
    return out


def summary(result: dict[str, Any]) -> list[str]:
    """Report lines."""
    d = result["dist"]
    lines = [f"\n== first visit, make dist's package from a static host on another origin (target <= {TARGET_MB} MB "
             f"compressed); dist/ {d['filesMB']:.1f} MB ({d['withSiblingsMB']:.1f} MB with .br/.gz)"]
    for name, r in result["browsers"].items():
        for label in ("compressed", "uncompressed"):
            x = r[label]
            lines.append(f"{name:9} {label:12} {x['bytes'] / 1e6:6.2f} MB in {x['requests']:2d} requests "
                         f"({', '.join(x['encodings'])})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench transfer: the first visit's bytes alone."""
    ap = argparse.ArgumentParser(prog="python -m bench transfer", description=__doc__.splitlines()[0])
    ap.add_argument("--browsers", default="chromium,firefox")
    ap.add_argument("--dist", type=Path, default=REPO_ROOT / "dist")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        result = measure(pw, [b for b in args.browsers.split(",") if b], args.dist)
    print("\n".join(summary(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0

