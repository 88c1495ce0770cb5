"""The graph file's JS side (web/lib/graphfile.js) in the browser: its value encoding agrees with
py_core/graphfile.py, and the one replayer builds a file written by Python on the polyfill and on native WebNN
to the values py_core's own replay computes; the perf page replays the bench's model graphs through it.
(WPT cases go through it in tests/bench, recorded TFLite models in test_models_litert and the gallery tests.)"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from py_core import graphfile as gf
from py_core.runtime.executor import prepare
from web.served_files import ServedFiles

pytestmark = pytest.mark.browser

ROUND_TRIP_JS = r"""
async (tagged) => {
  const gf = await import('/lib/graphfile.js');
  const values = gf.decodeValue(tagged);
  const kinds = values.map((v) => Object.is(v, -0) ? '-0' : typeof v);
  let bare = '';
  try { gf.stringify({format: 'webnn-graph', version: 1, x: Infinity}); } catch (e) { bare = e.name; }
  return {back: gf.encodeValue(values), kinds, bare};
}
"""

REPLAY_JS = r"""
async ({url, native}) => {
  const gf = await import('/lib/graphfile.js');
  const {graph, weights} = await gf.load(url);
  const ctx = native ? window.__nctx : window.__ctx;
  const Builder = native ? MLGraphBuilder : webnnPolyfill.MLGraphBuilder;
  const built = await gf.buildGraph(graph, weights, ctx, Builder);
  const descs = gf.descriptors(graph);
  const ins = {}, outs = {};
  for (const [name, e] of Object.entries(graph.inputs)) {
    ins[name] = await ctx.createTensor({dataType: e.dataType, shape: e.shape, writable: true});
    ctx.writeTensor(ins[name], gf.tensorData(e, weights, name));
  }
  for (const [name, operand] of Object.entries(graph.outputs)) {
    outs[name] = await ctx.createTensor({...descs[operand], readable: true});
  }
  ctx.dispatch(built, ins, outs);
  const result = {};
  for (const [name, t] of Object.entries(outs)) result[name] = gf.toBase64(new Uint8Array(await ctx.readTensor(t)));
  return result;
}
"""


def _sample() -> gf.GraphFile:
    """A small graph with every value kind: split's several outputs, an operand list, -Infinity, labels."""
    rb = gf.Recorder("sample", "tests/browser/test_graph_files.py")
    x = rb.input("x", {"dataType": "float32", "shape": [2, 6]})
    w = rb.constant({"dataType": "float32", "shape": [2, 6]}, np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6))
    a, b, c = rb.split(rb.mul(x, w), 3, axis=1, label="split")
    y = rb.clamp(rb.concat([c, a], 1), minValue=-math.inf, maxValue=0.25, label="y")
    graph = rb.build({"y": y, "b": rb.relu(b)})
    graph.inputs["x"]["data"] = {"base64": base64.b64encode(np.arange(12, dtype="<f4").tobytes()).decode()}
    return graph


def _expected(graph: gf.GraphFile) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = prepare(gf.replay(graph)).run({n: graph.array(n) for n in graph.inputs})
    return out


def _serve(served_files: ServedFiles, files: dict[str, bytes]) -> str:
    for name, body in files.items():
        url = served_files.put(f"graph_files/{name}", body)
    return url.rsplit("/", 1)[0] + "/sample.json"


def test_values_encode_the_same_in_js(webnn_page: Any) -> None:
    values = [math.inf, -math.inf, -0.0, gf.BigInt(-(2**63)), 2**60, 1.5, "nchw"]
    tagged = gf.encode_value(values)
    got = webnn_page.evaluate(ROUND_TRIP_JS, tagged)
    assert got["back"] == tagged and got["bare"] == "TypeError"
    assert got["kinds"] == ["number", "number", "-0", "bigint", "bigint", "number", "string"]
    nan = webnn_page.evaluate("async () => (await import('/lib/graphfile.js')).encodeValue([NaN])")
    assert nan == [{"$n": "NaN"}] and math.isnan(gf.decode_value(nan[0]))


def _replay(page: Any, served_files: ServedFiles, native: bool) -> None:
    graph = _sample()
    url = _serve(served_files, {"sample.json": graph.dumps().encode(), "sample.bin": graph.weights})
    got = page.evaluate(REPLAY_JS, {"url": url, "native": native})
    for name, want in _expected(graph).items():
        np.testing.assert_allclose(np.frombuffer(base64.b64decode(got[name]), np.float32).reshape(want.shape),
                                   want, rtol=1e-6, atol=0)


def test_a_python_written_file_replays_to_the_same_values(webnn_page: Any, served_files: ServedFiles) -> None:
    _replay(webnn_page, served_files, native=False)


def test_a_python_written_file_replays_on_native_webnn(native_webnn_page: Any, served_files: ServedFiles,
                                                      browser_name: str) -> None:
    if browser_name != "chromium":
        pytest.skip("native WebNN runs in the npm Chromium, once")
    _replay(native_webnn_page, served_files, native=True)


def test_perf_page_replays_bench_graph_files(browser: Any, dev_server: str, tmp_path: Path) -> None:
    """bench/perf/models.py's files (here the 500-operator chain and the sample) on the perf page."""
    from bench.perf import models as bench_models

    files: dict[str, bytes] = {}
    index: dict[str, Any] = {}
    for name, graph in (("chain500", bench_models.chain_graph(500)), ("sample", _sample())):
        graph.inputs = {n: {k: v for k, v in d.items() if k != "data"} for n, d in graph.inputs.items()}
        js, bin_ = graph.save(tmp_path / name)
        files[js.name] = js.read_bytes()
        files[f"{name}.bin"] = bin_.read_bytes() if bin_ else b""
        index[name] = {"graph": js.name, "inputs": graph.inputs, "outputs": list(graph.outputs)}
    files["index.json"] = json.dumps(index).encode()
    context = browser.new_context()
    try:
        context.route("**/perf/models/*", lambda route: route.fulfill(
            status=200, body=files[route.request.url.rsplit("/", 1)[1].split("?")[0]],
            headers={"content-type": "application/octet-stream", "cross-origin-resource-policy": "same-origin"}))
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{dev_server}/perf/")
        page.wait_for_function("window.perf && window.perf.ready")
        for name in index:
            r = page.evaluate("(name) => perf.run(name, {reps: 2, warmup: 1, seconds: 20, returnOutputs: true})", name)
            graph = gf.load(tmp_path / f"{name}.json")
            feeds = {n: np.frombuffer(base64.b64decode(v), np.float32).reshape(graph.inputs[n]["shape"])
                     for n, v in r["inputs"].items()}
            want = prepare(gf.replay(graph)).run(feeds)
            assert r["impls"]["polyfill"]["runs"] == 2
            for out, arr in want.items():
                got = np.frombuffer(base64.b64decode(r["outputs"][out]), np.float32).reshape(arr.shape)
                np.testing.assert_allclose(got, arr, rtol=1e-5, atol=1e-6)
    finally:
        context.close()
