// The WebNN implementations a gallery page can use, and a small runner for built graphs.
//  - 'polyfill': pyodide-webnn (globalThis.webnnPolyfill.ml), always present when the bundle loaded;
//  - 'native':   the browser's own navigator.ml (webnnPolyfill.native), usable only if createContext() works.
// https://www.w3.org/TR/webnn/#api-ml

import {buildGraph, descriptors} from '/lib/graphfile.js';

const polyfill = () => globalThis.webnnPolyfill;
const contexts = new Map();

/** Why the native implementation cannot be used here, or null when it can. */
async function nativeProblem() {
  const p = polyfill();
  const native = p ? p.native : (navigator.ml ?? null);
  if (!native) {
    return 'this browser has no navigator.ml (native WebNN ships in Chrome and Edge, on some platforms ' +
      'and behind a flag); the polyfill runs instead';
  }
  try {
    const ctx = await native.createContext();
    contexts.set('native', Promise.resolve(ctx));
    return null;
  } catch (e) {
    return `navigator.ml is present, but createContext() fails: ${e?.name || 'Error'}: ${e?.message || e}`;
  }
}

let probed = null;

/** [{id, label, available, reason}] for the polyfill and the native implementation (probed once). */
export function probeImplementations() {
  probed ??= (async () => {
    const p = polyfill();
    const nativeReason = await nativeProblem();
    return [
      {id: 'polyfill', label: 'Polyfill (Python + NumPy on Pyodide)', available: !!p,
        reason: p ? null : 'the polyfill bundle /polyfill/webnn-polyfill.js did not load'},
      {id: 'native', label: 'Native WebNN (navigator.ml)', available: nativeReason === null, reason: nativeReason},
    ];
  })();
  return probed;
}

/** The ML object and MLGraphBuilder class of an implementation. */
export function implementation(id) {
  const p = polyfill();
  if (id === 'polyfill') return {ml: p.ml, GraphBuilder: p.MLGraphBuilder};
  if (id === 'native') {
    // With a native navigator.ml the polyfill does not install itself, so the global class is the browser's.
    return {ml: p ? p.native : navigator.ml, GraphBuilder: globalThis.MLGraphBuilder};
  }
  throw new Error(`unknown implementation ${id}`);
}

/** One MLContext per implementation and page. */
export function getContext(id) {
  if (!contexts.has(id)) {
    const p = implementation(id).ml.createContext();
    p.catch(() => contexts.delete(id));
    contexts.set(id, p);
  }
  return contexts.get(id);
}

/** Polyfill boot progress ({stage, message, loaded, total}) to `fn`; returns an unsubscribe function. */
export function onPolyfillProgress(fn) {
  const p = polyfill();
  if (!p) return () => {};
  const handler = (e) => fn(e.detail);
  p.addEventListener('progress', handler);
  return () => p.removeEventListener('progress', handler);
}

/** A built graph with its input/output tensors, for repeated inference: `await runner.run({name: data})`. */
export class GraphRunner {
  constructor(context, graph, program, tensors) {
    this.context = context;
    this.graph = graph;
    this.program = program;
    this.inputs = tensors.inputs;
    this.outputs = tensors.outputs;
    const descs = descriptors(program);
    this.outputTypes = Object.fromEntries(Object.entries(program.outputs).map(([n, o]) => [n, descs[o].dataType]));
    this.busy = false;
  }

  /** Replay `model` ({program, weights}) on implementation `id`: {runner, buildMs}. */
  static async create(id, model) {
    const context = await getContext(id);
    const t0 = performance.now();
    const graph = await buildGraph(model.program, model.weights, context, implementation(id).GraphBuilder);
    const buildMs = performance.now() - t0;
    const tensors = {inputs: {}, outputs: {}};
    for (const [name, desc] of Object.entries(model.program.inputs)) {
      tensors.inputs[name] = await context.createTensor({dataType: desc.dataType, shape: desc.shape, writable: true});
    }
    const descs = descriptors(model.program);
    for (const [name, operand] of Object.entries(model.program.outputs)) {
      const {dataType, shape} = descs[operand];
      tensors.outputs[name] = await context.createTensor({dataType, shape, readable: true});
    }
    return {runner: new GraphRunner(context, graph, model.program, tensors), buildMs};
  }

  /** Write inputs, dispatch, read every output: {outputs: {name: Float32Array...}, ms}. */
  async run(feeds) {
    const t0 = performance.now();
    for (const [name, tensor] of Object.entries(this.inputs)) {
      if (!feeds[name]) throw new Error(`missing input ${name}`);
      this.context.writeTensor(tensor, feeds[name]);
    }
    this.context.dispatch(this.graph, this.inputs, this.outputs);
    const names = Object.keys(this.outputs);
    const buffers = await Promise.all(names.map((n) => this.context.readTensor(this.outputs[n])));
    const outputs = {};
    names.forEach((n, i) => {
      const type = this.outputTypes[n];
      outputs[n] = type === 'float32' ? new Float32Array(buffers[i]) : buffers[i];
    });
    return {outputs, ms: performance.now() - t0};
  }

  destroy() {
    for (const t of [...Object.values(this.inputs), ...Object.values(this.outputs)]) t.destroy();
    this.graph.destroy?.();
  }
}
