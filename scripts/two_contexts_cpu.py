"""Two contexts one after the other and at once (bench_dispatch.py's two_contexts graph), with what each of the
browser's threads did meanwhile: its CPU time and its time runnable but waiting for a core, from Linux's
/proc/<pid>/task/<tid>/schedstat, summed per phase over the rounds.  The wall-clock speed-up depends on what else
runs on the machine; these do not: if both builds' workers spend the same CPU per run in both phases and no other
thread of the browser takes a core during the concurrent phase, the contexts run concurrently and what is left is
the machine's load (the waits).  Linux only.

    python scripts/two_contexts_cpu.py [--browser chromium] [--rounds 9]

Run from a build's root (cwd first on sys.path: its web/ and polyfill/dist are served), e.g. an export of another
commit: `git archive C | tar -x -C DIR`, .venv and node_modules symlinked, `make build snapshot` there, then
`cd DIR && .venv/bin/python /path/to/scripts/two_contexts_cpu.py`.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
from typing import Any

sys.path.insert(0, os.getcwd())

from bench_dispatch import CONTEXT_SETUP_JS  # noqa: E402  (this script's folder is on sys.path)

SETUP_JS = r"""
async ({n}) => {
  const P = webnnPolyfill;
  // as the bench's page: a second context while the first is alive starts the second worker first
  const c1 = await P.ml.createContext(), c2 = await P.ml.createContext();
  c1.destroy(); c2.destroy();
""" + CONTEXT_SETUP_JS + r"""  window.__two = [(await setup()).run, (await setup()).run];
  for (let i = 0; i < 2; i++) await Promise.all(window.__two.map((run) => run(10)));
  return (await P.workerStats()).workers;
}
"""
PHASE_JS = {
    "sequential": "async (k) => { const t = performance.now(); for (const run of __two) await run(k); "
                  "return performance.now() - t; }",
    "concurrent": "async (k) => { const t = performance.now(); await Promise.all(__two.map((run) => run(k))); "
                  "return performance.now() - t; }",
}

Thread = tuple[int, int, str]


def _descendants(root: int) -> list[int]:
    kids: dict[int, list[int]] = collections.defaultdict(list)
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                kids[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(p))
        except OSError:
            pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids[pid]
    return [p for p in out if p != root]


def _kind(pid: int) -> str:
    """A process's --type= (renderer, gpu-process, ...) or its executable's name."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            args = f.read().replace("\0", " ").split()  # Chromium's children rewrite theirs as one string
    except OSError:
        return "?"
    return next((a[7:] for a in args if a.startswith("--type=")), args[0].rsplit("/", 1)[-1] if args else "?")


def _sample(pids: list[int]) -> dict[Thread, tuple[int, int]]:
    """(pid, tid, 'thread name@process kind') -> (ns on a CPU, ns runnable and waiting)."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        kind = _kind(pid)
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
            except OSError:
                continue
            out[(pid, int(tid), f"{name}@{kind}")] = (int(run), int(wait))
    return out


def measure(page: Any, rounds: int, reps: int = 10, n: int = 256) -> dict[str, Any]:
    workers = page.evaluate(SETUP_JS, {"n": n})
    pids = _descendants(os.getpid())
    walls: dict[str, list[float]] = {p: [] for p in PHASE_JS}
    threads: dict[str, dict[Thread, list[int]]] = {p: {} for p in PHASE_JS}
    for r in range(rounds):
        for phase in list(PHASE_JS)[:: 1 if r % 2 == 0 else -1]:
            before = _sample(pids)
            walls[phase].append(page.evaluate(PHASE_JS[phase], reps))
            for key, (run, wait) in _sample(pids).items():
                run0, wait0 = before.get(key, (0, 0))
                acc = threads[phase].setdefault(key, [0, 0])
                acc[0] += run - run0
                acc[1] += wait - wait0
    return {"workers": workers, "walls": walls, "threads": threads}


def report(r: dict[str, Any], top: int = 6) -> list[str]:
    seq, conc = (statistics.median(r["walls"][p]) for p in PHASE_JS)
    lines = [f"speed-up x{seq / conc:.2f} (medians {seq:.1f} / {conc:.1f} ms, {r['workers']} workers), "
             f"loadavg {os.getloadavg()[0]:.1f}"]
    for phase, threads in r["threads"].items():
        busy = sorted(threads.items(), key=lambda kv: -kv[1][0])[:top]
        lines.append(f"  {phase}, {sum(r['walls'][phase]):.0f} ms in all: " + "; ".join(
            f"{name} cpu {run / 1e6:.0f} wait {wait / 1e6:.0f}" for (_, _, name), (run, wait) in busy))
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browser", default="chromium")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from web.bench.session import dev_server
    from web.browsers import launch_args

    with dev_server() as base, sync_playwright() as pw:
        browser = getattr(pw, args.browser).launch(**launch_args(args.browser))
        page = browser.new_page()
        page.set_default_timeout(600_000)
        page.goto(f"{base}/clients/")
        page.wait_for_function("window.clientsReady === true")
        print("\n".join(report(measure(page, args.rounds))), flush=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
