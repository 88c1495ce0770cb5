"""What the fault suite's cases share (tests/browser/test_faults_*.py): the page, the JavaScript that runs a
context through one graph, and the bounds of a case.  Outcome and time of each case are reported by
`python -m bench faults` (bench/faults.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from pages import open_window

from web.fault_injection import Faults


def every_case() -> bool:
    """Whether the whole fault suite runs (`python -m bench faults` sets WEBNN_FAULT_SUITE=all), not the subset
    `make test` runs."""
    return os.environ.get("WEBNN_FAULT_SUITE") == "all"


def selected(params: Sequence[Any], subset: Sequence[str]) -> list[Any]:
    """The `pytest.param`s to run: all of them for the whole suite, else those whose id is in `subset`."""
    return [p for p in params if every_case() or p.id in subset]


WHOLE_SUITE_ONLY = "in the whole fault suite only: python -m bench faults"
# a test the whole suite runs and `make test` does not
whole_suite_only = pytest.mark.skipif(not every_case(), reason=WHOLE_SUITE_ONLY)

# Every wait of a case is bounded in the page by this (a hang becomes a failure with a message, never a stalled
# run): far above what any case needs, about hangs only.
CASE_WAIT_MS = 90_000
# the page's Playwright/WebDriver timeout: a case's boots and waits together
PAGE_TIMEOUT_MS = 300_000

# Helpers defined in the page: `within(promise, ms, what)` settles to {ok} / {error: 'Name: message'}, or
# {error: 'pending ...'} past ms; `runRelu(ctx)` builds and runs relu over four values through the tensor timeline.
HELPERS_JS = r"""
() => {
  window.within = (promise, ms, what) => {
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve({error: `pending: ${what} still unsettled after ${ms / 1000} s`}), ms);
    });
    const settled = Promise.resolve(promise).then((ok) => ({ok}),
      (e) => ({error: `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : e}`}));
    return Promise.race([settled, late]).finally(() => clearTimeout(timer));
  };
  window.runRelu = async (ctx) => {
    const P = webnnPolyfill;
    const b = new P.MLGraphBuilder(ctx);
    const desc = {dataType: 'float32', shape: [4]};
    const g = await b.build({y: b.relu(b.input('x', desc))});
    const x = await ctx.createTensor({...desc, writable: true});
    const y = await ctx.createTensor({...desc, readable: true});
    ctx.writeTensor(x, new Float32Array([1, -2, 3, -4]));
    ctx.dispatch(g, {x}, {y});
    return [...new Float32Array(await ctx.readTensor(y))];
  };
}
"""


@contextmanager
def fault_page(request: Any, browser_name: str, base: str, faults: Faults, **bounds: int) -> Iterator[Any]:
    """A fresh page of the fault suite under a new run prefix (web.fault_injection), the polyfill loaded with
    `bounds` (bootTimeoutMs, fetchStallMs, workers) but not started; the faults are cleared when it closes."""
    query = "&".join(f"{k}={v}" for k, v in bounds.items())
    url = f"{base}{faults.run_prefix()}/test/faults.html" + (f"?{query}" if query else "")
    try:
        with open_window(request, browser_name, url, PAGE_TIMEOUT_MS) as page:
            page.evaluate(HELPERS_JS)
            yield page
    finally:
        faults.clear()
