"""One graph over both cores (polyfill/src/engine/split.js, runtime/pool.js, py_core/bridge/split_glue.py): a
batch-separable graph runs half its batch on a second worker, with readTensor results identical to the same
graph unsplit in the same page; a graph mixing the batch stays whole; `split: false` turns it off; destroy
releases both workers' halves.  Its own page: the second worker it starts would change what the shared page's
tests see."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pages import POLYFILL_BOOT, booted_page

SPLIT_JS = r"""
async () => {
  const cfg = window.WEBNN_POLYFILL_CONFIG = window.WEBNN_POLYFILL_CONFIG || {};
  cfg.splitMinFlops = 0;  // small graphs split too, for the test
  const ctx = window.__ctx;
  const f32 = (shape) => ({dataType: 'float32', shape});
  let seed = 7;
  const rand = (n, scale = 1) => Float32Array.from({length: n}, () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return (seed / 4294967296 - 0.5) * scale;
  });
  const weights = {f: rand(8 * 3 * 9, 0.5), fb: rand(8), add: rand(8), g: rand(8 * 5, 0.5), gb: rand(5)};
  async function build(split, kind) {
    cfg.split = split;
    const b = new MLGraphBuilder(ctx);
    const x = b.input('x', f32([4, 3, 16, 16]));
    let y;
    if (kind === 'mixing') {  // a reduction over the batch: must not split
      y = b.reduceSum(b.conv2d(x, b.constant(f32([8, 3, 3, 3]), weights.f)), {axes: [0]});
    } else {
      y = b.conv2d(x, b.constant(f32([8, 3, 3, 3]), weights.f),
        {bias: b.constant(f32([8]), weights.fb), padding: [1, 1, 1, 1]});
      y = b.add(b.clamp(y, {minValue: 0, maxValue: 6}), b.constant(f32([1, 8, 1, 1]), weights.add));
      y = b.reshape(b.averagePool2d(y), [4, 8]);
      y = b.softmax(b.gemm(y, b.constant(f32([8, 5]), weights.g), {c: b.constant(f32([5]), weights.gb)}), 1);
    }
    const graph = await b.build({y});
    const xt = await ctx.createTensor({...f32([4, 3, 16, 16]), writable: true});
    const yt = await ctx.createTensor({...f32(y.shape), readable: true});
    return {graph, xt, yt};
  }
  async function run(g, x) {
    ctx.writeTensor(g.xt, x);
    ctx.dispatch(g.graph, {x: g.xt}, {y: g.yt});
    return new Float32Array(await ctx.readTensor(g.yt));
  }
  const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  const stats = async () => {
    const s = await webnnPolyfill.workerStats();
    return {workers: s.workers, graphs: s.graphs, splitGraphs: s.splitGraphs, splitPeerGraphs: s.splitPeerGraphs,
      splitServed: s.splitServed, onPeer: s.splitPartsOnPeer, here: s.splitPartsHere};
  };
  const before = await stats();
  const whole = await build(false, 'small');
  const afterOff = await stats();
  const split = await build(true, 'small');
  const afterSplit = await stats();
  const x1 = rand(4 * 3 * 16 * 16);
  const x2 = rand(4 * 3 * 16 * 16);
  const results = [];
  for (const x of [x1, x2, x1]) results.push(same(await run(split, x), await run(whole, x)));
  // the timeline: two writes and dispatches queued before one read
  ctx.writeTensor(split.xt, x1);
  ctx.dispatch(split.graph, {x: split.xt}, {y: split.yt});
  ctx.writeTensor(split.xt, x2);
  ctx.dispatch(split.graph, {x: split.xt}, {y: split.yt});
  const queued = same(new Float32Array(await ctx.readTensor(split.yt)), await run(whole, x2));
  // a second split graph: the peer is linked already, so it builds its half while the owner builds its own
  const split2 = await build(true, 'small');
  const second = same(await run(split2, x2), await run(whole, x2));
  const afterSecond = await stats();
  split2.graph.destroy();
  // legacy compute() of the split graph: every part in the owner
  const legacy = await ctx.compute(split.graph, {x: x2.slice()}, {y: new Float32Array(20)});
  const computed = same(legacy.outputs.y, await run(whole, x2));
  const afterRuns = await stats();
  const mixing = await build(true, 'mixing');
  const afterMixing = await stats();
  const mixed = await run(mixing, x1);
  split.graph.destroy();
  // the peer hears of it from the owner's port, not from the page: give that message its moment
  let afterDestroy = await stats();
  for (let i = 0; i < 50 && afterDestroy.splitServed; i++) {
    await new Promise((r) => setTimeout(r, 20));
    afterDestroy = await stats();
  }
  return {before, afterOff, afterSplit, afterRuns, results, queued, computed, second, afterSecond, afterMixing, afterDestroy,
    mixedLength: mixed.length, finite: mixed.every(Number.isFinite)};
}
"""


@pytest.fixture(scope="module")
def split_page(browser: Any, dev_server: str) -> Iterator[Any]:
    with booted_page(browser, f"{dev_server}/test/smoke.html", POLYFILL_BOOT) as page:
        yield page


def test_a_batch_separable_graph_runs_on_both_workers_with_the_unsplit_results(split_page: Any) -> None:
    r = split_page.evaluate(SPLIT_JS)
    assert r["before"]["workers"] == 1
    assert r["afterOff"]["splitGraphs"] == 0  # split: false built it whole, on one worker
    assert r["afterSplit"]["workers"] == 2  # the peer worker started for the split graph
    assert r["afterSplit"]["splitGraphs"] == 1 and r["afterSplit"]["splitPeerGraphs"] == 1
    assert r["afterSplit"]["splitServed"] == 1  # the peer holds the other half's graph
    assert r["afterSplit"]["graphs"] == r["afterOff"]["graphs"] + 2
    assert r["results"] == [True, True, True]  # bitwise the unsplit graph's outputs
    assert r["queued"] and r["computed"]
    # every split dispatch's second half ran on the peer (5 + the second graph's 1), none fell back to the owner
    assert r["afterRuns"]["onPeer"] == 6 and r["afterRuns"]["here"] == 0
    assert r["second"] and r["afterSecond"]["splitPeerGraphs"] == 2 and r["afterSecond"]["splitServed"] == 2
    assert r["afterMixing"]["splitGraphs"] == 1  # the graph reducing over the batch stayed whole
    assert r["mixedLength"] == 8 * 14 * 14 and r["finite"]
    assert r["afterDestroy"]["splitGraphs"] == 0 and r["afterDestroy"]["splitServed"] == 0
    assert r["afterDestroy"]["graphs"] == r["afterMixing"]["graphs"] - 2  # both halves released
    assert not split_page.webnn_errors
