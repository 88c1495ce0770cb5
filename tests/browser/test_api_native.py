"""Side by side with native WebNN: Chromium started with the WebNN feature exposes navigator.ml and the WebNN
interfaces, while the polyfill stays at webnnPolyfill (or replaces them with data-install="replace").  Mixing a
native object into the polyfill, or a polyfill object into native WebNN, is a clear TypeError; neither side
breaks the other.

Each test runs in two Chromiums: Debian's, whose native createContext() rejects (no TFLite backend), so the
mixing checks use objects of the native interfaces (their prototypes); and the npm Chromium 153 that make setup
installs (`chromium-npm`), whose native WebNN works, so the same checks also run on real native objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from web.browsers import launch_args

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", params=["debian", "npm"], ids=["native-unusable", "native-usable"])
def native_browser(request: pytest.FixtureRequest, browser_name: str, playwright: Any) -> Iterator[Any]:
    if browser_name != "chromium":
        pytest.skip("native WebNN is a Chromium feature (Firefox has no navigator.ml)")
    if request.param == "npm":
        browser = request.getfixturevalue("native_chromium_browser")
        browser.webnn_usable = True
        yield browser
        return
    browser = playwright.chromium.launch(**launch_args("chromium", native_webnn=True))
    browser.webnn_usable = False
    yield browser
    browser.close()


def _page(browser: Any, url: str) -> Any:
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.webnn_errors = []
    page.on("pageerror", lambda e: page.webnn_errors.append(str(e)))
    page.goto(url)
    if not page.evaluate("() => !!webnnPolyfill.native"):
        pytest.skip("this Chromium build does not expose navigator.ml even with the WebNN feature")
    return page


SIDE_BY_SIDE_JS = r"""
async () => {
  const P = webnnPolyfill;
  const N = navigator.ml;
  const r = {checks: []};
  const check = async (name, fn, expected, pattern) => {
    let got, message = '';
    try {
      const v = fn();
      if (v && typeof v.then === 'function') {
        try { await v; got = 'resolve'; } catch (e) { got = `reject:${e.name}`; message = e.message; }
      } else got = 'ok';
    } catch (e) { got = `throw:${e.name}`; message = e.message; }
    const pass = got === expected && (!pattern || new RegExp(pattern, 'i').test(message));
    r.checks.push({name, expected, got, message, pass});
  };
  r.state = {
    nativeIsNavigator: N === P.native && N !== P.ml, installed: P.installed,
    // the interface objects stay the browser's; MLGraphBuilder routes by context over the native prototype
    globalsNative: typeof MLGraphBuilder === 'function' && MLGraphBuilder !== P.MLGraphBuilder
      && /\[native code\]/.test(Function.prototype.toString.call(MLGraphBuilder.prototype.constructor))
      && ['ML', 'MLContext', 'MLGraph', 'MLOperand', 'MLTensor'].every(
        (n) => /\[native code\]/.test(Function.prototype.toString.call(globalThis[n]))),
    nativeTag: Object.prototype.toString.call(N),
  };
  let nativeCtx = null;
  try { nativeCtx = await N.createContext(); r.nativeUsable = true; }
  catch (e) { r.nativeUsable = false; r.nativeError = {name: e.name, message: e.message}; }

  const ctx = await P.ml.createContext();
  const pb = new P.MLGraphBuilder(ctx);
  const px = pb.input('x', {dataType: 'float32', shape: [4]});
  const graph = await pb.build({y: pb.relu(px)});
  const xt = await ctx.createTensor({dataType: 'float32', shape: [4], writable: true});
  const yt = await ctx.createTensor({dataType: 'float32', shape: [4], readable: true});
  const pb2 = new P.MLGraphBuilder(ctx);
  const px2 = pb2.input('x', {dataType: 'float32', shape: [4]});

  // Objects of the native interfaces: real ones when a native context exists, else native-prototype objects.
  let nOperand = Object.create(MLOperand.prototype), nTensor = Object.create(MLTensor.prototype);
  let nGraph = Object.create(MLGraph.prototype), nContext = nativeCtx || Object.create(MLContext.prototype);
  let nBuilder = null;
  if (nativeCtx) {
    nBuilder = new MLGraphBuilder(nativeCtx);
    nOperand = nBuilder.input('x', {dataType: 'float32', shape: [4]});
    nTensor = await nativeCtx.createTensor({dataType: 'float32', shape: [4], readable: true, writable: true});
    const nb2 = new MLGraphBuilder(nativeCtx);
    nGraph = await nb2.build({y: nb2.relu(nb2.input('x', {dataType: 'float32', shape: [4]}))});
  }
  const HINT = 'another WebNN implementation';

  // native objects into the polyfill
  await check('polyfill MLGraphBuilder(native context)', () => new P.MLGraphBuilder(nContext), 'throw:TypeError', HINT);
  await check('polyfill operator with a native operand', () => pb2.add(px2, nOperand), 'throw:TypeError', HINT);
  await check('polyfill build with a native operand', () => pb2.build({y: nOperand}), 'reject:TypeError', HINT);
  await check('polyfill dispatch with a native graph', () => ctx.dispatch(nGraph, {x: xt}, {y: yt}), 'throw:TypeError', HINT);
  await check('polyfill dispatch with a native input tensor', () => ctx.dispatch(graph, {x: nTensor}, {y: yt}), 'throw:TypeError', HINT);
  await check('polyfill readTensor of a native tensor', () => ctx.readTensor(nTensor), 'reject:TypeError', HINT);
  await check('polyfill writeTensor of a native tensor', () => ctx.writeTensor(nTensor, new Float32Array(4)), 'throw:TypeError', HINT);
  await check('polyfill constant(native tensor)', () => pb2.constant(nTensor), 'throw:TypeError', HINT);

  // polyfill objects into native WebNN
  await check('native MLGraphBuilder(polyfill context)', () => new MLGraphBuilder.prototype.constructor(ctx), 'throw:TypeError');
  await check('native dispatch called on a polyfill context', () => MLContext.prototype.dispatch.call(ctx, graph, {x: xt}, {y: yt}), 'throw:TypeError');
  await check('native readTensor called on a polyfill context', () => MLContext.prototype.readTensor.call(ctx, yt), 'reject:TypeError');
  await check('native input() called on a polyfill builder', () => MLGraphBuilder.prototype.input.call(pb2, 'z', {dataType: 'float32', shape: [1]}), 'throw:TypeError');
  await check('native MLTensor.destroy on a polyfill tensor', () => MLTensor.prototype.destroy.call(yt), 'throw:TypeError');
  await check('native MLOperand.shape getter on a polyfill operand', () => Object.getOwnPropertyDescriptor(MLOperand.prototype, 'shape').get.call(px2), 'throw:TypeError');
  if (nativeCtx) {
    await check('native dispatch with a polyfill graph', () => nativeCtx.dispatch(graph, {x: nTensor}, {y: nTensor}), 'throw:TypeError');
    await check('native dispatch with a polyfill tensor', () => nativeCtx.dispatch(nGraph, {x: xt}, {y: nTensor}), 'throw:TypeError');
    await check('native operator with a polyfill operand', () => nBuilder.add(nOperand, px2), 'throw:TypeError');
  }

  // neither side is broken afterwards
  ctx.writeTensor(xt, new Float32Array([-1, 2, -3, 4]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  r.polyfillResult = Array.from(new Float32Array(await ctx.readTensor(yt)));
  try { await N.createContext(); r.nativeAfter = 'resolve'; } catch (e) { r.nativeAfter = `reject:${e.name}`; }
  r.pageErrors = [];
  ctx.destroy();
  return r;
}
"""


def test_polyfill_and_native_side_by_side_and_mixing_is_a_type_error(native_browser: Any, dev_server: str) -> None:
    page = _page(native_browser, f"{dev_server}/test/smoke.html")
    r = page.evaluate(SIDE_BY_SIDE_JS)
    assert r["state"] == {"nativeIsNavigator": True, "installed": False, "globalsNative": True,
                          "nativeTag": "[object ML]"}
    assert r["nativeUsable"] == native_browser.webnn_usable, r.get("nativeError")
    if not r["nativeUsable"]:
        # reported, not thrown at the page: Debian's Chromium has no WebNN backend
        assert r["nativeError"]["name"] == "NotSupportedError", r["nativeError"]
        print(f"native createContext() unavailable here: {r['nativeError']['name']}: {r['nativeError']['message']} "
              "(mixing checked with objects of the native interfaces)")
    failed = [f"{c['name']}: expected {c['expected']}, got {c['got']} ({c['message']})" for c in r["checks"] if not c["pass"]]
    assert not failed, "\n".join(failed)
    assert r["polyfillResult"] == [0, 2, 0, 4]
    assert r["nativeAfter"] == ("resolve" if r["nativeUsable"] else "reject:NotSupportedError")
    _check_routing(page, native_browser.webnn_usable)
    assert not page.webnn_errors


REPLACE_JS = r"""
async () => {
  const P = webnnPolyfill;
  let nativeAfter;
  try { await P.native.createContext(); nativeAfter = 'resolve'; } catch (e) { nativeAfter = `reject:${e.name}`; }
  return {
    installed: P.installed, navigatorIsPolyfill: navigator.ml === P.ml,
    nativeTag: Object.prototype.toString.call(P.native), nativeIsNative: P.native !== P.ml,
    globalsPolyfill: ['ML', 'MLContext', 'MLGraph', 'MLOperand', 'MLTensor'].every((n) => globalThis[n] === P[n])
      && MLGraphBuilder.prototype === P.MLGraphBuilder.prototype,
    nativeAfter,
  };
}
"""


def test_data_install_replace_takes_the_global_names_and_keeps_native_reachable(
        native_browser: Any, dev_server: str) -> None:
    page = _page(native_browser, f"{dev_server}/test/replace.html")
    r = page.evaluate(REPLACE_JS)
    assert r["installed"] and r["navigatorIsPolyfill"] and r["globalsPolyfill"]
    assert r["nativeTag"] == "[object ML]" and r["nativeIsNative"]
    assert r["nativeAfter"] == ("resolve" if native_browser.webnn_usable else "reject:NotSupportedError")
    _check_routing(page, native_browser.webnn_usable)
    assert not page.webnn_errors


ROUTING_JS = r"""
async () => {
  const P = webnnPolyfill;
  const r = {mode: P.installed ? 'polyfill holds the names' : 'native holds the names', errors: []};
  const threw = (fn) => { try { fn(); return 'ok'; } catch (e) { return e.name; } };
  const relu = async (ctx, b) => {
    const x = b.input('x', {dataType: 'float32', shape: [4]});
    const g = await b.build({y: b.relu(x)});
    const t = await ctx.createTensor({dataType: 'float32', shape: [4], writable: true});
    const o = await ctx.createTensor({dataType: 'float32', shape: [4], readable: true});
    ctx.writeTensor(t, new Float32Array([-1, 2, -3, 4]));
    ctx.dispatch(g, {x: t}, {y: o});
    const out = Array.from(new Float32Array(await ctx.readTensor(o)));
    return {out, x, g, t};
  };
  // a client's way: the global constructor, given a polyfill context
  const ctx = await P.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  // what a client sees of one implementation's objects, built through the global constructor
  const seen = async (c, builder, ml) => {
    const run = await relu(c, builder);
    return {
      result: run.out, builderIsPolyfill: builder instanceof P.MLGraphBuilder,
      builderInstanceofGlobal: builder instanceof MLGraphBuilder,
      instanceofGlobals: [c instanceof MLContext, run.g instanceof MLGraph, run.x instanceof MLOperand,
                          run.t instanceof MLTensor, ml instanceof ML],
    };
  };
  r.polyfill = await seen(ctx, b, P.ml);
  r.plainObjects = [{} instanceof MLGraphBuilder, {} instanceof MLContext, {} instanceof MLTensor, 1 instanceof MLGraph];
  r.withoutNew = threw(() => MLGraphBuilder(ctx));
  r.notAContext = threw(() => new MLGraphBuilder({}));
  r.shape = {name: MLGraphBuilder.name, length: MLGraphBuilder.length,
             protoHasOps: typeof MLGraphBuilder.prototype.conv2d === 'function'};
  class Sub extends MLGraphBuilder {}
  r.subclass = Object.getPrototypeOf(new Sub(ctx)) === Sub.prototype;
  ctx.destroy();
  // and the browser's own, when it has a usable one
  let nctx = null;
  try { nctx = P.native && await P.native.createContext(); } catch (e) { r.nativeError = e.name; }
  if (nctx) {
    r.native = await seen(nctx, new MLGraphBuilder(nctx), P.native);
    nctx.destroy();
  }
  return r;
}
"""


def _check_routing(page: Any, native_usable: bool) -> None:
    """new MLGraphBuilder(ctx) builds with the implementation that owns ctx, whoever holds the global names;
    instanceof on the global interfaces is true for the objects of both."""
    r = page.evaluate(ROUTING_JS)
    good = {"result": [0, 2, 0, 4], "builderInstanceofGlobal": True, "instanceofGlobals": [True] * 5}
    assert r["polyfill"] == {**good, "builderIsPolyfill": True}, r
    assert r["plainObjects"] == [False] * 4
    assert r["withoutNew"] == "TypeError" and r["notAContext"] == "TypeError"
    assert r["shape"] == {"name": "MLGraphBuilder", "length": 1, "protoHasOps": True}
    assert r["subclass"]
    assert ("native" in r) == native_usable, r.get("nativeError")
    if native_usable:
        assert r["native"] == {**good, "builderIsPolyfill": False}, r
    print(f"{r['mode']}: native WebNN {'usable: routed both ways' if native_usable else r.get('nativeError', 'absent')}")


def test_global_builder_without_a_native_webnn(webnn_page: Any) -> None:
    """The shared page of either browser, without navigator.ml (Firefox; Chromium without its WebNN feature):
    the polyfill holds the names, and the same routing checks hold."""
    assert webnn_page.evaluate("() => webnnPolyfill.installed && !webnnPolyfill.native")
    _check_routing(webnn_page, native_usable=False)
