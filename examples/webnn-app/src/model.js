// A small multilayer perceptron (4 -> 8 -> 3, relu, softmax) with fixed weights, as WebNN builds it and as
// plain JavaScript computes it, to check one against the other.

export const SIZES = {input: 4, hidden: 8, classes: 3};

// deterministic weights in [-1, 1): a 32-bit LCG, so the page and its check need no files
function weights(count, seed) {
  const out = new Float32Array(count);
  let s = seed >>> 0;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

export const W1 = weights(SIZES.input * SIZES.hidden, 1);
export const B1 = weights(SIZES.hidden, 2);
export const W2 = weights(SIZES.hidden * SIZES.classes, 3);
export const B2 = weights(SIZES.classes, 4);

/** The model as a WebNN graph: input x [batch, 4] -> probabilities [batch, 3]. */
export async function buildModel(context, MLGraphBuilder, batch) {
  const b = new MLGraphBuilder(context);
  const f32 = (shape) => ({dataType: 'float32', shape});
  const x = b.input('x', f32([batch, SIZES.input]));
  const h = b.relu(b.gemm(x, b.constant(f32([SIZES.input, SIZES.hidden]), W1),
    {c: b.constant(f32([SIZES.hidden]), B1)}));
  const logits = b.gemm(h, b.constant(f32([SIZES.hidden, SIZES.classes]), W2),
    {c: b.constant(f32([SIZES.classes]), B2)});
  return b.build({probabilities: b.softmax(logits, 1)});
}

/** The same model in float64 JavaScript. */
export function reference(x, batch) {
  const out = new Float64Array(batch * SIZES.classes);
  for (let n = 0; n < batch; n++) {
    const h = new Float64Array(SIZES.hidden);
    for (let j = 0; j < SIZES.hidden; j++) {
      let acc = B1[j];
      for (let i = 0; i < SIZES.input; i++) acc += x[n * SIZES.input + i] * W1[i * SIZES.hidden + j];
      h[j] = Math.max(acc, 0);
    }
    const logits = [];
    for (let k = 0; k < SIZES.classes; k++) {
      let acc = B2[k];
      for (let j = 0; j < SIZES.hidden; j++) acc += h[j] * W2[j * SIZES.classes + k];
      logits.push(acc);
    }
    const max = Math.max(...logits);
    const e = logits.map((v) => Math.exp(v - max));
    const sum = e.reduce((a, v) => a + v, 0);
    e.forEach((v, k) => { out[n * SIZES.classes + k] = v / sum; });
  }
  return out;
}
