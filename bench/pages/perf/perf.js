// The performance bench page: replays the graph files written by bench/perf/models.py (docs/graph-file.md)
// with the polyfill's MLGraphBuilder and, where an ONNX file exists, loads the same weights in onnxruntime-web
// (WASM, 1 and 2 threads); times them interleaved in this one page and compares their outputs.
import {load, replay} from '/lib/graphfile.js';

const MODELS = new URL('models/', location.href).href;
const ort = globalThis.ort;
if (ort) {
  ort.env.wasm.wasmPaths = new URL('/vendor/ort/', location.href).href;
  // one pool of 2 threads (needs crossOriginIsolated); each session picks 1 or 2 with intraOpNumThreads
  ort.env.wasm.numThreads = globalThis.crossOriginIsolated ? 2 : 1;
}

const state = {ctx: null, index: null, graphs: {}, sessions: {}};

// Deterministic inputs in [0, 1): the same in every browser and in CPython (numpy PCG64 is not needed:
// the script reads the page's inputs back for the native references).
function randomInput(shape, seed) {
  let s = seed >>> 0;
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  return out;
}

async function index() {
  if (!state.index) state.index = await (await fetch(MODELS + 'index.json', {cache: 'no-cache'})).json();
  return state.index;
}

async function context() {
  if (!state.ctx) state.ctx = await (window.__firstContext || navigator.ml.createContext());
  return state.ctx;
}

/** The index entry of case `name` and its graph file, fetched and parsed. */
async function graphFile(name) {
  const entry = (await index())[name];
  return {entry, ...(await load(MODELS + entry.graph))};
}

// `split`: build with one graph over both cores on (true) or off (false; polyfill/src/runtime/pool.js reads the config at
// each build), else the page's default; `key` names the built graph (one case may build two)
// `file`: the graph file's load already under way (graphFile), as startup() starts it beside the context
async function buildPolyfill(name, {split = null, key = name, file = null} = {}) {
  if (state.graphs[key]) return state.graphs[key];
  const tf = performance.now();
  const {entry, graph, weights} = await (file || graphFile(name));
  const fetchMs = performance.now() - tf;
  const ctx = await context();
  const t0 = performance.now();
  const b = new MLGraphBuilder(ctx);
  const {outputs} = replay(graph, weights, b);
  const t1 = performance.now();
  const cfg = globalThis.WEBNN_POLYFILL_CONFIG || (globalThis.WEBNN_POLYFILL_CONFIG = {});
  const had = 'split' in cfg;
  const was = cfg.split;
  if (split !== null) cfg.split = split;
  let g;
  try {
    g = await b.build(outputs);
  } finally {
    if (split !== null) { if (had) cfg.split = was; else delete cfg.split; }
  }
  const t2 = performance.now();
  const tensors = {inputs: {}, outputs: {}};
  for (const [n, d] of Object.entries(graph.inputs)) {
    tensors.inputs[n] = await ctx.createTensor({dataType: d.dataType, shape: d.shape, writable: true});
  }
  for (const [n, o] of Object.entries(outputs)) {
    tensors.outputs[n] = await ctx.createTensor({dataType: o.dataType, shape: o.shape, readable: true});
  }
  // fetchMs: the graph file fetched and parsed; tensorsMs: its input and output tensors created
  state.graphs[key] = {graph: g, entry, tensors, builderMs: t1 - t0, buildMs: t2 - t1, fetchMs,
    tensorsMs: performance.now() - t2};
  return state.graphs[key];
}

async function ortSession(name, threads) {
  const key = `${name}/${threads}`;
  if (!state.sessions[key]) {
    const entry = (await index())[name];
    const bytes = await fetch(MODELS + entry.onnx).then((r) => r.arrayBuffer());
    state.sessions[key] = await ort.InferenceSession.create(bytes, {
      executionProviders: ['wasm'], intraOpNumThreads: threads, interOpNumThreads: 1,
      graphOptimizationLevel: 'all'});
  }
  return state.sessions[key];
}

function inputsFor(entry, seed) {
  return Object.fromEntries(Object.entries(entry.inputs).map(([n, d], i) => [n, randomInput(d.shape, seed + i)]));
}

// One end-to-end run: writeTensor -> dispatch -> readTensor (all outputs).
async function runPolyfill(p, feeds) {
  const ctx = state.ctx;
  for (const [n, data] of Object.entries(feeds)) ctx.writeTensor(p.tensors.inputs[n], data);
  ctx.dispatch(p.graph, p.tensors.inputs, p.tensors.outputs);
  const out = {};
  for (const [n, t] of Object.entries(p.tensors.outputs)) out[n] = new Float32Array(await ctx.readTensor(t));
  return out;
}

async function runOrt(session, entry, feeds) {
  const ins = Object.fromEntries(Object.entries(feeds).map(([n, data]) =>
    [n, new ort.Tensor('float32', data, entry.inputs[n].shape)]));
  const res = await session.run(ins);
  return Object.fromEntries(Object.entries(res).map(([n, t]) => [n, t.data]));
}

function stats(times) {
  const s = [...times].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return {median: s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2, min: s[0], runs: s.length};
}

function compare(a, b) {
  let maxAbs = 0, maxRef = 0;
  for (let i = 0; i < a.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(a[i] - b[i]));
    maxRef = Math.max(maxRef, Math.abs(b[i]));
  }
  return {maxAbs, relative: maxAbs / (maxRef || 1)};
}

function b64(f32) {
  const u8 = new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength);
  let s = '';
  for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Time one case: the polyfill and (when there is an ONNX file) ORT-web with 1 and 2 threads, interleaved. */
// `split`: the polyfill's graph with one graph over both cores on, and the same graph with it off
// as 'polyfill-unsplit', timed interleaved; result.split has the speed-up and the two outputs' agreement.
async function run(name, {reps = 10, warmup = 2, seconds = 60, threads = [1, 2], returnOutputs = false,
  split = false} = {}) {
  const entry = (await index())[name];
  const p = await buildPolyfill(name, split ? {split: true} : {});
  const impls = {polyfill: (f) => runPolyfill(p, f)};
  let splitInfo = null;
  if (split) {
    const stats = await webnnPolyfill.workerStats();
    const whole = await buildPolyfill(name, {split: false, key: `${name}/unsplit`});
    impls['polyfill-unsplit'] = (f) => runPolyfill(whole, f);
    splitInfo = {splitBuildMs: p.buildMs, unsplitBuildMs: whole.buildMs, workers: stats.workers,
      splitGraphs: stats.splitGraphs, peerGraphs: stats.splitPeerGraphs, wasmBytes: stats.wasmBytes};
  }
  // a case with an ONNX file is a ratio to onnxruntime-web: without it the case fails rather than print no ratio
  if (entry.onnx && !ort) throw new Error('onnxruntime-web did not load (/vendor/ort/ort.wasm.min.js; npm ci)');
  if (entry.onnx) {
    for (const t of threads) {
      const s = await ortSession(name, t);
      impls[`ort-wasm-${t}t`] = (f) => runOrt(s, entry, f);
    }
  }
  const feeds = inputsFor(entry, 1234);
  const outputs = {};
  for (const [impl, fn] of Object.entries(impls)) {
    for (let i = 0; i < warmup; i++) outputs[impl] = await fn(feeds);
  }
  const times = Object.fromEntries(Object.keys(impls).map((k) => [k, []]));
  const order = Object.keys(impls);
  const deadline = performance.now() + seconds * 1000;
  for (let r = 0; r < reps && performance.now() < deadline; r++) {
    // rotate the order so no implementation always runs right after another's garbage
    for (let k = 0; k < order.length; k++) {
      const impl = order[(r + k) % order.length];
      const t0 = performance.now();
      await impls[impl](feeds);
      times[impl].push(performance.now() - t0);
    }
  }
  const result = {name, buildMs: p.buildMs, builderMs: p.builderMs, impls: {}};
  for (const [impl, t] of Object.entries(times)) result.impls[impl] = {...stats(t), times: t};
  if (splitInfo) {
    const whole = result.impls['polyfill-unsplit'];
    splitInfo.speedup = whole.median / result.impls.polyfill.median;
    splitInfo.speedupMin = whole.min / result.impls.polyfill.min;
    splitInfo.agreement = Object.fromEntries(entry.outputs.map((n) =>
      [n, compare(outputs.polyfill[n], outputs['polyfill-unsplit'][n])]));
    result.split = splitInfo;
  }
  const ref = outputs['ort-wasm-1t'];
  if (ref) {
    result.agreement = Object.fromEntries(entry.outputs.map((n, i) =>
      [n, compare(outputs.polyfill[n], ref[Object.keys(ref)[i]])]));
  }
  if (returnOutputs) {
    result.outputs = Object.fromEntries(Object.entries(outputs.polyfill).map(([n, a]) => [n, b64(a)]));
    result.inputs = Object.fromEntries(Object.entries(feeds).map(([n, a]) => [n, b64(a)]));
  }
  const table = document.getElementById('results');
  for (const [impl, s] of Object.entries(result.impls)) {
    const row = table.insertRow();
    for (const v of [name, impl, s.median.toFixed(2), s.min.toFixed(2), s.runs]) row.insertCell().textContent = v;
  }
  return result;
}

/** Startup: script tag -> context -> built graph, with the polyfill's own boot timings; calledMs: when this page
 *  asked for its context (its own scripts ran first: the polyfill boots at the first createContext()), moduleMs:
 *  when this module ran.  The graph file is fetched while the context is created, as a page that loads a model
 *  would (fetching it after the context costs 40-130 ms more in Chromium); fetchMs is the wait for it after
 *  the context, fileMs when it was in hand. */
async function startup(name) {
  const t0 = window.__t_script;
  const calledMs = performance.now() - t0;
  let fileMs = null;
  const file = graphFile(name).then((f) => { fileMs = performance.now() - t0; return f; });
  file.catch(() => {});  // awaited by buildPolyfill; a failure shows there, after the context's
  await context();
  const tContext = performance.now();
  const p = await buildPolyfill(name, {file});
  const tBuilt = performance.now();
  await runPolyfill(p, inputsFor(p.entry, 1));
  return {contextMs: tContext - t0, builtMs: tBuilt - t0, firstRunMs: performance.now() - tBuilt,
    builderMs: p.builderMs, buildMs: p.buildMs, fetchMs: p.fetchMs, fileMs, tensorsMs: p.tensorsMs, calledMs,
    moduleMs: window.__t_module - t0,
    bootTimings: webnnPolyfill.bootTimings, crossOriginIsolated: globalThis.crossOriginIsolated};
}

async function destroy(name) {
  for (const key of [name, `${name}/unsplit`]) {
    const p = state.graphs[key];
    if (!p) continue;
    p.graph.destroy();
    for (const t of [...Object.values(p.tensors.inputs), ...Object.values(p.tensors.outputs)]) t.destroy();
    delete state.graphs[key];
  }
  for (const key of Object.keys(state.sessions)) {
    if (key.startsWith(`${name}/`)) { await state.sessions[key].release(); delete state.sessions[key]; }
  }
}

window.__t_module = performance.now();
window.perf = {run, startup, destroy, index, ready: true,
  native: () => ({hasNavigatorMl: !!webnnPolyfill.native, polyfillInstalled: webnnPolyfill.installed})};
