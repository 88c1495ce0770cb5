"""The MLTensor timeline: writes, dispatches and reads issued without awaiting run in issue order per tensor.
https://www.w3.org/TR/webnn/#api-mlcontext-dispatch  https://github.com/webmachinelearning/webnn/blob/main/mltensor-explainer.md
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

# The explainer's chained-inference example, as written there: F(n) = F(n-1) + F(n-2) in int32 tensors that
# rotate through three MLTensors, 39 dispatches after two writes, one read at the end, no await in between.
FIBONACCI_JS = r"""
async (N) => {
  const ctx = await webnnPolyfill.ml.createContext();
  const desc = {dataType: 'int32', shape: [1]};
  const builder = new webnnPolyfill.MLGraphBuilder(ctx);
  const graph = await builder.build({'F_n': builder.add(builder.input('F_n-1', desc), builder.input('F_n-2', desc))});
  const tensors = await Promise.all([0, 1, 2].map(() => ctx.createTensor({...desc, readable: true, writable: true})));
  const t0 = performance.now();
  ctx.writeTensor(tensors[0], new Int32Array([0]));  // F_0 = 0
  ctx.writeTensor(tensors[1], new Int32Array([1]));  // F_1 = 1
  let returned = [];
  for (let n = 2; n <= N; n++) {
    // Each dispatch depends on tensors used in the previous dispatch.
    returned.push(ctx.dispatch(graph, {'F_n-1': tensors[(n - 1) % 3], 'F_n-2': tensors[(n - 2) % 3]},
                               {'F_n': tensors[n % 3]}));
  }
  const issueMs = performance.now() - t0;
  const f_n = new Int32Array(await ctx.readTensor(tensors[N % 3]))[0];
  const totalMs = performance.now() - t0;
  ctx.destroy();
  return {f_n, dispatches: returned.length, allUndefined: returned.every((r) => r === undefined), issueMs, totalMs};
}
"""


def test_fibonacci_40_through_chained_dispatches_without_await(webnn_page: Any) -> None:
    out = webnn_page.evaluate(FIBONACCI_JS, 40)
    assert out["f_n"] == 102334155  # F(40)
    assert out["dispatches"] == 39 and out["allUndefined"]
    # issuing the 39 dispatches returns at once; the work happens on the context's timeline
    assert out["issueMs"] < out["totalMs"]
    print(f"F(40): 39 dispatches issued in {out['issueMs']:.1f} ms, read back after {out['totalMs']:.1f} ms")


ORDERING_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const desc = {dataType: 'float32', shape: [4]};
  const rw = () => ctx.createTensor({...desc, readable: true, writable: true});
  const b = new P.MLGraphBuilder(ctx);
  const a = b.input('a', desc);
  const double = await b.build({out: b.add(a, a)});
  const [A, out1, out2, out3, B] = await Promise.all([rw(), rw(), rw(), rw(), rw()]);
  const read = async (t) => Array.from(new Float32Array(await ctx.readTensor(t)));
  const r = {};

  // write, dispatch, write again, dispatch again: each dispatch sees the write issued before it
  ctx.writeTensor(A, new Float32Array([1, 1, 1, 1]));
  ctx.dispatch(double, {a: A}, {out: out1});
  ctx.writeTensor(A, new Float32Array([5, 5, 5, 5]));
  ctx.dispatch(double, {a: A}, {out: out2});
  r.writeDispatchOrder = [await read(out1), await read(out2), await read(A)];

  // a read issued before a write returns the old contents; one issued after, the new
  const before = ctx.readTensor(A);
  ctx.writeTensor(A, new Float32Array([3, 3, 3, 3]));
  const after = ctx.readTensor(A);
  r.readWriteOrder = [Array.from(new Float32Array(await before)), Array.from(new Float32Array(await after))];

  // writeTensor copies the caller's bytes when called: later changes to the source are not seen
  const src = new Float32Array([7, 7, 7, 7]);
  ctx.writeTensor(B, src);
  src.fill(9);
  r.copiedAtCall = [await read(B), Array.from(src), src.buffer.byteLength];

  // reads resolve in the order they were issued
  const order = [];
  await Promise.all([A, B, out1, out2].map((t, i) => ctx.readTensor(t).then(() => order.push(i))));
  r.readResolutionOrder = order;

  // independent dispatches on different tensors (the timeline may overlap them): both results are right
  const b2 = new P.MLGraphBuilder(ctx);
  const neg = await b2.build({out: b2.neg(b2.input('a', desc))});
  ctx.writeTensor(B, new Float32Array([2, 2, 2, 2]));
  ctx.dispatch(double, {a: A}, {out: out1});
  ctx.dispatch(neg, {a: B}, {out: out3});
  r.independent = [await read(out1), await read(out3)];

  // work already issued with a tensor completes when that tensor is destroyed afterwards (WPT)
  const C = await rw();
  ctx.writeTensor(C, new Float32Array([4, 4, 4, 4]));
  ctx.dispatch(double, {a: C}, {out: out2});
  C.destroy();
  r.destroyAfterDispatch = await read(out2);

  // an output tensor of one dispatch feeds the next without awaiting (WPT outputs_as_inputs)
  ctx.writeTensor(A, new Float32Array([1, 2, 3, 4]));
  ctx.dispatch(double, {a: A}, {out: out1});
  ctx.dispatch(double, {a: out1}, {out: out2});
  ctx.dispatch(double, {a: out2}, {out: out3});
  r.chained = await read(out3);
  ctx.destroy();
  return r;
}
"""


def test_writes_dispatches_and_reads_keep_issue_order(webnn_page: Any) -> None:
    r = webnn_page.evaluate(ORDERING_JS)
    assert r["writeDispatchOrder"] == [[2] * 4, [10] * 4, [5] * 4]
    assert r["readWriteOrder"] == [[5] * 4, [3] * 4]
    assert r["copiedAtCall"] == [[7] * 4, [9] * 4, 16]
    assert r["readResolutionOrder"] == [0, 1, 2, 3]
    assert r["independent"] == [[6] * 4, [-2] * 4]
    assert r["destroyAfterDispatch"] == [8] * 4
    assert r["chained"] == [8, 16, 24, 32]
