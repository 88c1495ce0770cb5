"""data-boot="eager" (WEBNN_POLYFILL_CONFIG.boot, the bench page's ?boot=eager): the polyfill boots as its script
runs, with no createContext() or boot() call from the page, and the first createContext() then uses that boot;
without it nothing starts until the page asks."""

from __future__ import annotations

from typing import Any

import pytest
from pages import BOOT_TIMEOUT_MS, open_page

pytestmark = pytest.mark.browser

BUILD = """async () => {
  const ctx = await navigator.ml.createContext();
  const b = new MLGraphBuilder(ctx);
  const x = b.input('x', {dataType: 'float32', shape: [2]});
  const graph = await b.build({y: b.relu(x)});
  const xt = await ctx.createTensor({dataType: 'float32', shape: [2], writable: true});
  const yt = await ctx.createTensor({dataType: 'float32', shape: [2], readable: true});
  ctx.writeTensor(xt, new Float32Array([-1, 2]));
  ctx.dispatch(graph, {x: xt}, {y: yt});
  return Array.from(new Float32Array(await ctx.readTensor(yt)));
}"""


def test_eager_boot_starts_without_a_call_and_lazy_does_not(browser: Any, dev_server: str) -> None:
    context = browser.new_context()
    try:
        lazy, errors = open_page(context, f"{dev_server}/perf/", BOOT_TIMEOUT_MS)
        lazy.wait_for_function("() => window.perf && window.perf.ready")
        assert lazy.evaluate("() => Object.keys(webnnPolyfill.bootTimings)") == []
        lazy.close()
        eager, errors = open_page(context, f"{dev_server}/perf/?boot=eager", BOOT_TIMEOUT_MS)
        # both Pyodides come up with no call from the page
        eager.wait_for_function("() => 'total' in webnnPolyfill.bootTimings")
        timings = eager.evaluate("() => webnnPolyfill.bootTimings")
        assert {"page-core", "worker-core"} <= set(timings)
        assert eager.evaluate(BUILD) == [0, 2]
        # the same boot: its stage times unchanged
        assert eager.evaluate("() => webnnPolyfill.bootTimings['worker-core']") == timings["worker-core"]
        assert not errors
        eager.close()
    finally:
        context.close()
