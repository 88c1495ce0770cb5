"""Fault suite: many workers start the polyfill at once.  Four dedicated workers of one page each load the polyfill
and run graphs, round after round, each round a fresh page (first visits at once).  In Firefox a worker's thread
could block for good inside `new Worker()` when several started their engine's nested worker at the same moment
(about one round in five on a loaded 2-core machine): there a worker's engine runs in its own thread
(runtime/spawn.js engineThread).
Every worker must report, with the right values, within the round's bound.

`make test` runs ROUNDS_SUBSET rounds; `python -m bench faults` (WEBNN_FAULT_SUITE=all) runs ROUNDS, enough to have
caught the blocked thread with a probability above 98 %.
"""

from __future__ import annotations

from collections import Counter

import pytest
from fault_cases import WHOLE_SUITE_ONLY, every_case
from pages import open_window

pytestmark = [pytest.mark.browser, pytest.mark.fault]

WORKERS = 4
ROUNDS = 20
ROUNDS_SUBSET = {"firefox": 1}  # elsewhere none: the whole suite runs them
# a round boots 4 x 2 Pyodides at once: 10-40 s here; past this a worker counts as hung (about hangs only)
ROUND_DEADLINE_S = 240
PAGE_TIMEOUT_MS = (ROUND_DEADLINE_S + 60) * 1000

ROUND_JS = """async ([n, seconds]) => Promise.all([...Array(n).keys()].map((i) =>
  withDeadline(runWorker('classic'), 'classic ' + i, seconds)))"""


def _rounds(browser_name: str) -> int:
    return ROUNDS if every_case() else ROUNDS_SUBSET.get(browser_name, 0)


# each round is bounded in the page (ROUND_DEADLINE_S); the run's own bound (pyproject's 900 s per test) would end
# the whole suite's 20 rounds in WebKit, where a round takes about 35 s here
@pytest.mark.timeout(ROUNDS * (ROUND_DEADLINE_S + 60))
def test_workers_starting_the_polyfill_at_once_all_finish(request: pytest.FixtureRequest, browser_name: str,
                                                          dev_server: str) -> None:
    failures = []
    rounds = _rounds(browser_name)
    if not rounds:
        pytest.skip(WHOLE_SUITE_ONLY)
    for r in range(rounds):
        with open_window(request, browser_name, f"{dev_server}/test/worker.html", PAGE_TIMEOUT_MS) as page:
            reports = page.evaluate(ROUND_JS, [WORKERS, ROUND_DEADLINE_S])
            failures += [(r, rep) for rep in reports if rep.get("error") or rep.get("fib40") != 102334155]
    per_round = dict(Counter(r for r, _ in failures))
    assert not failures, (f"{len(failures)} of {WORKERS * rounds} workers failed (round: failed {per_round}): "
                          f"{failures[:3]}")
