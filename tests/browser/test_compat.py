"""docs/compatibility.md's table, row by row, in the default (Chromium-compatible) mode and in strict mode
(data-strict: the draft's behaviour).  The rows are read from the document: a row without a check here, or a
check without a row there, fails.  Strict mode is also reached through WEBNN_POLYFILL_CONFIG.strict (the clients
page with ?strict), where both real clients fail in the draft's known ways."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pages import open_page

pytestmark = pytest.mark.browser

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"

# `implementation`: 'polyfill', or 'native' for the Chromium column (the global MLGraphBuilder routes by context)
OBSERVE_JS = r"""
async (implementation) => {
  const P = webnnPolyfill;
  const ml = implementation === 'native' ? P.native : P.ml;
  const ctx = await ml.createContext();
  const attempt = async (fn) => { try { const v = await fn(); return v === undefined ? 'ok' : v; } catch (e) { return e.name; } };
  const obs = {strict: P.strict};
  const b = new MLGraphBuilder(ctx);
  const x = b.input('x', {dataType: 'float32', shape: [2]});
  const g = await b.build({y: b.relu(x)});
  obs['MLGraph.devices'] = {onPrototype: 'devices' in Object.getPrototypeOf(g),
                            value: g.devices === undefined ? null : Array.from(g.devices),
                            frozen: g.devices !== undefined && Object.isFrozen(g.devices)};
  const tin = await ctx.createTensor({dataType: 'float32', shape: [2], writable: true});
  const tout = await ctx.createTensor({dataType: 'float32', shape: [2], readable: true});
  obs['writeTensor(tensor, inputData) view type'] = [
    await attempt(() => ctx.writeTensor(tin, new DataView(new ArrayBuffer(8)))),
    await attempt(() => ctx.writeTensor(tin, new Float64Array(1))),
    await attempt(() => ctx.writeTensor(tin, new Int8Array(new Float32Array([-1, 2]).buffer))),
    await attempt(() => ctx.writeTensor(tin, new Int8Array(4)))];  // right type, wrong byte length: never
  ctx.writeTensor(tin, new Float32Array([-1, 2]));
  ctx.dispatch(g, {x: tin}, {y: tout});
  obs['readTensor(tensor, outputData) view type'] = [
    await attempt(async () => { const v = new Int8Array(8); await ctx.readTensor(tout, v); return Array.from(new Float32Array(v.buffer)); }),
    await attempt(async () => { const v = new DataView(new ArrayBuffer(8)); await ctx.readTensor(tout, v); return v.getFloat32(4, true); })];
  const limits = ctx.opSupportLimits();
  const pb = new MLGraphBuilder(ctx);
  const x5 = pb.input('x5', {dataType: 'float32', shape: [1, 1, 5, 5]});
  const pool = {windowDimensions: [2, 2], strides: [2, 2]};  // 5x5 -> 2x2 rounded down, 3x3 rounded up
  obs['MLPool2dOptions.outputShapeRounding'] = ['roundingType', 'outputShapeRounding'].map(
    (member) => pb.averagePool2d(x5, {...pool, [member]: 'ceil'}).shape);
  obs['MLContext.accelerated'] = {onPrototype: 'accelerated' in Object.getPrototypeOf(ctx), value: String(ctx.accelerated)};
  obs['createContext({deviceType})'] = [
    await attempt(async () => { (await ml.createContext({deviceType: 'gpu'})).destroy(); }),
    await attempt(async () => { (await ml.createContext({deviceType: 'xpu'})).destroy(); })];
  obs['MLContext.compute()'] = typeof ctx.compute;
  obs['MLContext.createExportableTensor(), MLContext.exportToGPU()'] = [typeof ctx.createExportableTensor, typeof ctx.exportToGPU];
  obs['MLTensor.gpuDevice'] = 'gpuDevice' in tin;
  obs['int4 data type'] = ['input', 'constant', 'output'].map((k) => limits[k].dataTypes.includes('int4'));
  const rb = new MLGraphBuilder(ctx);
  const first = rb.input('input', {dataType: 'float32', shape: [2]});
  let again = null;
  const second = await attempt(() => { again = rb.input('input', {dataType: 'float32', shape: [2]}); });
  obs['input(name, descriptor) with a name already used'] = [second, again
    ? await attempt(async () => { await rb.build({y: rb.add(first, again)}); })
    : 'not reached'];
  // [10, 20] resampled to 5 columns: the source coordinate of the middle column is exactly 0.5
  obs['resample2d nearest-neighbor ties'] = await attempt(async () => {
    const gb = new MLGraphBuilder(ctx);
    const y = gb.resample2d(gb.input('x', {dataType: 'float32', shape: [1, 1, 1, 2]}), {sizes: [1, 5]});
    const g1 = await gb.build({y});
    const ti = await ctx.createTensor({dataType: 'float32', shape: [1, 1, 1, 2], writable: true});
    const to = await ctx.createTensor({dataType: 'float32', shape: [1, 1, 1, 5], readable: true});
    ctx.writeTensor(ti, new Float32Array([10, 20]));
    ctx.dispatch(g1, {x: ti}, {y: to});
    return Array.from(new Float32Array(await ctx.readTensor(to)));
  });
  obs['MLOperandDescriptor without shape'] = [
    await attempt(() => new MLGraphBuilder(ctx).input('x', {dataType: 'float16', dimensions: [1]})),
    await attempt(() => ctx.createTensor({dataType: 'float32', dimensions: [1]}))];
  const rank9 = {dataType: 'int8', shape: [1, 1, 1, 1, 1, 1, 1, 1, 1]};
  obs['rank above rankRange.max'] = [limits.input.rankRange.max,
    await attempt(() => new MLGraphBuilder(ctx).input('x', rank9)),
    await attempt(() => new MLGraphBuilder(ctx).constant(rank9, new Int8Array(1))),
    await attempt(() => ctx.createTensor(rank9))];
  obs['int64 reductions'] = await attempt(async () => {
    const gb = new MLGraphBuilder(ctx);
    const x = gb.input('x', {dataType: 'int64', shape: [2]});
    const g1 = await gb.build({s: gb.reduceSum(x), p: gb.reduceProduct(x)});
    const ti = await ctx.createTensor({dataType: 'int64', shape: [2], writable: true});
    const ts = await ctx.createTensor({dataType: 'int64', shape: [], readable: true});
    const tp = await ctx.createTensor({dataType: 'int64', shape: [], readable: true});
    ctx.writeTensor(ti, new BigInt64Array([2n ** 53n + 1n, 3n]));  // float64 holds neither 2^53 + 1 nor 3 * 2^53 + 3
    ctx.dispatch(g1, {x: ti}, {s: ts, p: tp});
    return Promise.all([ts, tp].map(async (t) => String(new BigInt64Array(await ctx.readTensor(t))[0])));
  });
  ctx.destroy();
  return obs;
}
"""

ROUNDS_UP, ROUNDS_DOWN = [1, 1, 3, 3], [1, 1, 2, 2]
MODES = ("chromium", "default", "strict")
# row -> observed on (native Chromium 153, the polyfill by default, the polyfill in strict mode)
EXPECTED: dict[str, tuple[Any, Any, Any]] = {
    "MLGraph.devices": ({"onPrototype": True, "value": ["cpu"], "frozen": True},
                        {"onPrototype": True, "value": ["cpu"], "frozen": True},
                        {"onPrototype": False, "value": None, "frozen": False}),
    "readTensor(tensor, outputData) view type": ([[0, 2], 2], [[0, 2], 2], ["TypeError", "TypeError"]),
    "writeTensor(tensor, inputData) view type": (["ok", "ok", "ok", "TypeError"], ["ok", "ok", "ok", "TypeError"],
                                                 ["TypeError"] * 4),
    "MLContext.accelerated": ({"onPrototype": False, "value": "undefined"}, {"onPrototype": False, "value": "undefined"},
                              {"onPrototype": True, "value": "false"}),
    "createContext({deviceType})": (["ok", "TypeError"], ["ok", "TypeError"], ["ok", "ok"]),
    "MLContext.compute()": ("undefined", "function", "undefined"),
    "MLContext.createExportableTensor(), MLContext.exportToGPU()": (["function"] * 2, ["function"] * 2,
                                                                    ["undefined"] * 2),
    "MLTensor.gpuDevice": (True, True, False),
    "int4 data type": ([True] * 3, [False] * 3, [False] * 3),
    "input(name, descriptor) with a name already used": (["ok", "TypeError"], ["ok", "TypeError"],
                                                         ["TypeError", "not reached"]),
    "resample2d nearest-neighbor ties": ([10, 10, 20, 20, 20], [10, 10, 10, 20, 20], [10, 10, 10, 20, 20]),
}


# observed the same on all three (the list under "Same in Chromium and the draft"): checked with the rows
SAME: dict[str, Any] = {
    # the draft's outputShapeRounding is read; the old name roundingType is an unknown member, ignored
    "MLPool2dOptions.outputShapeRounding": [ROUNDS_DOWN, ROUNDS_UP],
    # shape is a required member; an earlier draft's dimensions is an unknown one
    "MLOperandDescriptor without shape": ["TypeError", "TypeError"],
    # rank 9 > opSupportLimits().input.rankRange.max: refused by input(), constant() and createTensor() themselves
    "rank above rankRange.max": [8, "TypeError", "TypeError", "TypeError"],
    # the draft lists int64 and uint64 for reduceSum and reduceProduct: exact past 2^53
    "int64 reductions": [str(2**53 + 4), str(3 * 2**53 + 3)],
}


def table_rows() -> list[str]:
    """First cells of docs/compatibility.md's deviation table, without the code backticks."""
    rows = []
    in_table = False
    for line in DOC.read_text().splitlines():
        if line.startswith("| member / behaviour |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if in_table and not line.startswith("| ---"):
            rows.append(line.split("|")[1].strip().replace("`", ""))
    return rows


def test_every_table_row_has_a_check_and_back() -> None:
    rows = table_rows()
    assert len(rows) >= 8
    assert set(rows) == set(EXPECTED), (sorted(set(rows) - set(EXPECTED)), sorted(set(EXPECTED) - set(rows)))


def _check_column(page: Any, implementation: str, mode: str) -> None:
    obs = page.evaluate(OBSERVE_JS, implementation)
    assert obs.pop("strict") is (mode == "strict")
    which = MODES.index(mode)
    expected = {**{row: want[which] for row, want in EXPECTED.items()}, **SAME}
    wrong = {row: {"got": obs.get(row), "want": want} for row, want in expected.items() if obs.get(row) != want}
    assert not wrong, wrong


@pytest.mark.parametrize("mode", ["default", "strict"])
def test_each_deviation_in_default_and_strict_mode(mode: str, browser_name: str, request: pytest.FixtureRequest) -> None:
    page = request.getfixturevalue("webnn_page" if mode == "default" else "webnn_strict_page")
    _check_column(page, "polyfill", mode)


def test_the_chromium_column_on_native_chromium(browser_name: str, request: pytest.FixtureRequest) -> None:
    """The table's Chromium column, measured on the npm Chromium 153's native WebNN (make setup installs it)."""
    if browser_name != "chromium":
        pytest.skip("the Chromium column is measured in Chromium")
    _check_column(request.getfixturevalue("native_webnn_page"), "native", "chromium")


LITERT_JS = r"""
async () => {
  const shape = [1, 224, 224, 3];
  try {
    await clients.runLiteRt({model: '/models/hand_landmark_lite.tflite', backend: 'webnn-polyfill',
                             inputs: [{data: clients.patternInput(shape), shape}]});
    return {strict: webnnPolyfill.strict, outcome: 'ran'};
  } catch (e) {
    return {strict: webnnPolyfill.strict, outcome: `${e.name}: ${e.message}`};
  }
}
"""


# ORT reads a partly delegated model's WebNN outputs into an Int8Array view of its heap; the draft's TypeError
# rejects a promise ORT never handles, so session.run() hangs: watch for that rejection instead of waiting.
ORT_JS = r"""
async () => {
  const shape = [1, 12, 16];
  const unhandled = new Promise((resolve) => addEventListener('unhandledrejection', (e) => {
    e.preventDefault();
    resolve(`unhandled ${e.reason && e.reason.name}: ${e.reason && e.reason.message}`);
  }, {once: true}));
  const run = clients.runOrt({model: '/clients/models/lstm_gru.onnx', backend: 'webnn-polyfill',
                              inputs: {input: {data: clients.patternInput(shape), shape}}})
    .then(() => 'ran', (e) => `rejected ${e.name}: ${e.message}`);
  const late = new Promise((resolve) => setTimeout(() => resolve('neither ran nor failed in 60 s'), 60000));
  return Promise.race([run, unhandled, late]);
}
"""


def test_strict_mode_from_the_config_object_breaks_both_clients(
        browser: Any, dev_server: str, client_models: dict[str, Any]) -> None:
    """WEBNN_POLYFILL_CONFIG.strict gives the draft, and both clients then fail: LiteRT.js
    cannot read MLGraph.devices; ORT's run of a partly delegated model never settles (readTensor's view type)."""
    context = browser.new_context()
    try:
        page, _ = open_page(context, f"{dev_server}/clients/?strict", 180_000)
        page.wait_for_function("window.clientsReady === true")
        assert page.evaluate("webnnPolyfill.strict") is True
        ort = page.evaluate(ORT_JS)
        litert = page.evaluate(LITERT_JS) if page.evaluate("clients.hasJspi()") else None
    finally:
        context.close()
    assert ort.startswith("unhandled TypeError") and "Int8Array" in ort, ort
    if litert is None:
        pytest.skip("no JSPI here: LiteRT.js has no WebNN delegate in this browser")
    # Chromium: "Cannot read properties of undefined (reading 'length')"; Firefox: "... is undefined"
    assert litert["outcome"].startswith("TypeError") and re.search(r"length|undefined", litert["outcome"]), litert
