"""Fault suite: the execution engine dies.  A worker that ends (terminated from outside, closed, out of memory)
sends nothing and fires no `error` event: the polyfill notices it by the Web Lock the worker held
(polyfill/src/runtime/lifeline.js).  Then every pending call of its contexts rejects, `lost` resolves with a
message, calls after it reject, a context on another worker keeps working, a new context works, and the page sees
no unhandled rejection.  https://www.w3.org/TR/webnn/#dom-mlcontext-lost
"""

from __future__ import annotations

from typing import Any

import pytest
from fault_cases import CASE_WAIT_MS, fault_page, whole_suite_only

from web.fault_injection import Faults

pytestmark = [pytest.mark.browser, pytest.mark.fault]

# Two contexts on two workers (the second context gets a worker of its own), a read left pending on the first;
# then `kill` ends the first worker from outside.  Returns what each call came to.
SETUP_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const other = await P.ml.createContext();
  await runRelu(ctx);
  const desc = {dataType: 'float32', shape: [4], readable: true, writable: true};
  const t = await ctx.createTensor(desc);
  window.dying = {ctx, other, desc, t, workers: window.faultWorkers.length};
  return {workers: window.faultWorkers.length};
}
"""

OUTCOMES_JS = r"""
async ({wait, pendingRead}) => {
  const P = webnnPolyfill;
  const {ctx, other, desc, t} = window.dying;
  const t0 = performance.now();
  // a read issued before the worker was noticed gone (pending, or sent to a worker already dead)
  const read = within(pendingRead ? window.dying.read : ctx.readTensor(t), wait, 'readTensor');
  const lost = await within(ctx.lost.then((info) => info.message), wait, 'context.lost');
  const out = {lost, read: await read, lostMs: Math.round(performance.now() - t0)};
  out.createTensor = await within(ctx.createTensor(desc), wait, 'createTensor after the loss');
  out.build = await within((async () => {
    const b = new P.MLGraphBuilder(ctx);
    return b.build({y: b.relu(b.input('x', {dataType: 'float32', shape: [4]}))});
  })(), wait, 'build after the loss');
  out.other = await within(runRelu(other), wait, 'the other context');
  out.fresh = await within(P.ml.createContext().then(runRelu), wait, 'a new context');
  // (a rejection nobody handles is reported after the microtasks that made it)
  await new Promise((resolve) => setTimeout(resolve, 100));
  out.unhandled = window.unhandled;
  return out;
}
"""


def _check(out: dict[str, Any]) -> None:
    assert "ok" in out["lost"] and "worker" in out["lost"]["ok"], out
    assert "error" in out["read"] and not out["read"]["error"].startswith("pending"), out
    for call in ("createTensor", "build"):
        assert out[call].get("error", "").startswith("InvalidStateError"), (call, out)
    assert out["other"] == {"ok": [1, 0, 3, 0]}, out
    assert out["fresh"] == {"ok": [1, 0, 3, 0]}, out
    assert out["unhandled"] == [], out


def test_a_terminated_worker_rejects_its_pending_read_and_loses_its_context(
        request: pytest.FixtureRequest, browser_name: str, fault_server: tuple[str, Faults]) -> None:
    base, faults = fault_server
    with fault_page(request, browser_name, base, faults, workers=2) as page:
        assert page.evaluate(SETUP_JS)["workers"] == 2
        # the read leaves in the same task as the worker's end: it can never be answered
        page.evaluate("() => { const d = window.dying; d.read = d.ctx.readTensor(d.t); d.read.catch(() => {});"
                      " window.faultWorkers[0].terminate(); }")
        _check(page.evaluate(OUTCOMES_JS, {"wait": CASE_WAIT_MS, "pendingRead": True}))


# In front of the execution worker's script (the fault server's `prefix`): on the page's word the worker closes
# itself, as a worker's own code may; the word goes no further than this listener (registered before the worker's)
CLOSE_ON_WORD = """
self.addEventListener('message', (e) => {
  if (e.data !== 'fault: close yourself') return;
  e.stopImmediatePropagation();
  setTimeout(() => self.close(), 0);
});
"""


@whole_suite_only  # (make test ends a worker through the terminated case above)
def test_a_worker_that_closes_itself_loses_its_context(
        request: pytest.FixtureRequest, browser_name: str, fault_server: tuple[str, Faults]) -> None:
    base, faults = fault_server
    served = faults.inject("/polyfill/webnn-worker.js", "prefix", text=CLOSE_ON_WORD)
    with fault_page(request, browser_name, base, faults, workers=2) as page:
        assert page.evaluate(SETUP_JS)["workers"] == 2
        assert served.hits, served  # the workers run the listener
        page.evaluate("() => { window.faultWorkers[0].postMessage('fault: close yourself'); }")
        _check(page.evaluate(OUTCOMES_JS, {"wait": CASE_WAIT_MS, "pendingRead": False}))


# In front of the execution worker's script: on the page's word, the typed-array view the worker's memory figures
# are read through (engine/glue.js memoryStats: mallinfo's ten fields) throws, as a script error there would
BREAK_STATS_ON_WORD = """
self.addEventListener('message', (e) => {
  if (e.data !== 'fault: break your memory figures') return;
  e.stopImmediatePropagation();
  const View = self.Uint32Array;
  self.Uint32Array = class extends View {
    constructor(...args) {
      if (args.length === 3 && args[2] === 10) throw new RangeError('the view is broken on purpose');
      super(...args);
    }
  };
});
"""


@whole_suite_only  # (make test reads the stats through the API cases)
def test_stats_that_cannot_be_read_lose_nothing(
        request: pytest.FixtureRequest, browser_name: str, fault_server: tuple[str, Faults]) -> None:
    """workerStats() with one worker's memory figures unreadable: it resolves with the counters, says why the
    figures are missing, leaves out the sums it cannot make, and every context goes on computing."""
    base, faults = fault_server
    served = faults.inject("/polyfill/webnn-worker.js", "prefix", text=BREAK_STATS_ON_WORD)
    with fault_page(request, browser_name, base, faults, workers=2) as page:
        assert page.evaluate(SETUP_JS)["workers"] == 2
        assert served.hits, served
        out = page.evaluate("""async (wait) => {
          const {ctx, other} = window.dying;
          window.faultWorkers[0].postMessage('fault: break your memory figures');
          const stats = await within(webnnPolyfill.workerStats(), wait, 'workerStats');
          const lost = await within(Promise.race([ctx.lost.then((i) => i.message),
            new Promise((resolve) => setTimeout(() => resolve('not lost'), 500))]), wait, 'context.lost');
          return {stats, lost, ctx: await within(runRelu(ctx), wait, 'the context'),
            other: await within(runRelu(other), wait, 'the other context'), unhandled: window.unhandled};
        }""", CASE_WAIT_MS)
    stats = out["stats"]["ok"]
    assert "the view is broken on purpose" in stats["memoryError"], out
    assert stats["workers"] == 2 and stats["tensors"] >= 1, out
    assert "mallocInUse" not in stats and "wasmBytes" not in stats, out
    assert out["lost"] == {"ok": "not lost"}, out
    assert out["ctx"] == out["other"] == {"ok": [1, 0, 3, 0]}, out
    assert out["unhandled"] == [], out
