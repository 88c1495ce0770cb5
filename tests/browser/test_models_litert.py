"""The five MediaPipe models in real browsers: recorded by the TFLite loader, replayed against the polyfill's
MLGraphBuilder in the page, run on the same preprocessed photo as tests/core/test_tflite_models.py, and every
output compared with native LiteRT under that file's per-model tolerance table (max absolute error).  The same
programs also run on native WebNN in the npm Chromium (chromium-npm, installed by make setup), in the page
that runs the polyfill, each judged against LiteRT on the CPU, so a difference is charged to whichever is off."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.browser

pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert.interpreter")
pytest.importorskip("skimage.data")

from py_core.loaders.recording import record_tflite  # noqa: E402
from web import mediapipe_reference as core_models  # noqa: E402
from web.mediapipe_models import model_path  # noqa: E402
from web.served_files import ServedFiles  # noqa: E402

RUN_JS = r"""
async ({name, outputs, native = false}) => {
  const {buildGraph, descriptors} = await import('/lib/graphfile.js');
  const fetchBytes = async (what) => (await fetch(`/__files/models_litert/${name}.${what}`)).arrayBuffer();
  const program = JSON.parse(new TextDecoder().decode(await fetchBytes('json')));
  const [weights, input] = await Promise.all([fetchBytes('bin'), fetchBytes('input')]);
  const ctx = native ? window.__nctx : window.__ctx;
  const graph = await buildGraph(program, weights, ctx, native ? MLGraphBuilder : webnnPolyfill.MLGraphBuilder);
  const [inName, inDesc] = Object.entries(program.inputs)[0];
  const inTensor = await ctx.createTensor({dataType: inDesc.dataType, shape: inDesc.shape, writable: true});
  const descs = descriptors(program);
  const outTensors = {};
  for (const o of outputs) {
    const d = descs[program.outputs[o]];
    outTensors[o] = await ctx.createTensor({dataType: d.dataType, shape: d.shape, readable: true});
  }
  ctx.writeTensor(inTensor, new Float32Array(input));
  const t0 = performance.now();
  ctx.dispatch(graph, {[inName]: inTensor}, outTensors);
  const result = {};
  for (const o of outputs) {
    const bytes = new Uint8Array(await ctx.readTensor(outTensors[o]));
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    result[o] = btoa(s);
  }
  return {outputs: result, ms: performance.now() - t0};
}
"""


def _run(page: Any, served_files: ServedFiles, name: str,
         native: bool = False) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], float]:
    """The model on one implementation of the page: (outputs, LiteRT's outputs, ms of one dispatch + read)."""
    x = core_models.model_input(name)
    reference = core_models.litert_outputs(name, x)
    graph = record_tflite(model_path(name), name)
    for what, body in (("json", graph.dumps().encode()), ("bin", graph.weights), ("input", x.tobytes())):
        served_files.put(f"models_litert/{name}.{what}", body)
    out = page.evaluate(RUN_JS, {"name": name, "outputs": list(reference), "native": native})
    got = {o: np.frombuffer(base64.b64decode(out["outputs"][o]), np.float32).reshape(ref.shape)
           for o, ref in reference.items()}
    return got, reference, float(out["ms"])


def _errors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> dict[str, float]:
    return {o: float(np.abs(got[o].astype(np.float64) - want[o].astype(np.float64)).max()) for o in want}


@pytest.mark.parametrize("name", list(core_models.TOLERANCE))
def test_model_outputs_match_litert_in_the_browser(name: str, webnn_page: Any, served_files: ServedFiles,
                                                   browser_name: str) -> None:
    ours, reference, ms = _run(webnn_page, served_files, name)
    for output, err in _errors(ours, reference).items():
        print(f"{browser_name} {name} {output}: max abs error {err:.3g} vs LiteRT ({ms:.0f} ms)")
        assert err <= core_models.TOLERANCE[name][output], f"{name} {output}: max abs error {err:.3g}"


@pytest.mark.parametrize("name", list(core_models.TOLERANCE))
def test_model_on_native_webnn_beside_the_polyfill(name: str, native_webnn_page: Any, served_files: ServedFiles,
                                                   browser_name: str) -> None:
    """Polyfill and native WebNN in one page of the npm Chromium, each against LiteRT (the CPU reference)."""
    if browser_name != "chromium":
        pytest.skip("runs once, in the npm Chromium (chromium-npm) that has a usable native WebNN")
    ours, reference, ms = _run(native_webnn_page, served_files, name)
    theirs, _, native_ms = _run(native_webnn_page, served_files, name, native=True)
    mine, native = _errors(ours, reference), _errors(theirs, reference)
    between = _errors(ours, theirs)
    for output in reference:
        print(f"chromium-npm {name} {output}: vs LiteRT polyfill {mine[output]:.3g} ({ms:.0f} ms), native "
              f"{native[output]:.3g} ({native_ms:.0f} ms); polyfill vs native {between[output]:.3g}")
    tol = core_models.TOLERANCE[name]
    assert all(mine[o] <= tol[o] for o in reference), f"polyfill out of tolerance vs LiteRT: {mine}"
    assert all(native[o] <= tol[o] for o in reference), f"native WebNN out of tolerance vs LiteRT: {native}"
