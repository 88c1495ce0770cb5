"""The dispatch path: timeline calls batched into one message each way (rpc.js, engine.js),
contexts spread over a pool of workers (pool.js), large writes and reads copied through staging buffers the
worker hands back (rpc.js) and the worker's direct mode (engine.js: writes and reads by heap address with no
Python call, dispatches through bindings checked once), against the same path with all four switched off
(WEBNN_POLYFILL_CONFIG = {workers: 1, batch: false, staging: false, direct: false}; and the page's cache of a
graph's last validated bindings, bindingCache: false): the same values, in the same timeline order, with the
same errors, either way."""

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


# Tensors above the staging threshold (64 KiB): writes of different data back to back, each read right after its
# write, with and without outputData, a view into a larger outputData, and the caller's data changed after
# writeTensor returned (the copy is made at call time).
STAGED_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const n = 1 << 16;  // 256 KiB of float32
  const desc = {dataType: 'float32', shape: [n]};
  const b = new P.MLGraphBuilder(ctx);
  const graph = await b.build({y: b.neg(b.input('x', desc))});
  const x = await ctx.createTensor({...desc, writable: true, readable: true});
  const y = await ctx.createTensor({...desc, readable: true});
  const before = (await P.workerStats()).stagingReused;
  const bad = [];
  const check = (what, arr, v) => {
    const k = arr.findIndex((e, i) => e !== v + (i % 7));
    if (k >= 0) bad.push(`${what}: [${k}] = ${arr[k]}, expected ${v + (k % 7)}`);
  };
  const pattern = (v) => Float32Array.from({length: n}, (_, i) => v + (i % 7));
  const out = new Float32Array(n + 5);
  for (let i = 0; i < 12; i++) {
    const data = pattern(i);
    ctx.writeTensor(x, data);
    data.fill(-1);  // after the call: must not reach the tensor
    ctx.dispatch(graph, {x}, {y});
    const reads = [ctx.readTensor(x), ctx.readTensor(y, out.subarray(0, n + 3))];
    ctx.writeTensor(x, pattern(1000 + i));  // queued after the reads: must not show in them
    const [xs] = await Promise.all(reads);
    check(`x ${i}`, new Float32Array(xs), i);
    check(`-y ${i}`, out.subarray(0, n).map((e) => -e), i);
    if (out[n + 3] !== 0 || out[n + 4] !== 0) bad.push(`outputData written past the view at ${i}`);
  }
  const reused = (await P.workerStats()).stagingReused - before;
  ctx.destroy();
  return {bad, reused};
}
"""


@pytest.fixture(scope="module", params=["pooled-batched-staged", "one-worker-unbatched-unstaged"])
def dispatch_page(request: pytest.FixtureRequest, browser: Any, dev_server: str) -> Iterator[Any]:
    context = browser.new_context()
    if request.param == "one-worker-unbatched-unstaged":
        context.add_init_script(
            "window.WEBNN_POLYFILL_CONFIG = {workers: 1, batch: false, staging: false, direct: false, "
            "bindingCache: false};")
    page, errors = open_page(context, f"{dev_server}/test/smoke.html", BOOT_TIMEOUT_MS)
    page.evaluate(POLYFILL_BOOT)
    page.evaluate("() => window.__ctx.destroy()")
    page.mode = request.param  # type: ignore[attr-defined]
    page.webnn_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def test_two_contexts_keep_their_timelines(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(TWO_CONTEXTS_JS)
    pooled = dispatch_page.mode == "pooled-batched-staged"
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


def test_large_tensors_keep_their_values_through_staging_buffers(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(STAGED_JS)
    assert r["bad"] == []
    if dispatch_page.mode == "pooled-batched-staged":
        # 12 rounds of 2 writes and a read into outputData: after the first round, every copy reuses a buffer
        assert r["reused"] >= 30, r
    else:
        assert r["reused"] == 0, r
    assert not dispatch_page.webnn_errors


# The timeline's edges, which direct mode handles in the worker's JavaScript: a large output (256 KiB: taken
# over from the executor) and a small one (copied); an output that aliases its input (reshape); an output
# tensor written by script between dispatches; the same bindings dispatched again after one of their tensors was
# destroyed and replaced; many tensors (the address table grows).  (A failed dispatch's outputs are
# tests/core/test_worker_direct.py's.)
DIRECT_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const out = {};
  for (const n of [4, 1 << 16]) {
    const desc = {dataType: 'float32', shape: [n]};
    const b = new P.MLGraphBuilder(ctx);
    const x = b.input('x', desc);
    const graph = await b.build({y: b.relu(x), r: b.reshape(x, [n])});
    const xt = await ctx.createTensor({...desc, writable: true, readable: true});
    let yt = await ctx.createTensor({...desc, readable: true, writable: true});
    const rt = await ctx.createTensor({...desc, readable: true});
    const rows = [];
    for (let i = 0; i < 4; i++) {
      const data = Float32Array.from({length: n}, (_, k) => (k % 5) - 2 + i);
      ctx.writeTensor(xt, data);
      ctx.dispatch(graph, {x: xt}, {y: yt, r: rt});
      ctx.writeTensor(xt, new Float32Array(n).fill(-9));  // after the dispatch: in neither output
      const [y, r, xs] = (await Promise.all([ctx.readTensor(yt), ctx.readTensor(rt), ctx.readTensor(xt)]))
        .map((buf) => new Float32Array(buf));
      rows.push([y.every((v, k) => v === Math.max(0, (k % 5) - 2 + i)),
        r.every((v, k) => v === (k % 5) - 2 + i), xs.every((v) => v === -9)]);
      if (i === 1) {  // the output tensor written by script between dispatches: its own bytes, the input's kept
        ctx.writeTensor(yt, new Float32Array(n).fill(5));
        const [y2, x2] = await Promise.all([ctx.readTensor(yt), ctx.readTensor(xt)]);
        rows.push([new Float32Array(y2).every((v) => v === 5), new Float32Array(x2).every((v) => v === -9), true]);
      }
      if (i === 2) {  // replace y: the same binding names, a new tensor
        yt.destroy();
        yt = await ctx.createTensor({...desc, readable: true, writable: true});
      }
    }
    out[n] = rows;
  }
  const tensors = [];
  for (let i = 0; i < 300; i++) {
    const t = await ctx.createTensor({dataType: 'int32', shape: [3], readable: true, writable: true});
    ctx.writeTensor(t, Int32Array.of(i, -i, 7));
    tensors.push(t);
  }
  const back = await Promise.all(tensors.map((t) => ctx.readTensor(t).then((buf) => Array.from(new Int32Array(buf)))));
  out.table = back.every((v, i) => v[0] === i && v[1] === -i && v[2] === 7);
  tensors.forEach((t) => t.destroy());
  const stats = await P.workerStats();
  ctx.destroy();
  return {out, direct: stats.direct, adopted: stats.adopted};
}
"""


def test_direct_mode_keeps_values_aliasing_and_destroyed_tensors_right(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(DIRECT_JS)
    for n in ("4", "65536"):
        assert r["out"][n] == [[True, True, True]] * 5, (n, r["out"][n])
    assert r["out"]["table"] is True
    on = dispatch_page.mode == "pooled-batched-staged"
    assert r["direct"] == int(on)
    # the relu output of 256 KiB is taken over from the executor in direct mode (4 dispatches), never otherwise
    assert (r["adopted"] >= 4) if on else r["adopted"] == 0, r
    assert not dispatch_page.webnn_errors


# Graphs the compiled plan runs as one C call (py_core/compiler/plan.py DirectRun), which direct mode makes from the
# worker's JavaScript with no Python: a 2-op graph on 4 floats and a 1-op one on 4096, each read after a write
# queued behind its dispatch, the input tensor shared by two graphs, a destroyed and replaced output tensor.
C_CALL_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const before = (await P.workerStats()).cRuns;
  const bad = [];
  for (const [n, two] of [[4, true], [4096, false]]) {
    const desc = {dataType: 'float32', shape: [n]};
    const b = new P.MLGraphBuilder(ctx);
    const x = b.input('x', desc);
    const graph = await b.build({y: two ? b.relu(b.mul(x, x)) : b.relu(x)});
    const b2 = new P.MLGraphBuilder(ctx);
    const x2 = b2.input('x', desc);
    const neg = await b2.build({y: b2.neg(b2.relu(x2))});
    const xt = await ctx.createTensor({...desc, writable: true, readable: true});
    let yt = await ctx.createTensor({...desc, readable: true});
    const zt = await ctx.createTensor({...desc, readable: true});
    for (let i = 0; i < 6; i++) {
      const data = Float32Array.from({length: n}, (_, k) => ((k + i) % 9) - 4);
      ctx.writeTensor(xt, data);
      ctx.dispatch(graph, {x: xt}, {y: yt});
      ctx.dispatch(neg, {x: xt}, {y: zt});
      ctx.writeTensor(xt, new Float32Array(n).fill(100));  // after both dispatches: in neither output
      const [y, z] = (await Promise.all([ctx.readTensor(yt), ctx.readTensor(zt)])).map((buf) => new Float32Array(buf));
      data.forEach((v, k) => {
        const want = Math.max(0, two ? v * v : v);
        if (y[k] !== want || z[k] !== -Math.max(0, v)) bad.push(`n=${n} i=${i} [${k}]: ${y[k]}, ${z[k]} for ${v}`);
      });
      if (i === 3) {
        yt.destroy();
        yt = await ctx.createTensor({...desc, readable: true});
      }
    }
  }
  const stats = await P.workerStats();
  ctx.destroy();
  return {bad: bad.slice(0, 5), cRuns: stats.cRuns - before, native: stats.native};
}
"""


def test_graphs_of_one_c_call_run_from_javascript(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(C_CALL_JS)
    assert r["bad"] == [], r
    if dispatch_page.mode == "pooled-batched-staged" and r["native"] == 1:
        assert r["cRuns"] >= 12, r  # at least the 2-op and the 4096-float relu graphs, 6 dispatches each
    else:
        assert r["cRuns"] == 0, r
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


# dispatch() keeps the last bindings it validated for a graph and skips their checks when the same ones come
# again (context.js): each change after a dispatch that passed must still be refused, and the next good one run.
SAME_BINDINGS_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const desc = {dataType: 'float32', shape: [4]};
  const b = new P.MLGraphBuilder(ctx);
  const graph = await b.build({y: b.neg(b.input('x', desc))});
  const make = (d, flags) => ctx.createTensor({...d, ...flags});
  const x = await make(desc, {writable: true, readable: true});
  const y = await make(desc, {readable: true});
  const y2 = await make(desc, {readable: true});
  const wide = await make({dataType: 'float32', shape: [5]}, {readable: true});
  const ints = await make({dataType: 'int32', shape: [4]}, {writable: true});
  const gone = await make(desc, {writable: true});
  const refused = (f) => { try { f(); return null; } catch (e) { return `${e.name}: ${e.message}`; } };
  const out = {};
  ctx.writeTensor(x, new Float32Array([1, -2, 3, -4]));
  out.first = refused(() => ctx.dispatch(graph, {x}, {y}));
  out.again = refused(() => ctx.dispatch(graph, {x}, {y}));
  out.shape = refused(() => ctx.dispatch(graph, {x}, {y: wide}));
  out.type = refused(() => ctx.dispatch(graph, {x: ints}, {y}));
  out.name = refused(() => ctx.dispatch(graph, {z: x}, {y}));
  out.overlap = refused(() => ctx.dispatch(graph, {x}, {y: x}));
  out.extra = refused(() => ctx.dispatch(graph, {x}, {y, y2}));
  ctx.writeTensor(gone, new Float32Array(4));
  out.goneOk = refused(() => ctx.dispatch(graph, {x: gone}, {y: y2}));
  gone.destroy();
  out.gone = refused(() => ctx.dispatch(graph, {x: gone}, {y: y2}));
  out.back = refused(() => ctx.dispatch(graph, {x}, {y: y2}));
  out.y2 = Array.from(new Float32Array(await ctx.readTensor(y2)));
  ctx.destroy();
  return out;
}
"""


def test_the_same_bindings_again_skip_checks_but_changes_are_refused(dispatch_page: Any) -> None:
    r = dispatch_page.evaluate(SAME_BINDINGS_JS)
    for ok in ("first", "again", "goneOk", "back"):
        assert r[ok] is None, (ok, r)
    for bad in ("shape", "type", "name", "overlap", "extra", "gone"):
        assert r[bad] and r[bad].startswith("TypeError"), (bad, r)
    assert "float32[5]" in r["shape"] and "int32" in r["type"] and "also bound as an input" in r["overlap"]
    assert "destroyed" in r["gone"]
    assert r["y2"] == [-1, 2, -3, 4]
