"""WebGPU interop in Chromium's shape: createContext(GPUDevice), createExportableTensor(),
exportToGPU(), MLTensor.gpuDevice and the rental of an exported tensor, on a real WebGPU device (Chromium with
--enable-unsafe-webgpu gives SwiftShader's adapter).  One browser and one booted page for the module; the Firefox
test (no WebGPU there) runs on the shared page with `--browser firefox`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pages import POLYFILL_BOOT, booted_page, open_page

from web import samples
from web.browsers import launch_args

pytestmark = pytest.mark.browser

WEBGPU_FLAG = "--enable-unsafe-webgpu"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def webgpu_page(browser_name: str, playwright: Any, dev_server: str) -> Iterator[Any]:
    """A Chromium of its own with WebGPU (SwiftShader), the polyfill booted; `window.__device` a GPUDevice."""
    if browser_name != "chromium":
        pytest.skip("WebGPU (SwiftShader's adapter) is reached through Chromium's --enable-unsafe-webgpu")
    kw = launch_args("chromium")
    kw["args"] = [*kw["args"], WEBGPU_FLAG]
    kw.setdefault("headless", True)
    browser = playwright.chromium.launch(**kw)
    boot = ("async () => { const a = navigator.gpu && await navigator.gpu.requestAdapter();"
            " window.__device = a && await a.requestDevice(); " + POLYFILL_BOOT[len("async () => { "):])
    try:
        with booted_page(browser, f"{dev_server}/test/smoke.html", boot) as page:
            if not page.evaluate("() => !!window.__device"):
                pytest.skip("this Chromium gives no WebGPU adapter even with --enable-unsafe-webgpu")
            yield page
    finally:
        browser.close()


# Shared helpers: read a GPUBuffer through a MAP_READ staging copy; run a WGSL shader over a float32 buffer.
HELPERS_JS = r"""
window.readGPU = async (device, buffer, size) => {
  const staging = device.createBuffer({size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const bytes = new Uint8Array(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  return bytes;
};
// data[i] = data[i] * 10 + i, in place, by a compute shader
window.scaleOnGPU = (device, buffer, count) => {
  const module = device.createShaderModule({code: `
    @group(0) @binding(0) var<storage, read_write> data: array<f32>;
    @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
      if (id.x < arrayLength(&data)) { data[id.x] = data[id.x] * 10.0 + f32(id.x); }
    }`});
  const pipeline = device.createComputePipeline({layout: 'auto', compute: {module, entryPoint: 'main'}});
  const bind = device.createBindGroup({layout: pipeline.getBindGroupLayout(0),
                                       entries: [{binding: 0, resource: {buffer}}]});
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(Math.ceil(count / 64));
  pass.end();
  device.queue.submit([encoder.finish()]);
};
window.attempt = async (fn) => { try { await fn(); return 'ok'; } catch (e) { return `${e.name}: ${e.message}`; } };
"""

ROUND_TRIP_JS = r"""
async () => {
  const P = webnnPolyfill;
  const device = window.__device;
  const out = {};
  const ctx = await P.ml.createContext(device);
  out.contextTag = Object.prototype.toString.call(ctx);
  const f32 = {dataType: 'float32', shape: [2, 4]};
  const b = new P.MLGraphBuilder(ctx);
  const scalar = (v) => b.constant({dataType: 'float32', shape: []}, new Float32Array([v]));
  const g = await b.build({y: b.add(b.mul(b.input('x', f32), scalar(2)), scalar(1))});  // y = 2x + 1
  const xt = await ctx.createExportableTensor({...f32, readable: true, writable: true}, device);
  const yt = await ctx.createExportableTensor({...f32, readable: true}, device);
  const plain = await ctx.createTensor({...f32, readable: true, writable: true});
  out.gpuDevice = [xt.gpuDevice === device, yt.gpuDevice === device, plain.gpuDevice];
  ctx.writeTensor(xt, Float32Array.from({length: 8}, (_, i) => i));
  ctx.dispatch(g, {x: xt}, {y: yt});
  out.y = Array.from(new Float32Array(await ctx.readTensor(yt)));

  const before = P.webgpuStats();
  const pending = ctx.exportToGPU(yt);
  out.pendingExport = await attempt(() => ctx.exportToGPU(yt));  // Chromium: "Tensor pending export to WebGPU"
  const buffer = await pending;
  out.buffer = {isGPUBuffer: buffer instanceof GPUBuffer, usage: buffer.usage, size: buffer.size,
                same: (await ctx.exportToGPU(yt)) === buffer,
                want: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST};
  out.exported = Array.from(new Float32Array((await readGPU(device, buffer, 32)).buffer));
  // rented to WebGPU: WebNN work with it is refused, as in Chromium
  out.rented = {
    dispatchOutput: await attempt(() => ctx.dispatch(g, {x: xt}, {y: yt})),
    dispatchInput: await attempt(() => ctx.dispatch(g, {x: yt}, {y: plain})),
    read: await attempt(() => ctx.readTensor(yt)),
    readByob: await attempt(() => ctx.readTensor(yt, new Float32Array(8))),
  };
  const xb = await ctx.exportToGPU(xt);
  out.rented.write = await attempt(() => ctx.writeTensor(xt, new Float32Array(8)));
  xb.destroy();  // given back untouched
  out.midStats = P.webgpuStats();

  scaleOnGPU(device, buffer, 8);
  buffer.destroy();
  // issued right after destroy(), before WebGPU's bytes are back: they must still see them
  ctx.dispatch(g, {x: yt}, {y: plain});
  const [afterRead, afterDispatch] = await Promise.all([ctx.readTensor(yt), ctx.readTensor(plain)]);
  out.afterDestroy = Array.from(new Float32Array(afterRead));
  out.dispatchAfter = Array.from(new Float32Array(afterDispatch));
  out.destroyTwice = await attempt(() => buffer.destroy());
  out.x = Array.from(new Float32Array(await ctx.readTensor(xt)));
  const after = P.webgpuStats();
  out.stats = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
  out.midStats = Object.fromEntries(Object.keys(after).map((k) => [k, out.midStats[k] - before[k]]));

  // a second export after the return rents the tensor again, with the bytes WebNN has now
  const again = await ctx.exportToGPU(yt);
  out.secondExport = {fresh: again !== buffer,
                      bytes: Array.from(new Float32Array((await readGPU(device, again, 32)).buffer))};
  again.destroy();
  ctx.destroy();
  return out;
}
"""


def test_export_rent_and_return_through_a_wgsl_shader(webgpu_page: Any) -> None:
    webgpu_page.evaluate(f"() => {{ {HELPERS_JS} }}")
    out = webgpu_page.evaluate(ROUND_TRIP_JS)
    x = np.arange(8, dtype=np.float32)
    y = 2 * x + 1
    gpu = y * 10 + np.arange(8, dtype=np.float32)  # the shader's writes
    assert out["contextTag"] == "[object MLContext]"
    assert out["gpuDevice"] == [True, True, None]
    assert out["y"] == y.tolist()  # createContext(GPUDevice) runs graphs in the polyfill's engine
    assert out["pendingExport"].startswith("TypeError") and "pending export" in out["pendingExport"]
    buf = out["buffer"]
    assert buf["isGPUBuffer"] and buf["same"] and buf["size"] == 32
    assert buf["usage"] == buf["want"] == 0x80 | 0x04 | 0x08
    assert out["exported"] == y.tolist()
    for what, got in out["rented"].items():
        assert got.startswith("TypeError") and "exported to WebGPU" in got, (what, got)
    assert out["afterDestroy"] == gpu.tolist()
    assert out["dispatchAfter"] == (2 * gpu + 1).tolist()
    assert out["destroyTwice"] == "ok"
    assert out["x"] == x.tolist()  # xt went out and came back unchanged
    # two exports of 32 bytes (2 copies each), two returns (3 copies each), counted
    assert out["midStats"]["exports"] == 2  # the returns are counted once their bytes are back
    assert out["stats"] == {"exports": 2, "exportedBytes": 64, "returns": 2, "returnedBytes": 64, "copies": 10,
                            "lostRentals": 0}
    assert out["secondExport"] == {"fresh": True, "bytes": gpu.tolist()}


ERRORS_JS = r"""
async () => {
  const P = webnnPolyfill;
  const device = window.__device;
  const ctx = await P.ml.createContext();
  const other = await P.ml.createContext(device);
  const d = {dataType: 'float32', shape: [4], readable: true, writable: true};
  const plain = await ctx.createTensor(d);
  const foreign = await other.createExportableTensor(d, device);
  const constant = await ctx.createConstantTensor({dataType: 'float32', shape: [4]}, new Float32Array(4));
  const out = {
    noDevice: await attempt(() => ctx.createExportableTensor(d)),
    notADevice: await attempt(() => ctx.createExportableTensor(d, {})),
    fakeDevice: await attempt(() => ctx.createExportableTensor(d, Object.create(GPUDevice.prototype))),
    badDescriptor: await attempt(() => ctx.createExportableTensor({dataType: 'float32', shape: [0]}, device)),
    exportPlain: await attempt(() => ctx.exportToGPU(plain)),
    exportConstant: await attempt(() => ctx.exportToGPU(constant)),
    exportForeign: await attempt(() => ctx.exportToGPU(foreign)),
    exportNotATensor: await attempt(() => ctx.exportToGPU({})),
    lengths: [MLContext.prototype.createExportableTensor.length, MLContext.prototype.exportToGPU.length],
  };
  const dead = await ctx.createExportableTensor(d, device);
  dead.destroy();
  out.exportDestroyed = await attempt(() => ctx.exportToGPU(dead));

  // float16 x 3 is 6 bytes: the GPUBuffer is padded to a multiple of 4
  const h = await ctx.createExportableTensor({dataType: 'float16', shape: [3], writable: true}, device);
  ctx.writeTensor(h, new Uint16Array([0x3c00, 0x4000, 0x4200]));  // 1, 2, 3
  const hb = await ctx.exportToGPU(h);
  out.float16 = {size: hb.size, bytes: Array.from(await readGPU(device, hb, 8)).slice(0, 6)};
  hb.destroy();

  // a device destroyed while it holds a rented tensor: the tensor returns to WebNN with the bytes it had
  const device2 = await (await navigator.gpu.requestAdapter()).requestDevice();
  const t2 = await ctx.createExportableTensor(d, device2);
  ctx.writeTensor(t2, new Float32Array([1, 2, 3, 4]));
  const before = P.webgpuStats().lostRentals;
  await ctx.exportToGPU(t2);
  device2.destroy();
  await device2.lost;
  out.lostRentals = P.webgpuStats().lostRentals - before;
  out.afterDeviceLost = Array.from(new Float32Array(await ctx.readTensor(t2)));
  out.createOnLostDevice = await attempt(() => ctx.createExportableTensor(d, device2));
  out.contextOnLostDevice = await attempt(async () => (await P.ml.createContext(device2)).destroy());
  const fake = Object.create(GPUDevice.prototype);
  out.contextOnFake = await attempt(async () => (await P.ml.createContext(fake)).destroy());
  ctx.destroy();
  out.exportLost = await attempt(() => ctx.exportToGPU(plain));
  other.destroy();
  return out;
}
"""


def test_errors_match_chromium(webgpu_page: Any) -> None:
    webgpu_page.evaluate(f"() => {{ {HELPERS_JS} }}")
    out = webgpu_page.evaluate(ERRORS_JS)

    def is_error(key: str, name: str, *words: str) -> None:
        assert out[key].startswith(f"{name}: ") and all(w in out[key] for w in words), (key, out[key])

    is_error("noDevice", "TypeError", "2 arguments required")
    is_error("notADevice", "TypeError", "parameter 2 is not of type 'GPUDevice'")
    is_error("fakeDevice", "TypeError", "parameter 2 is not of type 'GPUDevice'")
    is_error("badDescriptor", "TypeError")
    is_error("exportPlain", "TypeError", "does not support WebGPU interop")
    is_error("exportConstant", "TypeError", "does not support WebGPU interop")
    is_error("exportForeign", "TypeError", "not created by this context")
    is_error("exportNotATensor", "TypeError", "not an MLTensor")
    is_error("exportDestroyed", "InvalidStateError", "destroyed")
    assert out["lengths"] == [2, 1]  # as the npm Chromium 153's prototypes
    assert out["float16"] == {"size": 8, "bytes": [0x00, 0x3C, 0x00, 0x40, 0x00, 0x42]}
    assert out["lostRentals"] == 1
    assert out["afterDeviceLost"] == [1, 2, 3, 4]
    is_error("createOnLostDevice", "InvalidStateError", "lost or destroyed")
    assert out["contextOnLostDevice"] == "ok"  # as the npm Chromium 153 (only createExportableTensor refuses it)
    assert out["contextOnFake"] == "ok"  # not a platform object: read as MLContextOptions, as Chromium does
    is_error("exportLost", "InvalidStateError", "lost")


NO_WEBGPU_JS = r"""
async () => {
  const attempt = async (fn) => { try { await fn(); return 'ok'; } catch (e) { return `${e.name}: ${e.message}`; } };
  const ctx = await webnnPolyfill.ml.createContext();
  const d = {dataType: 'float32', shape: [2], readable: true};
  const plain = await ctx.createTensor(d);
  const out = {
    hasGPUDevice: typeof GPUDevice === 'function',
    createExportable: await attempt(() => ctx.createExportableTensor(d, {})),
    exportPlain: await attempt(() => ctx.exportToGPU(plain)),
    gpuDevice: plain.gpuDevice,
    // a dictionary is MLContextOptions, with or without WebGPU
    createContext: await attempt(async () => (await webnnPolyfill.ml.createContext({})).destroy()),
  };
  ctx.destroy();
  return out;
}
"""


def test_without_webgpu_the_polyfill_says_what_is_missing(webnn_page: Any) -> None:
    """Firefox (and a Chromium without the WebGPU flag, whose GPUDevice interface still exists): exportable tensors
    need a GPUDevice, and the TypeError says when the browser has no WebGPU at all."""
    out = webnn_page.evaluate(NO_WEBGPU_JS)
    assert out["createExportable"].startswith("TypeError: ") and "not of type 'GPUDevice'" in out["createExportable"]
    if not out["hasGPUDevice"]:
        assert "this browser has no WebGPU" in out["createExportable"]
    assert out["exportPlain"].startswith("TypeError: ") and "does not support WebGPU interop" in out["exportPlain"]
    assert out["gpuDevice"] is None
    assert out["createContext"] == "ok"


# ------------------------------------------------------------------------------------------------ the gallery sample

GALLERY_TIMEOUT_MS = 240_000  # the TFLite loader boots Pyodide in a worker and converts the model on first use


def test_gallery_sample_composites_the_mask_through_webgpu(webgpu_page: Any, dev_server: str) -> None:
    """web/gallery/lib/samples/gpu-mask.js: the selfie mask, exported to WebGPU, composited by a WGSL shader on a
    WebGPU canvas: the person keeps the photo's colours, the background (LiteRT's mask < 0.01) turns grey."""
    import io

    from PIL import Image

    ref = pytest.importorskip("gallery_reference")
    skimage_data = pytest.importorskip("skimage.data")
    samples.make_samples()
    page, errors = open_page(webgpu_page.context, f"{dev_server}/gallery/samples.html#blur", GALLERY_TIMEOUT_MS)
    try:
        page.evaluate("window.gallery.ready")
        snap = page.evaluate("() => window.gallery.open('webgpu', {source: 'astronaut'})")
        assert not snap["errors"], snap["errors"]
        result = snap["result"]
        assert result["bufferUsage"] == 0x80 | 0x04 | 0x08 and result["maskBytes"] == 256 * 256 * 4
        assert result["exports"] == 1 and "swiftshader" in result["adapter"]
        assert result["present"] == "readback"  # SwiftShader headless: see presentation() in the sample
        details = page.locator("#details").inner_text()
        assert "copies" in details and "STORAGE | COPY_SRC | COPY_DST" in details
        canvas = page.locator("#view canvas")
        size = page.evaluate("() => { const c = document.querySelector('#view canvas'); return [c.width, c.height]; }")
        shot = np.asarray(Image.open(io.BytesIO(canvas.screenshot())).convert("RGB").resize(size), dtype=np.int16)
        # beside the other samples' screenshots (tests/browser/test_gallery_samples.py)
        shots = Path(os.environ.get("PYODIDE_WEBNN_SHOTS") or ROOT / "test-results" / "gallery")
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "chromium-webgpu.png"), full_page=True)
    finally:
        page.close()
    assert errors == []
    photo = np.asarray(skimage_data.astronaut())
    assert photo.shape[1::-1] == tuple(size)  # the sample draws the 512x512 photo at its own size
    mask = np.asarray(Image.fromarray(ref.selfie_mask(photo)).resize(size, Image.BILINEAR))
    assert shot.std() > 20  # a picture, not one colour
    background, person = mask < 0.01, mask > 0.99
    assert background.mean() > 0.1 and person.mean() > 0.1
    spread = shot.max(axis=2) - shot.min(axis=2)
    grey = spread[background] <= 4
    print(f"background pixels grey: {grey.mean():.4f}; person pixels: {person.mean():.3f} of the frame")
    assert grey.mean() > 0.97
    # the person keeps the photo's colours (the flag and suit are colourful), the background is darkened
    assert np.abs(shot[person] - photo[person]).mean() < 6
    assert spread[person].mean() > 25
    assert shot[background].mean() < 0.6 * photo[background].mean()


def test_gallery_sample_says_when_webgpu_is_missing(browser: Any, dev_server: str) -> None:
    """The shared browser has no WebGPU adapter (Chromium without --enable-unsafe-webgpu) or no WebGPU at all
    (Firefox on Linux): the sample says so before loading its model."""
    page, errors = open_page(browser, f"{dev_server}/gallery/samples.html#blur", GALLERY_TIMEOUT_MS)
    try:
        page.evaluate("window.gallery.ready")
        has_gpu = page.evaluate("() => !!navigator.gpu")
        message = page.evaluate("""() => window.gallery.open('webgpu').then(() => 'opened', (e) => e.message)""")
        shown = page.locator("#error").inner_text()
    finally:
        page.close()
    print(f"navigator.gpu: {has_gpu}; the page says: {shown}")
    assert message != "opened" and "WebGPU" in shown
    if not has_gpu:
        assert "This browser has no WebGPU (navigator.gpu is missing)" in shown
    else:
        assert "no WebGPU adapter" in shown
    assert errors == []
