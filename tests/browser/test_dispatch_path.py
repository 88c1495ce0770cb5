"""The dispatch path of #16 lines 2 and 4: timeline calls batched into one message each way (rpc.js, engine.js) and
contexts spread over a pool of workers (pool.js), against the same path with both switched off
(WEBNN_POLYFILL_CONFIG = {workers: 1, batch: false}): the same values, in the same timeline order, either way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import BOOT_TIMEOUT_MS, POLYFILL_BOOT, open_page

pytestmark = pytest.mark.browser

# Two contexts alive at once, each with its own graph y = relu(x * k + b) on [n]; their dispatches interleaved,
# with writes between them, so each read must see the write queued just before its dispatch and nothing later.
TWO_CONTEXTS_JS = r"""
async () => {
  const P = webnnPolyfill;
  const n = 64;
  const desc = {dataType: 'float32', shape: [n]};
  async function setup(k, bias) {
    const ctx = await P.ml.createContext();
    const b = new P.MLGraphBuilder(ctx);
    const x = b.input('x', desc);
    const y = b.relu(b.add(b.mul(x, b.constant(desc, new Float32Array(n).fill(k))),
                           b.constant(desc, new Float32Array(n).fill(bias))));
    const graph = await b.build({y});
    const xt = await ctx.createTensor({...desc, writable: true});
    const yt = await ctx.createTensor({...desc, readable: true});
    return {ctx, graph, xt, yt};
  }
  const a = await setup(2, 1);
  const c = await setup(-3, 100);
  const workers = (await P.workerStats()).workers;
  const reads = [];
  for (let i = 0; i < 20; i++) {
    for (const [s, v] of [[a, i], [c, 2 * i]]) {
      s.ctx.writeTensor(s.xt, new Float32Array(n).fill(v));
      s.ctx.dispatch(s.graph, {x: s.xt}, {y: s.yt});
      reads.push(s.ctx.readTensor(s.yt).then((buf) => Array.from(new Float32Array(buf).slice(0, 2))));
      s.ctx.writeTensor(s.xt, new Float32Array(n).fill(-1e6));  // after the read: must not show in it
    }
  }
  const values = await Promise.all(reads);
  // a bad dispatch (an input bound that the graph lacks) fails alone; the context carries on
  let error = null;
  try {
    a.ctx.dispatch(a.graph, {nope: a.xt}, {y: a.yt});
  } catch (e) {
    error = e.name;
  }
  a.ctx.destroy();
  const d = await setup(1, 0);  // takes the worker `a` left
  const after = (await P.workerStats()).workers;
  d.ctx.writeTensor(d.xt, new Float32Array(n).fill(7));
  d.ctx.dispatch(d.graph, {x: d.xt}, {y: d.yt});
  const last = new Float32Array(await d.ctx.readTensor(d.yt))[0];
  c.ctx.destroy();
  d.ctx.destroy();
  return {workers, after, values, error, last, stats: await P.workerStats()};
}
"""


@pytest.fixture(scope="module", params=["pooled-batched", "one-worker-unbatched"])
def dispatch_page(request: pytest.FixtureRequest, browser: Any, dev_server: str) -> Iterator[Any]:
    context = browser.new_context()
    if request.param == "one-worker-unbatched":
        context.add_init_script("window.WEBNN_POLYFILL_CONFIG = {workers: 1, batch: false};")
    page, errors = open_page(context, f"{dev_server}/test/smoke.html", BOOT_TIMEOUT_MS)
    page.evaluate(POLYFILL_BOOT)
    page.evaluate("() => window.__ctx.destroy()")
    page.mode = request.param  # type: ignore[attr-defined]
    page.webnn_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def test_two_contexts_keep_their_timelines(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(TWO_CONTEXTS_JS)
    pooled = dispatch_page.mode == "pooled-batched"
    cores = dispatch_page.evaluate("navigator.hardwareConcurrency")
    expected_workers = 2 if pooled and cores >= 2 else 1
    assert r["workers"] == expected_workers and r["after"] == expected_workers, r
    want = []
    for i in range(20):
        want += [[max(0.0, 2 * i + 1)] * 2, [max(0.0, -3 * 2 * i + 100)] * 2]
    assert r["values"] == want
    assert r["error"] == "TypeError"
    assert r["last"] == 7
    assert r["stats"]["graphs"] == 0 and r["stats"]["tensors"] == 0, r["stats"]
    assert not dispatch_page.webnn_errors


def test_a_low_power_context_never_starts_a_worker(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate("""async () => {
      const P = webnnPolyfill;
      const before = (await P.workerStats()).workers;
      const a = await P.ml.createContext();
      const b = await P.ml.createContext({powerPreference: 'low-power'});
      const c = await P.ml.createContext({powerPreference: 'low-power'});
      const during = (await P.workerStats()).workers;
      for (const x of [a, b, c]) x.destroy();
      return {before, during};
    }""")
    # the pool may already hold the second worker from the test above; low-power contexts add none
    assert r["during"] == r["before"], r
