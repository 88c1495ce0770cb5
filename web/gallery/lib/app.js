// The samples page: routing between samples (#blur, #faces, ...), the implementation and input pickers,
// loading progress (polyfill boot, in-page TFLite conversion, graph builds), latency and FPS.
// One page keeps its WebNN contexts, converted programs and built graphs while you switch samples.
// Tests drive it through window.gallery (see the end of this file).

import {loadProgram} from './models.js';
import {GraphRunner, getContext, onPolyfillProgress, probeImplementations} from './webnn.js';
import {sourceSize} from './vision.js';
import blur from './samples/blur.js';
import faces from './samples/faces.js';
import mesh from './samples/mesh.js';
import pose from './samples/pose.js';
import digits from './samples/digits.js';
import gpuMask from './samples/gpu-mask.js';

const SAMPLES = [blur, faces, mesh, pose, digits, gpuMask];
const PHOTOS = {
  astronaut: {label: 'Astronaut', url: 'samples/astronaut.png',
    caption: 'Eileen Collins, NASA (public domain), from scikit-image'},
  cameraman: {label: 'Cameraman', url: 'samples/cameraman.png', caption: 'The cameraman, from scikit-image'},
};
const $ = (id) => document.getElementById(id);

const state = {
  sample: null,
  impl: 'polyfill',
  source: 'astronaut',
  impls: [],
  runners: new Map(),  // `${impl}/${model}` -> Promise<{runner, buildMs, program}>
  token: 0,
  latency: [],  // inference ms of recent frames
  frameMs: [],  // whole frame (pre-processing, inference, post-processing, drawing) of recent frames
  frameEnds: [],  // completion times of recent video frames, for FPS
  perModel: {},
  frames: 0,
  result: null,
  errors: [],
  tasks: new Map(),
  log: [],
  camera: null,  // {stream, video}
  cameraProblem: null,
  waiters: [],
  debug: {inputs: {}, outputs: {}},
  photos: new Map(),
};

// ------------------------------------------------------------------------------------------------ progress

function task(id, patch) {
  const t = {label: id, value: 0, max: 1, msg: '', status: 'running', ...state.tasks.get(id), ...patch};
  state.tasks.set(id, t);
  state.log.push({t: Math.round(performance.now()), task: id, msg: t.msg, status: t.status});
  renderTasks();
}

let hideTimer = null;

function renderTasks() {
  const box = $('loading');
  // the polyfill, the loader, then the current sample's models
  const shown = ['polyfill', 'loader', ...(state.sample ? state.sample.models.map((m) => `model:${m}`) : [])];
  const rows = shown.filter((id) => state.tasks.has(id)).map((id) => [id, state.tasks.get(id)]).map(([id, t]) => {
    const row = document.createElement('div');
    row.className = `task ${t.status}`;
    row.dataset.task = id;
    const name = Object.assign(document.createElement('span'), {className: 'name', textContent: t.label});
    const bar = document.createElement('progress');
    bar.max = t.max || 1;
    bar.value = t.status === 'done' ? bar.max : Math.min(t.value, bar.max);
    const msg = Object.assign(document.createElement('span'), {className: 'msg', textContent: t.msg, title: t.msg});
    row.append(name, bar, msg);
    return row;
  });
  box.replaceChildren(...rows);
  const visible = shown.filter((id) => state.tasks.has(id)).map((id) => state.tasks.get(id));
  const busy = visible.some((t) => t.status === 'running');
  clearTimeout(hideTimer);
  if (busy || visible.some((t) => t.status === 'failed')) box.hidden = false;
  else hideTimer = setTimeout(() => { box.hidden = true; }, 2500);
}

onPolyfillProgress((d) => {
  if (d.stage === 'ready') {
    task('polyfill', {label: 'WebNN polyfill', status: 'done', msg: `ready in ${(d.elapsedMs / 1000).toFixed(1)} s`});
  } else {
    task('polyfill', {label: 'WebNN polyfill', value: d.loaded, max: d.total, msg: d.message});
  }
});

function modelProgress(name) {
  return (d) => {
    if (d.stage === 'loader-ready') {
      task('loader', {label: 'TFLite loader', value: 1, max: 1, msg: d.message, status: 'done'});
    } else if (d.stage === 'loader') {
      if (!state.tasks.has('loader') || state.tasks.get('loader').status !== 'done') {
        task('loader', {label: 'TFLite loader', value: 0, max: 1, msg: d.message});
      }
    } else if (d.stage === 'download') {
      task(`model:${name}`, {label: name, value: d.loaded, max: d.total,
        msg: `downloading ${(d.loaded / 1e6).toFixed(1)} / ${(d.total / 1e6).toFixed(1)} MB`});
    } else {
      task(`model:${name}`, {label: name, msg: d.message});
    }
  };
}

// ------------------------------------------------------------------------------------------------ models

/** The built graph of `model` on the current implementation (loaded, converted and built once). */
function runnerFor(model, impl = state.impl) {
  const key = `${impl}/${model}`;
  if (!state.runners.has(key)) {
    const p = (async () => {
      const id = `model:${model}`;
      task(id, {label: model, value: 0, max: 1, msg: 'loading', status: 'running'});
      const program = await loadProgram(model, {onProgress: modelProgress(model)});
      task(id, {label: model, msg: `building the graph (${impl})`});
      const {runner, buildMs} = await GraphRunner.create(impl, program);
      const how = {converted: `converted in the polyfill's worker in ${program.convertMs} ms`,
        cache: 'program from the browser cache', file: 'program file'}[program.source];
      task(id, {label: model, status: 'done', msg: `${how}, built in ${Math.round(buildMs)} ms`});
      return {runner, buildMs, program};
    })();
    p.catch((e) => {
      state.runners.delete(key);
      task(`model:${model}`, {label: model, status: 'failed', msg: `${e.name}: ${e.message}`});
    });
    state.runners.set(key, p);
  }
  return state.runners.get(key);
}

const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const push = (list, v, n = 20) => { list.push(v); if (list.length > n) list.shift(); };

function makeContext(token) {
  let inferenceMs = 0;
  return {
    /** Run `model` on feeds {inputName: Float32Array} (or its only input's data): {name: Float32Array}. */
    async run(model, feeds) {
      const {runner} = await runnerFor(model);
      if (token !== state.token) throw new Cancelled();
      if (ArrayBuffer.isView(feeds)) feeds = {[Object.keys(runner.inputs)[0]]: feeds};
      const {outputs, ms} = await runner.run(feeds);
      inferenceMs += ms;
      state.perModel[model] = ms;
      state.debug.inputs[model] = feeds;
      state.debug.outputs[model] = outputs;
      return outputs;
    },
    /** The built graph of `model` ({context, graph, inputs, outputs, program}), for a sample that dispatches
     *  itself (the WebGPU sample binds an exportable output tensor); `record` its inference time. */
    async runner(model) {
      const {runner} = await runnerFor(model);
      if (token !== state.token) throw new Cancelled();
      return runner;
    },
    record(model, ms) {
      inferenceMs += ms;
      state.perModel[model] = ms;
    },
    get inferenceMs() { return inferenceMs; },
    program: async (model) => (await runnerFor(model)).program,
    details: (...nodes) => $('details').replaceChildren(...nodes),
    canvas: null,
  };
}

class Cancelled extends Error {}

// ------------------------------------------------------------------------------------------------ frames

async function photo(name) {
  if (!state.photos.has(name)) {
    const img = new Image();
    img.src = PHOTOS[name].url;
    state.photos.set(name, img.decode().then(() => img, () => {
      throw new Error(`cannot load ${PHOTOS[name].url}: run scripts/make_samples.py (make assets)`);
    }));
  }
  return state.photos.get(name);
}

/** Process one frame with the current sample: result, timings and drawing. */
async function processFrame(source, token, {video = false} = {}) {
  const ctx = makeContext(token);
  ctx.canvas = state.canvas;
  const t0 = performance.now();
  const {width, height} = sourceSize(source);
  const result = await state.sample.process({source, width, height}, ctx);
  if (token !== state.token) return;
  const frameMs = performance.now() - t0;
  state.frames += 1;
  state.result = result;
  push(state.latency, ctx.inferenceMs);
  push(state.frameMs, frameMs);
  if (video) push(state.frameEnds, performance.now(), 10);
  renderStats();
  const waiters = state.waiters;
  state.waiters = [];
  for (const w of waiters) w();
}

function fps() {
  const t = state.frameEnds;
  return t.length >= 2 ? (t.length - 1) / ((t[t.length - 1] - t[0]) / 1000) : NaN;
}

function renderStats() {
  const rows = [];
  const fmt = (ms) => (Number.isFinite(ms) ? `${ms < 100 ? ms.toFixed(1) : Math.round(ms)} ms` : '–');
  const impl = state.impls.find((i) => i.id === state.impl);
  rows.push(['Implementation', impl ? impl.id : state.impl]);
  rows.push(['Inference (last)', fmt(state.latency[state.latency.length - 1])]);
  rows.push(['Inference (median)', fmt(median(state.latency))]);
  for (const [m, ms] of Object.entries(state.perModel)) {
    if (state.sample.models.includes(m)) rows.push([m, fmt(ms), 'sub']);
  }
  rows.push(['Whole frame', fmt(state.frameMs[state.frameMs.length - 1])]);
  if (state.source === 'camera' && state.sample.input !== 'draw') {
    const f = fps();
    rows.push(['Frames per second', Number.isFinite(f) ? f.toFixed(2) : '–']);
  }
  rows.push(['Runs', String(state.frames)]);
  $('stats').replaceChildren(...rows.flatMap(([k, v, cls = '']) => {
    const dt = Object.assign(document.createElement('dt'), {textContent: k, className: cls, title: k});
    const dd = Object.assign(document.createElement('dd'), {textContent: v});
    dd.dataset.stat = k.trim();
    return [dt, dd];
  }));
}

// ------------------------------------------------------------------------------------------------ camera

async function probeCamera() {
  if (!navigator.mediaDevices?.getUserMedia) return 'this page has no camera access (navigator.mediaDevices)';
  try {
    const devices = await navigator.mediaDevices.enumerateDevices();
    if (!devices.some((d) => d.kind === 'videoinput')) return 'no camera found';
  } catch (e) {
    return `cannot list cameras: ${e.message}`;
  }
  return null;
}

async function startCamera() {
  if (state.camera) return state.camera.video;
  const stream = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 480}, audio: false});
  const video = Object.assign(document.createElement('video'), {muted: true, playsInline: true, srcObject: stream});
  await video.play();
  if (!video.videoWidth) await new Promise((r) => video.addEventListener('loadeddata', r, {once: true}));
  state.camera = {stream, video};
  return video;
}

function stopCamera() {
  if (!state.camera) return;
  for (const t of state.camera.stream.getTracks()) t.stop();
  state.camera = null;
}

// ------------------------------------------------------------------------------------------------ UI

function showError(e) {
  if (e instanceof Cancelled) return;
  console.error(e);
  state.errors.push(`${e.name}: ${e.message}`);
  const box = $('error');
  box.textContent = `${e.name || 'Error'}: ${e.message}`;
  box.hidden = false;
}

function renderTabs() {
  $('tabs').replaceChildren(...SAMPLES.map((s) => {
    const a = Object.assign(document.createElement('a'), {href: `#${s.id}`, textContent: s.title});
    if (s === state.sample) a.setAttribute('aria-current', 'page');
    return a;
  }));
}

function segButton(label, pressed, disabled, onClick, id) {
  const b = Object.assign(document.createElement('button'), {type: 'button', textContent: label, disabled});
  b.dataset.id = id;
  b.setAttribute('aria-pressed', String(pressed));
  b.addEventListener('click', onClick);
  return b;
}

function renderPickers() {
  $('impls').replaceChildren(...state.impls.map((i) => segButton(
    i.id === 'polyfill' ? 'Polyfill' : 'Native', i.id === state.impl, !i.available,
    () => { state.impl = i.id; activate(); }, i.id)));
  const native = state.impls.find((i) => i.id === 'native');
  const note = $('impl-note');
  note.textContent = native && !native.available
    ? `Native WebNN unavailable: ${native.reason.replace(/\.$/, '')}.`
    : 'Native WebNN works here: switch to compare it with the polyfill.';
  note.className = native && !native.available ? 'note warn' : 'note';
  const draw = state.sample.input === 'draw';
  $('source-field').hidden = draw;
  if (draw) return;
  const buttons = Object.entries(PHOTOS).map(([name, p]) => segButton(p.label, state.source === name, false,
    () => { state.source = name; activate(); }, name));
  buttons.push(segButton('Camera', state.source === 'camera', !!state.cameraProblem,
    () => { state.source = 'camera'; activate(); }, 'camera'));
  $('sources').replaceChildren(...buttons);
  $('source-note').textContent = state.cameraProblem ? `Camera: ${state.cameraProblem}.` : '';
}

/** (Re)start the current sample with the current implementation and input. */
async function activate() {
  const token = ++state.token;
  $('error').hidden = true;
  state.sample = SAMPLES.find((s) => `#${s.id}` === location.hash) || SAMPLES[0];
  if (state.source === 'camera' && (state.sample.input === 'draw' || state.cameraProblem)) state.source = 'astronaut';
  if (state.source !== 'camera') stopCamera();
  state.latency = [];
  state.frameMs = [];
  state.frameEnds = [];
  state.perModel = {};
  state.frames = 0;
  state.result = null;
  renderTabs();
  renderPickers();
  renderTasks();
  $('intro').innerHTML = state.sample.intro;
  $('details-title').textContent = state.sample.detailsTitle || 'Result';
  $('details').textContent = '–';
  const view = $('view');
  state.canvas = document.createElement('canvas');
  view.replaceChildren(state.canvas);
  renderStats();
  try {
    // a sample that needs more than WebNN (WebGPU) says what is missing before its models load
    const missing = state.sample.unavailable && await state.sample.unavailable();
    if (missing) throw new Error(missing);
    await Promise.all(state.sample.models.map((m) => runnerFor(m)));
    if (token !== state.token) return;
    if (state.sample.input === 'draw') {
      await state.sample.mount(view, makeContextFactory(token));
      return;
    }
    if (state.source === 'camera') {
      const video = await startCamera();
      while (token === state.token) {
        await processFrame(video, token, {video: true});
        await new Promise((r) => requestAnimationFrame(r));
      }
    } else {
      const img = await photo(state.source);
      if (token !== state.token) return;
      const caption = Object.assign(document.createElement('div'), {className: 'caption',
        textContent: PHOTOS[state.source].caption});
      view.replaceChildren(state.canvas, caption);
      await processFrame(img, token);
    }
  } catch (e) {
    if (token === state.token) showError(e);
  }
}

/** For samples that run on their own events (digits): a fresh context per run, timings recorded. */
function makeContextFactory(token) {
  return {
    async run(fn) {
      const ctx = makeContext(token);
      const t0 = performance.now();
      const result = await fn(ctx);
      if (token !== state.token) return result;
      state.frames += 1;
      state.result = result;
      push(state.latency, ctx.inferenceMs);
      push(state.frameMs, performance.now() - t0);
      renderStats();
      return result;
    },
    program: async (model) => (await runnerFor(model)).program,
    details: (node) => $('details').replaceChildren(node),
  };
}

// ------------------------------------------------------------------------------------------------ start

function nextFrames(n) {
  return new Promise((resolve) => {
    let left = n;
    const tick = () => { left -= 1; if (left <= 0) resolve(); else state.waiters.push(tick); };
    state.waiters.push(tick);
  });
}

const b64 = (typed) => {
  const bytes = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};

const ready = (async () => {
  getContext('polyfill').catch(showError);  // boot the polyfill while the rest loads
  const [impls, cameraProblem] = await Promise.all([probeImplementations(), probeCamera()]);
  state.impls = impls;
  state.cameraProblem = cameraProblem;
  window.addEventListener('hashchange', () => activate());
  activate();
})();

/** The test and automation hook. */
window.gallery = {
  ready,
  samples: SAMPLES.map((s) => s.id),
  /** Open a sample on an implementation and input; resolves after its first processed frame (or, for the
   *  digits, once it is ready to draw on); rejects with the error the page shows. */
  async open(id, {impl = 'polyfill', source = 'astronaut'} = {}) {
    await ready;
    state.impl = impl;
    state.source = source;
    const errors = state.errors.length;
    const first = nextFrames(1);
    history.replaceState(null, '', `#${id}`);
    const activation = activate();
    let check;
    const failed = new Promise((_, reject) => {
      check = setInterval(() => { if (state.errors.length > errors) reject(new Error(state.errors.at(-1))); }, 100);
    });
    try {
      await Promise.race([state.sample.input === 'draw' ? activation : first, failed]);
    } finally {
      clearInterval(check);
    }
    return this.snapshot();
  },
  /** Resolves after n more frames (camera input). */
  frames: (n) => nextFrames(n),
  snapshot() {
    return {sample: state.sample?.id, impl: state.impl, source: state.source, result: state.result,
      frames: state.frames, latency: [...state.latency], frameMs: [...state.frameMs], fps: fps(),
      perModel: {...state.perModel}, errors: [...state.errors], impls: state.impls,
      cameraProblem: state.cameraProblem,
      tasks: Object.fromEntries([...state.tasks].map(([k, t]) => [k, {status: t.status, msg: t.msg}]))};
  },
  log: () => state.log,
  /** Base64 of the bytes of the last input fed to `model` (one input) or of one of its outputs. */
  input: (model) => b64(Object.values(state.debug.inputs[model])[0]),
  output: (model, name) => b64(state.debug.outputs[model][name]),
  digits,
  stopCamera,
};
