"""The C kernels alone in browser pages: scripts/bench_kernels.mjs's comparison (same wasm builds, same cases from
scripts/kernel_cases.mjs, variants interleaved round by round) run in Chromium and Firefox, where the engines'
code for the same wasm differs (SpiderMonkey ran the strip product 1.5-2x slower than V8).  Wall time per call
(performance.now() of a cross-origin-isolated page: 5-20 us steps); minimums are the guide on a loaded machine.
A tool for kernel work, not part of `make bench`.
    .venv/bin/python scripts/bench_kernels_browser.py [--browsers chromium,firefox] [--rounds N] [--cases a,b]
        [SRC.c ...]
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

from web.browsers import launch_args

ROOT = Path(__file__).resolve().parent.parent

PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import {compare, instantiate} from './kernel_cases.mjs';
const lines = [];
window.benchDone = (async () => {
  const variants = [];
  for (const v of await (await fetch('variants.json')).json()) {
    variants.push({...v, ...(await instantiate(await (await fetch(v.file)).arrayBuffer()))});
  }
  const names = Object.keys(variants[0].cases).filter((c) => !CASES.length ||
      CASES.some((o) => o === c || (o.endsWith(':') && c.startsWith(o))));
  await compare(variants, names, ROUNDS, () => performance.now(), (line) => lines.push(line));
  return lines;
})();
</script>"""


class Isolated(http.server.SimpleHTTPRequestHandler):
    """Cross-origin isolated, so performance.now() has its fine resolution."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript"}

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        super().end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browsers", default="chromium,firefox")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--cases", default="")
    ap.add_argument("sources", nargs="*")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kernels-page-") as tmp:
        cmd = ["node", str(ROOT / "scripts/bench_kernels.mjs"), "--emit", tmp, *args.sources]
        subprocess.run(cmd, check=True, cwd=ROOT)
        shutil.copy(ROOT / "scripts/kernel_cases.mjs", tmp)
        cases = [c for c in args.cases.split(",") if c]
        page = PAGE.replace("CASES", json.dumps(cases)).replace("ROUNDS", str(args.rounds))
        (Path(tmp) / "index.html").write_text(page)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Isolated, directory=tmp))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as pw:
                for name in args.browsers.split(","):
                    browser = getattr(pw, name).launch(**launch_args(name))
                    try:
                        page = browser.new_page()
                        page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
                        print(f"== {name} {browser.version}")
                        for line in page.evaluate("window.benchDone", None):
                            print(line, flush=True)
                    finally:
                        browser.close()
        finally:
            server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
