// WebGPU composite: MediaPipe selfie segmentation writes its mask into an exportable MLTensor, exportToGPU()
// hands it to WebGPU as a GPUBuffer, and a WGSL fragment shader composites it with the frame onto a WebGPU canvas:
// the person in colour, the background grey.  The mask is never read back into script.
// WebNN/WebGPU interop: https://github.com/webmachinelearning/webnn/blob/main/mltensor-explainer.md

import {descriptors} from '/lib/graphfile.js';
import {resizeToTensor} from '../vision.js';

const MODEL = 'selfie_segmentation';
const SIZE = 256;

const SHADER = /* wgsl */ `
struct Params { maskSize: vec2f };
@group(0) @binding(0) var frameTexture: texture_2d<f32>;
@group(0) @binding(1) var frameSampler: sampler;
@group(0) @binding(2) var<storage, read> mask: array<f32>;  // the exported MLTensor, [1, 256, 256, 1]
@group(0) @binding(3) var<uniform> params: Params;

struct Varyings { @builtin(position) position: vec4f, @location(0) uv: vec2f };

// one triangle covering the canvas; uv (0, 0) is the frame's top left
@vertex fn vs(@builtin(vertex_index) i: u32) -> Varyings {
  let p = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
  return Varyings(vec4f(p * 2.0 - 1.0, 0.0, 1.0), vec2f(p.x, 1.0 - p.y));
}

fn maskAt(x: i32, y: i32) -> f32 {
  let n = vec2i(params.maskSize);
  return mask[clamp(y, 0, n.y - 1) * n.x + clamp(x, 0, n.x - 1)];
}

// the 256x256 mask upscaled bilinearly, pixel centres at (i + 0.5) / 256, edges replicated
fn maskBilinear(uv: vec2f) -> f32 {
  let p = uv * params.maskSize - 0.5;
  let f = floor(p);
  let t = p - f;
  let x = i32(f.x);
  let y = i32(f.y);
  return mix(mix(maskAt(x, y), maskAt(x + 1, y), t.x), mix(maskAt(x, y + 1), maskAt(x + 1, y + 1), t.x), t.y);
}

@fragment fn fs(v: Varyings) -> @location(0) vec4f {
  let colour = textureSampleLevel(frameTexture, frameSampler, v.uv, 0.0).rgb;
  let m = clamp(maskBilinear(v.uv), 0.0, 1.0);
  // background: the frame's luma (Rec. 601), darkened, so the person stands out in colour
  let grey = vec3f(dot(colour, vec3f(0.299, 0.587, 0.114)) * 0.45);
  return vec4f(mix(grey, colour, m), 1.0);
}
`;

let gpu = null;  // Promise<{device, adapterInfo} | {problem}>, asked once per page
const pipelines = new WeakMap();  // device -> Map(format -> {pipeline, sampler, params})
const maskTensors = new WeakMap();  // runner -> {device, tensor: Promise<MLTensor>} (exportable to that device)

async function startWebGPU() {
  if (!navigator.gpu) {
    return {problem: 'This browser has no WebGPU (navigator.gpu is missing), so a WebNN tensor cannot be handed ' +
      'to a GPU shader here. WebGPU ships in Chrome and Edge; in Chromium on Linux start it with ' +
      '--enable-unsafe-webgpu. Firefox on Linux has no WebGPU yet.'};
  }
  try {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) {
      return {problem: 'navigator.gpu is present but gives no WebGPU adapter (no usable GPU or software ' +
        'rasterizer; in Chromium on Linux start it with --enable-unsafe-webgpu)'};
    }
    const device = await adapter.requestDevice();
    // a lost device (driver reset, tab in background) is replaced at the next frame
    device.lost.then(() => { gpu = null; });
    return {device, adapterInfo: adapter.info || {}};
  } catch (e) {
    return {problem: `WebGPU failed to start: ${e.name}: ${e.message}`};
  }
}

/** Why this sample cannot run here, or null: it needs WebGPU with an adapter. */
async function webgpuProblem() {
  gpu ??= startWebGPU();
  return (await gpu).problem || null;
}

function pipelineFor(device, format) {
  if (!pipelines.has(device)) pipelines.set(device, new Map());
  const byFormat = pipelines.get(device);
  if (!byFormat.has(format)) {
    const module = device.createShaderModule({code: SHADER});
    const pipeline = device.createRenderPipeline({layout: 'auto', vertex: {module, entryPoint: 'vs'},
      fragment: {module, entryPoint: 'fs', targets: [{format}]}, primitive: {topology: 'triangle-list'}});
    const params = device.createBuffer({size: 8, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST});
    device.queue.writeBuffer(params, 0, new Float32Array([SIZE, SIZE]));
    const sampler = device.createSampler({magFilter: 'linear', minFilter: 'linear'});
    byFormat.set(format, {pipeline, sampler, params});
  }
  return byFormat.get(format);
}

/**
 * How the rendered frame reaches the page: 'canvas' (a WebGPU canvas context) or 'readback' (render into a texture,
 * copy it to a MAP_READ buffer, put it on a 2D canvas).  SwiftShader, the CPU rasterizer headless Chromium offers,
 * loses every device of the page when a WebGPU canvas presents (Debian Chromium 156, --enable-unsafe-webgpu), so
 * there the frame is read back.
 */
function presentation(adapterInfo) {
  return adapterInfo.architecture === 'swiftshader' ? 'readback' : 'canvas';
}

/** Draw the composite of `frameTex` and `maskBuffer` to `canvas`, by `mode`; resolves once it is on the page. */
async function render(device, mode, canvas, frameTex, maskBuffer, W, H) {
  const format = mode === 'canvas' ? navigator.gpu.getPreferredCanvasFormat() : 'rgba8unorm';
  const {pipeline, sampler, params} = pipelineFor(device, format);
  let gpuContext = null;
  let target = null;
  if (mode === 'canvas') {
    gpuContext = canvas.getContext('webgpu');
    gpuContext.configure({device, format, alphaMode: 'opaque'});
  } else {
    target = device.createTexture({size: [W, H], format, usage: GPUTextureUsage.RENDER_ATTACHMENT |
      GPUTextureUsage.COPY_SRC});
  }
  const bindGroup = device.createBindGroup({layout: pipeline.getBindGroupLayout(0), entries: [
    {binding: 0, resource: frameTex.createView()}, {binding: 1, resource: sampler},
    {binding: 2, resource: {buffer: maskBuffer}}, {binding: 3, resource: {buffer: params}}]});
  const encoder = device.createCommandEncoder();
  const view = (gpuContext ? gpuContext.getCurrentTexture() : target).createView();
  const pass = encoder.beginRenderPass({colorAttachments: [{view, loadOp: 'clear', storeOp: 'store',
    clearValue: [0, 0, 0, 1]}]});
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.draw(3);
  pass.end();
  let readback = null;
  const bytesPerRow = Math.ceil(W * 4 / 256) * 256;  // WebGPU's row alignment for texture copies
  if (target) {
    readback = device.createBuffer({size: bytesPerRow * H, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    encoder.copyTextureToBuffer({texture: target}, {buffer: readback, bytesPerRow}, [W, H]);
  }
  device.queue.submit([encoder.finish()]);
  if (!readback) {
    await device.queue.onSubmittedWorkDone();
    return;
  }
  await readback.mapAsync(GPUMapMode.READ);
  const rows = new Uint8Array(readback.getMappedRange());
  const image = new ImageData(W, H);
  for (let y = 0; y < H; y++) image.data.set(rows.subarray(y * bytesPerRow, y * bytesPerRow + W * 4), y * W * 4);
  readback.destroy();
  target.destroy();
  canvas.getContext('2d').putImageData(image, 0, 0);
}

/** The frame as a texture of `device`. */
function frameTexture(device, source, width, height) {
  const texture = device.createTexture({size: [width, height], format: 'rgba8unorm',
    usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST | GPUTextureUsage.RENDER_ATTACHMENT});
  device.queue.copyExternalImageToTexture({source}, {texture}, [width, height]);
  return texture;
}

export default {
  id: 'webgpu',
  title: 'WebGPU mask',
  models: [MODEL],
  input: 'image',
  detailsTitle: 'WebNN to WebGPU',
  intro: 'MediaPipe <b>selfie segmentation</b> writes its mask into an <i>exportable</i> MLTensor; ' +
    '<code>exportToGPU()</code> hands it to <b>WebGPU</b> as a storage buffer, and a WGSL shader composites it ' +
    'with the photo (the person in colour, the background grey). The mask never comes back ' +
    'to script. With the polyfill, whose engine runs on the CPU, the export and the return are copies (counted ' +
    'below).',
  unavailable: webgpuProblem,

  async process(frame, ctx) {
    const problem = await webgpuProblem();
    if (problem) throw new Error(problem);
    const {device, adapterInfo} = await gpu;
    const runner = await ctx.runner(MODEL);
    const context = runner.context;
    if (typeof context.createExportableTensor !== 'function') {
      throw new Error('this WebNN implementation has no createExportableTensor() (WebGPU interop; the polyfill ' +
        'has it unless in strict mode)');
    }
    const [outName] = Object.keys(runner.outputs);
    const [inName] = Object.keys(runner.inputs);
    if (maskTensors.get(runner)?.device !== device) {
      const {dataType, shape} = descriptors(runner.program)[runner.program.outputs[outName]];
      maskTensors.set(runner, {device, tensor: context.createExportableTensor({dataType, shape}, device)});
    }
    const maskTensor = await maskTensors.get(runner).tensor;
    const stats0 = globalThis.webnnPolyfill?.webgpuStats?.();

    const {tensor} = resizeToTensor(frame.source, SIZE, {keepAspect: false});
    const t0 = performance.now();
    context.writeTensor(runner.inputs[inName], tensor);
    context.dispatch(runner.graph, runner.inputs, {[outName]: maskTensor});
    const maskBuffer = await context.exportToGPU(maskTensor);
    ctx.record(MODEL, performance.now() - t0);

    const {width: W, height: H} = frame;
    const canvas = ctx.canvas;
    canvas.width = W;
    canvas.height = H;
    const mode = presentation(adapterInfo);
    const texture = frameTexture(device, frame.source, W, H);
    const drawn = render(device, mode, canvas, texture, maskBuffer, W, H);
    // give the tensor back to WebNN (the next frame dispatches into it): the render is submitted, and WebGPU keeps
    // a destroyed buffer alive for the work submitted before
    maskBuffer.destroy();
    await drawn;
    texture.destroy();

    const stats1 = globalThis.webnnPolyfill?.webgpuStats?.();
    const copies = stats0 && stats1 && Object.getPrototypeOf(context) === globalThis.webnnPolyfill.MLContext.prototype
      ? {exports: stats1.exports - stats0.exports, copies: stats1.copies - stats0.copies} : null;
    const adapter = [adapterInfo.vendor, adapterInfo.architecture].filter(Boolean).join(' / ') || 'unknown';
    const lines = [
      `WebGPU adapter: ${adapter}; the frame reaches the page through ${mode === 'canvas' ? 'a WebGPU canvas'
        : 'a readback into a 2D canvas (SwiftShader loses its devices when a WebGPU canvas presents headless)'}.`,
      `Mask tensor: ${maskTensor.dataType} [${maskTensor.shape.join(', ')}], exported as a ${maskBuffer.size}-byte ` +
        `GPUBuffer (usage ${maskBuffer.usage}: STORAGE | COPY_SRC | COPY_DST), bound to the fragment shader.`,
      copies ? `The polyfill's engine runs on the CPU: this frame's export copied the mask twice on the way to the ` +
        `GPU, and GPUBuffer.destroy() copies it back (3 more) so WebNN can dispatch into it again ` +
        `(webnnPolyfill.webgpuStats(): ${stats1.exports} exports, ${stats1.copies} copies so far).`
        : 'Native WebNN shares the tensor with WebGPU without copies.',
    ];
    ctx.details(...lines.map((textContent) => Object.assign(document.createElement('p'), {textContent})));
    return {adapter, present: mode, maskBytes: maskBuffer.size, bufferUsage: maskBuffer.usage,
      exports: copies?.exports ?? null};
  },
};
