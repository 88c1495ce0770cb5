"""Soak test: many dispatches over mixed graphs in one page, with tensors and graphs created and destroyed as they
go; the worker's memory must stay flat and the context must never be lost.  Not part of make test.

One Chromium (or --browser firefox) page of the dev server (started here, or --server), one context, four
kinds of graph (a small conv net, matmul + bias + sigmoid, an element-wise chain whose result is checked
exactly, and a shape mix of transpose/concat/split/gather/reduce).  Every ROUND dispatches every graph is
rebuilt and the previous ones destroyed; every 50th dispatch uses a fresh input/output pair that is destroyed
after its read, then tries a dispatch with the destroyed tensor and one with a destroyed graph (both must
throw); every 100th dispatch the checked graph's output is read back and compared.
`webnnPolyfill.workerStats()` is sampled between chunks: live graphs and tensors, the WebAssembly memory
size, malloc's bytes in use and the objects CPython's collector tracks.  After the warm-up (the first
WARMUP_FRACTION of the dispatches), bytes in use may not grow by more than --max-growth-mb and the
WebAssembly memory not at all.

    python -m bench soak                      # 10,000 dispatches (under a minute here)
    python -m bench soak --dispatches 2000 --json soak.json --server http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.server import dev_server
from web.browsers import launch_args

CHUNK = 250  # dispatches per page.evaluate (a stats sample between chunks)
ROUND = 200  # dispatches between graph rebuilds
WARMUP_FRACTION = 0.1

SETUP_JS = r"""
async () => {
  const ctx = await navigator.ml.createContext();
  const S = window.soak = {ctx, lost: null, graphs: [], gen: 0, done: 0, checks: 0, tensorsMade: 0,
                           graphsMade: 0, graphsDestroyed: 0, tensorsDestroyed: 0, refused: 0, errors: []};
  ctx.lost.then((info) => { S.lost = info && info.message ? info.message : String(info); });
  const f32 = (n, seed) => Float32Array.from({length: n}, (_, i) => Math.sin(i * 12.9898 + seed) * 0.5);
  const desc = (shape) => ({dataType: 'float32', shape});
  // each kind: build(builder) -> {outputs, inputShape, outputShape}
  S.kinds = [
    {name: 'conv', input: [1, 3, 16, 16], output: [1, 8, 8, 8], build: (b, x, g) => b.maxPool2d(
      b.relu(b.conv2d(x, b.constant(desc([8, 3, 3, 3]), f32(216, g)), {padding: [1, 1, 1, 1]})),
      {windowDimensions: [2, 2], strides: [2, 2]})},
    {name: 'matmul', input: [16, 32], output: [16, 16], build: (b, x, g) => b.sigmoid(
      b.add(b.matmul(x, b.constant(desc([32, 16]), f32(512, g))), b.constant(desc([16]), f32(16, g + 1))))},
    // relu(x * 2 + 1): exact in float32, checked against JavaScript
    {name: 'checked', input: [8, 10], output: [8, 10], check: true, build: (b, x) => b.relu(
      b.add(b.mul(x, b.constant(desc([1]), new Float32Array([2]))), b.constant(desc([1]), new Float32Array([1]))))},
    {name: 'shapes', input: [4, 6], output: [2, 6], build: (b, x) => {
      const t = b.transpose(b.concat([x, b.neg(x)], 0), {permutation: [1, 0]});  // [6, 8]
      const [s0] = b.split(t, 2, {axis: 1});                                      // [6, 4]
      const g = b.gather(s0, b.constant({dataType: 'int32', shape: [2]}, new Int32Array([3, 1])), {axis: 1});
      return b.reshape(b.reduceMean(b.reshape(g, [6, 2, 1]), {axes: [2]}), [2, 6]);
    }},
  ];
  S.rebuild = async () => {
    const old = S.graphs;
    S.gen += 1;
    S.graphs = await Promise.all(S.kinds.map(async (k) => {
      const b = new MLGraphBuilder(ctx);
      const x = b.input('x', desc(k.input));
      const graph = await b.build({y: k.build(b, x, S.gen)});
      S.graphsMade += 1;
      const input = await ctx.createTensor({...desc(k.input), writable: true});
      const output = await ctx.createTensor({...desc(k.output), readable: true});
      S.tensorsMade += 2;
      const data = f32(k.input.reduce((a, c) => a * c, 1), S.gen);
      ctx.writeTensor(input, data);
      return {kind: k, graph, input, output, data};
    }));
    for (const g of old) {
      g.graph.destroy(); g.input.destroy(); g.output.destroy();
      S.graphsDestroyed += 1; S.tensorsDestroyed += 2;
    }
    S.deadGraph = old[0];
  };
  await S.rebuild();
  return true;
}
"""

CHUNK_JS = r"""
async ({count, round, tensorEvery, checkEvery}) => {
  const S = window.soak, ctx = S.ctx;
  const numel = (s) => s.reduce((a, c) => a * c, 1);
  for (let i = 0; i < count; i++) {
    if (S.lost) break;
    if (S.done > 0 && S.done % round === 0) await S.rebuild();
    const g = S.graphs[S.done % S.graphs.length];
    if (S.done % tensorEvery === 0) {
      // a fresh pair for this one dispatch, destroyed right after its result is read
      const input = await ctx.createTensor({dataType: 'float32', shape: g.kind.input, writable: true});
      const output = await ctx.createTensor({dataType: 'float32', shape: g.kind.output, readable: true});
      S.tensorsMade += 2;
      ctx.writeTensor(input, g.data);
      ctx.dispatch(g.graph, {x: input}, {y: output});
      await ctx.readTensor(output);
      input.destroy(); output.destroy();
      S.tensorsDestroyed += 2;
      // a dispatch with a destroyed tensor, and one with a destroyed graph, must throw and change nothing
      try { ctx.dispatch(g.graph, {x: input}, {y: g.output}); S.errors.push('dispatch with a destroyed tensor ran'); }
      catch (e) { S.refused += 1; }
      if (S.deadGraph) {
        try { ctx.dispatch(S.deadGraph.graph, {x: S.deadGraph.input}, {y: S.deadGraph.output});
              S.errors.push('dispatch with a destroyed graph ran'); }
        catch (e) { S.refused += 1; }
      }
    } else {
      ctx.dispatch(g.graph, {x: g.input}, {y: g.output});
    }
    S.done += 1;
    if (g.kind.check && S.done % checkEvery < S.graphs.length) {
      const y = new Float32Array(await ctx.readTensor(g.output));
      const want = g.data.map((v) => Math.max(Math.fround(Math.fround(v * 2) + 1), 0));
      const bad = want.findIndex((v, k) => v !== y[k]);
      if (bad >= 0) S.errors.push(`dispatch ${S.done}: element ${bad} is ${y[bad]}, expected ${want[bad]}`);
      S.checks += 1;
    }
  }
  await ctx.readTensor(S.graphs[0].output);  // drain the timeline before sampling
  const stats = await webnnPolyfill.workerStats();
  return {done: S.done, lost: S.lost, checks: S.checks, refused: S.refused, errors: S.errors.slice(0, 5), stats,
          made: {tensors: S.tensorsMade, graphs: S.graphsMade},
          destroyed: {tensors: S.tensorsDestroyed, graphs: S.graphsDestroyed}};
}
"""


@contextlib.contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url:
        yield url.rstrip("/")
        return
    with dev_server() as started:
        yield started


def soak(dispatches: int, server: str | None, max_growth_mb: float, headed: bool = False,
         rebuild_every: int = ROUND, browser_name: str = "chromium") -> dict[str, Any]:
    """Run the soak; returns the result (samples, verdict and the reasons it failed, if it did)."""
    from playwright.sync_api import sync_playwright

    samples: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with _server(server) as url, sync_playwright() as p:
        browser = getattr(p, browser_name).launch(**launch_args(browser_name), headless=not headed)
        page = browser.new_page()
        page.set_default_timeout(600_000)
        page_errors: list[str] = []
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(f"{url}/test/smoke.html")
        page.evaluate(SETUP_JS)
        boot_s = time.perf_counter() - t0
        first = page.evaluate(CHUNK_JS, {"count": 0, "round": rebuild_every, "tensorEvery": 50, "checkEvery": 100})
        samples.append({"t": 0.0, **first})
        t1 = time.perf_counter()
        last: dict[str, Any] = first
        while last["done"] < dispatches and not last["lost"]:
            count = min(CHUNK, dispatches - last["done"])
            last = page.evaluate(CHUNK_JS, {"count": count, "round": rebuild_every, "tensorEvery": 50,
                                            "checkEvery": 100})
            samples.append({"t": round(time.perf_counter() - t1, 2), **last})
            s = last["stats"]
            print(f"{last['done']:6d} dispatches {samples[-1]['t']:7.1f} s  graphs {s['graphs']} tensors "
                  f"{s['tensors']}  malloc in use {s.get('mallocInUse', 0) / 2**20:7.2f} MiB  wasm "
                  f"{s['wasmBytes'] / 2**20:6.1f} MiB  py objects {s['pyObjects']}", flush=True)
        run_s = time.perf_counter() - t1
        browser.close()
    return verdict(samples, dispatches, max_growth_mb, boot_s, run_s, page_errors)


def verdict(samples: list[dict[str, Any]], dispatches: int, max_growth_mb: float, boot_s: float, run_s: float,
            page_errors: list[str]) -> dict[str, Any]:
    """Flat memory after the warm-up, every dispatch done, no lost context, no wrong value, no page error."""
    last = samples[-1]
    warm = next((s for s in samples if s["done"] >= dispatches * WARMUP_FRACTION), samples[0])
    mem = {k: {"start": samples[0]["stats"].get(k), "warm": warm["stats"].get(k), "end": last["stats"].get(k),
               "peak": max(s["stats"].get(k, 0) for s in samples)}
           for k in ("mallocInUse", "wasmBytes", "pyObjects", "tensors", "graphs")}
    failures = []
    if last["done"] != dispatches:
        failures.append(f"{last['done']} of {dispatches} dispatches ran")
    if last["lost"]:
        failures.append(f"the context was lost: {last['lost']}")
    if last["errors"]:
        failures.append(f"wrong values: {last['errors']}")
    if page_errors:
        failures.append(f"page errors: {page_errors[:3]}")
    growth = (mem["mallocInUse"]["end"] or 0) - (mem["mallocInUse"]["warm"] or 0)
    if growth > max_growth_mb * 2**20:
        failures.append(f"malloc in use grew {growth / 2**20:.2f} MiB after the warm-up (limit {max_growth_mb})")
    if mem["wasmBytes"]["end"] != mem["wasmBytes"]["warm"]:
        failures.append(f"the WebAssembly memory grew after the warm-up: {mem['wasmBytes']}")
    if last["stats"]["graphs"] != samples[0]["stats"]["graphs"]:
        failures.append(f"live graphs {samples[0]['stats']['graphs']} -> {last['stats']['graphs']}")
    if last["stats"]["tensors"] != samples[0]["stats"]["tensors"]:
        failures.append(f"live tensors {samples[0]['stats']['tensors']} -> {last['stats']['tensors']}")
    return {"dispatches": last["done"], "checks": last["checks"], "refused": last["refused"], "made": last["made"],
            "destroyed": last["destroyed"], "boot_s": round(boot_s, 1), "run_s": round(run_s, 1),
            "memory": mem, "ok": not failures, "failures": failures, "samples": samples}


def main(argv: Sequence[str] | None = None) -> int:
    """python -m bench soak: the long run; exit status 1 when memory grew or a check failed."""
    ap = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--dispatches", type=int, default=10_000)
    ap.add_argument("--server", help="a running dev server's URL (default: start one)")
    ap.add_argument("--max-growth-mb", type=float, default=1.0,
                    help="allowed growth of malloc's bytes in use after the warm-up (default 1 MiB)")
    ap.add_argument("--browser", choices=("chromium", "firefox"), default="chromium")
    ap.add_argument("--rebuild-every", type=int, default=ROUND,
                    help=f"dispatches between graph rebuilds (default {ROUND})")
    ap.add_argument("--json", type=Path, help="write the full result (with every sample) here")
    ap.add_argument("--headed", action="store_true")
    args = ap.parse_args(argv)
    result = soak(args.dispatches, args.server, args.max_growth_mb, args.headed, args.rebuild_every, args.browser)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    mib = {k: {p: (v / 2**20 if v is not None else None) for p, v in result["memory"][k].items()}
           for k in ("mallocInUse", "wasmBytes")}
    print(f"\n{result['dispatches']} dispatches in {result['run_s']} s (boot {result['boot_s']} s), "
          f"{result['checks']} checked reads, {result['refused']} refused dispatches; made {result['made']}, "
          f"destroyed {result['destroyed']}")
    for k, v in mib.items():
        print(f"  {k}: " + ", ".join(f"{p} {x:.2f} MiB" for p, x in v.items() if x is not None))
    print(f"  pyObjects: {result['memory']['pyObjects']}")
    print("PASS" if result["ok"] else "FAIL: " + "; ".join(result["failures"]))
    return 0 if result["ok"] else 1

