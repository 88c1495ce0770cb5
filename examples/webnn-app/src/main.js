import './webnn-config.js';
import webnn, {MLGraphBuilder} from 'pyodide-webnn';
import {SIZES, buildModel, reference} from './model.js';

const status = document.getElementById('status');
const out = document.getElementById('out');

async function run() {
  const batch = 5;
  const x = Float32Array.from({length: batch * SIZES.input}, (_, i) => Math.sin(i + 1) * 2);
  webnn.addEventListener('progress', (e) => { status.textContent = `loading: ${e.detail.stage}`; });
  const context = await webnn.ml.createContext();
  const graph = await buildModel(context, MLGraphBuilder, batch);
  const desc = {dataType: 'float32', shape: [batch, SIZES.input]};
  const xt = await context.createTensor({...desc, writable: true});
  const yt = await context.createTensor({dataType: 'float32', shape: [batch, SIZES.classes], readable: true});
  context.writeTensor(xt, x);
  context.dispatch(graph, {x: xt}, {probabilities: yt});
  const y = new Float32Array(await context.readTensor(yt));
  const expected = reference(x, batch);
  const maxError = Math.max(...y.map((v, i) => Math.abs(v - expected[i])));
  const classes = Array.from({length: batch}, (_, n) => {
    const row = Array.from(y.subarray(n * SIZES.classes, (n + 1) * SIZES.classes));
    return row.indexOf(Math.max(...row));
  });
  out.textContent = `classes: ${classes.join(' ')}\nmax |WebNN - JS reference|: ${maxError.toExponential(2)}`;
  status.textContent = maxError < 1e-5 ? 'ok' : 'mismatch';
  return {probabilities: Array.from(y), expected: Array.from(expected), classes, maxError,
    polyfill: webnn.version, native: !!webnn.native};
}

window.exampleResult = run().catch((e) => {
  status.textContent = `error: ${e.message}`;
  throw e;
});
