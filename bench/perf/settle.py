"""A quiet machine before a timed visit: start-up figures measure the page, not the browser's own start."""

from __future__ import annotations

import time

# A freshly launched Chromium 156 keeps about 1.7 of the 2 cores busy for its first 0.6-0.7 s (a renderer loading
# its omnibox popup, chrome://omnibox-popup.top-chrome, among others).  A page that starts then competes with the
# browser's own start-up, which a visit to a browser already running does not: a warm start measured 1,167 ms
# (median) right after the launch and 889 after a 3 s wait (4 interleaved rounds).
QUIET_BUSY = 0.15  # fraction of all cores; an idle browser and this machine's background stay under 0.05
QUIET_WINDOWS = 2  # consecutive 100 ms windows under QUIET_BUSY
SETTLE_MAX_S = 10.0  # a machine that never goes quiet (another job's load) costs each visit this much at most


def _cpu_jiffies() -> tuple[int, int] | None:
    """(all, idle) CPU time so far from /proc/stat; None where there is none (not Linux)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(v), v[3] + v[4]  # idle + iowait


def settle(max_s: float = SETTLE_MAX_S) -> float:
    """Wait until the machine's CPUs are quiet (QUIET_WINDOWS windows of 100 ms under QUIET_BUSY), at most max_s;
    the seconds waited.  Start-up benches call it after launching a browser and before each visit, so a visit
    measures the page and not the browser's own start.  Without /proc/stat: a fixed 2 s."""
    t0 = time.perf_counter()
    last = _cpu_jiffies()
    if last is None:
        time.sleep(min(2.0, max_s))
        return time.perf_counter() - t0
    quiet = 0
    while quiet < QUIET_WINDOWS and time.perf_counter() - t0 < max_s:
        time.sleep(0.1)
        now = _cpu_jiffies()
        assert now is not None
        total, idle = now[0] - last[0], now[1] - last[1]
        last = now
        quiet = quiet + 1 if total > 0 and 1 - idle / total < QUIET_BUSY else 0
    return time.perf_counter() - t0
