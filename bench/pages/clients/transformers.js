// transformers.js (npm @huggingface/transformers, which bundles its own onnxruntime-web) run unchanged on a
// device: 'webnn' (whatever navigator.ml is: the polyfill where the browser has none) or 'wasm' (the reference),
// with the tiny model folders the dev server serves at /clients/transformers-models/.  Used by the browser tests
// (tests/browser/test_clients_transformers.py).
//
// Every run returns {outputs: [{dims, data: number[]}], ids and text (text generation's), partitions (the WebNN
// EP's own count, clients.js ortPartitions), and the polyfill's worker graphs: graphsBefore, graphsOpen (while the
// pipeline is open), graphsDisposed (after its dispose()) and graphsReleased (after the page's context, if any, is
// destroyed)}.

import {capturingConsole, hookConsole, ortPartitions} from './clients.js';

let loading = null;

/** transformers.js loaded once per page: local models only, its onnxruntime-web files from /vendor/, one thread. */
export function load() {
  if (!loading) {
    hookConsole();
    loading = import('/vendor/transformers/transformers.min.js').then((T) => {
      T.env.allowRemoteModels = false;
      T.env.allowLocalModels = true;
      T.env.localModelPath = '/clients/transformers-models/';
      T.env.useBrowserCache = false;
      const ort = (name) => new URL(`/vendor/transformers-ort/${name}`, location.href).href;
      // the asyncify build: the one transformers.js picks itself, and WebNN's calls are asynchronous
      T.env.backends.onnx.wasm.wasmPaths = {
        mjs: ort('ort-wasm-simd-threaded.asyncify.mjs'), wasm: ort('ort-wasm-simd-threaded.asyncify.wasm')};
      T.env.backends.onnx.wasm.numThreads = 1;
      // info level carries the WebNN EP's partition count (clients.js ortPartitions)
      T.env.backends.onnx.logLevel = 'info';
      return T;
    });
  }
  return loading;
}

const graphs = async () => (globalThis.webnnPolyfill ? (await webnnPolyfill.workerStats()).graphs : null);

function plain(tensor) {
  const t = tensor.type === 'float16' ? tensor.to('float32') : tensor;
  return {dims: [...t.dims], data: Array.from(t.data, Number)};
}

/**
 * One pipeline: open it on `device`, run it on `input`, dispose it.  `context`: pass an MLContext of
 * navigator.ml to onnxruntime-web (`session_options.executionProviders`) instead of letting it create one, the
 * line browsers without GPUDevice need (docs/compatibility.md); that context is destroyed after dispose().
 *   task 'feature-extraction': input a list of texts; `padTo` pads (and calls the model itself) to that length
 *   task 'image-classification': input [{width, height, data: RGB bytes}]; outputs the model's logits
 *   task 'text-generation': input a prompt; `maxNewTokens` greedy tokens
 */
export async function run({task, model, device, dtype = 'fp32', input, padTo = 0, maxNewTokens = 8,
  context = false}) {
  const T = await load();
  const options = {device, dtype, session_options: {logSeverityLevel: 1}};
  let ml = null;
  if (context) {
    ml = await navigator.ml.createContext();
    options.session_options.executionProviders = [{name: 'webnn', context: ml}];
  }
  const before = await graphs();
  const created = await capturingConsole(() => T.pipeline(task, model, options));
  const pipe = created.value;
  const result = {outputs: [], ids: null, text: null, partitions: ortPartitions(created.lines)};
  try {
    if (task === 'feature-extraction') {
      const inputs = pipe.tokenizer(input, padTo ? {padding: 'max_length', max_length: padTo, truncation: true}
        : {padding: true, truncation: true});
      result.outputs.push(plain((await pipe.model(inputs)).last_hidden_state));
    } else if (task === 'image-classification') {
      const images = input.map((im) => new T.RawImage(Uint8ClampedArray.from(im.data), im.width, im.height, 3));
      const {pixel_values} = await pipe.processor(images);
      result.outputs.push(plain((await pipe.model({pixel_values})).logits));
    } else if (task === 'text-generation') {
      const inputs = pipe.tokenizer(input);
      const ids = await pipe.model.generate({...inputs, max_new_tokens: maxNewTokens, do_sample: false});
      result.ids = Array.from(ids.data, Number);
      result.text = pipe.tokenizer.decode(result.ids, {skip_special_tokens: true});
    } else {
      throw new TypeError(`not a task this page runs: ${task}`);
    }
    result.graphsOpen = await graphs();
  } finally {
    await pipe.dispose();
  }
  result.graphsDisposed = await graphs();
  if (ml) ml.destroy();
  result.graphsReleased = await graphs();
  result.graphsBefore = before;
  return result;
}
