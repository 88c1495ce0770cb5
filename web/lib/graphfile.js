// The graph file (docs/graph-file.md), JS side: read, write and replay one against ANY MLGraphBuilder (the
// polyfill's or the browser's own).  The Python twin is py_core/graphfile.py; WPT cases on their way to the
// comparison bench, the bench's model graphs and recorded TFLite models are all this one format.
// Served by the dev server at /lib/graphfile.js (an ES module with no imports).
// https://www.w3.org/TR/webnn/#mlgraphbuilder

export const FORMAT = 'webnn-graph';
export const VERSION = 1;

export const TYPED_ARRAYS = {
  float32: Float32Array,
  float16: globalThis.Float16Array || Uint16Array,  // raw bits where Float16Array is missing
  int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  int8: Int8Array, uint8: Uint8Array,
  int4: Uint8Array, uint4: Uint8Array,  // two elements per byte, as MLGraphBuilder.constant() takes them
};

const INT_TEXT = /^-?\d+$/;

/** Throw unless `graph` is a graph file this module reads. */
export function check(graph) {
  if (!graph || graph.format !== FORMAT || graph.version !== VERSION) {
    throw new TypeError(`graph file: not a ${FORMAT} version ${VERSION} file ` +
      `(format ${graph && graph.format}, version ${graph && graph.version})`);
  }
  return graph;
}

// ------------------------------------------------------------------------------------------ values

/** A JS argument value as graph-file JSON: MLOperands by name (`names`: Map operand -> name), BigInts and
 *  numbers JSON cannot hold tagged {$n: text}. */
export function encodeValue(v, names = new Map()) {
  if (names.has(v)) return {$op: names.get(v)};
  if (typeof v === 'bigint') return {$n: v.toString()};
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return {$n: 'NaN'};
    if (!Number.isFinite(v)) return {$n: v > 0 ? 'Infinity' : '-Infinity'};
    return Object.is(v, -0) ? {$n: '-0.0'} : v;
  }
  if (Array.isArray(v)) return v.map((x) => encodeValue(x, names));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encodeValue(x, names)]));
  return v;
}

/** Undo encodeValue: {$op} from `operands` (name -> MLOperand), {$n} as BigInt (integer text) or Number. */
export function decodeValue(v, operands = {}) {
  if (Array.isArray(v)) return v.map((x) => decodeValue(x, operands));
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$op') {
      if (!(v.$op in operands)) throw new TypeError(`graph file: operand '${v.$op}' is used before it is defined`);
      return operands[v.$op];
    }
    if (keys.length === 1 && keys[0] === '$n') return INT_TEXT.test(v.$n) ? BigInt(v.$n) : Number(v.$n);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decodeValue(x, operands)]));
  }
  return v;
}

// ------------------------------------------------------------------------------------------- bytes

export function fromBase64(s) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(s);
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function toBase64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function count(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

/** The values of an input or constant entry ({dataType, shape, data}) as a typed array of its type: a view of
 *  `weights` (no copy: MLGraphBuilder.constant() copies) for {offset, byteLength}, else fresh bytes. */
export function tensorData(entry, weights, name = '') {
  const Ctor = TYPED_ARRAYS[entry.dataType];
  if (!Ctor) throw new TypeError(`graph file: '${name}' has unknown dataType ${entry.dataType}`);
  const data = entry.data;
  if (!data) return null;
  if ('offset' in data) {
    const {offset, byteLength} = data;
    if (!weights || offset + byteLength > weights.byteLength) {
      throw new RangeError(`graph file: '${name}' bytes [${offset}, +${byteLength}) are outside the weights ` +
        `(${weights ? weights.byteLength : 0} bytes)`);
    }
    return new Ctor(weights, offset, byteLength / Ctor.BYTES_PER_ELEMENT);
  }
  if (!('base64' in data)) throw new TypeError(`graph file: '${name}' data has neither offset nor base64`);
  const bytes = fromBase64(data.base64);
  const copy = new Uint8Array(bytes.length);  // an own, aligned buffer for any element size
  copy.set(bytes);
  const values = new Ctor(copy.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
  if (!data.fill) return values;
  if (values.length !== 1) throw new TypeError(`graph file: '${name}' fills with ${values.length} values, not one`);
  return new Ctor(count(entry.shape)).fill(values[0]);
}

/** Every operand's descriptor the file knows ({dataType, shape} by name): inputs, constants, and the
 *  results of operations written with `descriptors`. */
export function descriptors(graph) {
  const out = {};
  for (const [n, e] of [...Object.entries(graph.inputs), ...Object.entries(graph.constants || {})]) {
    out[n] = {dataType: e.dataType, shape: e.shape};
  }
  for (const op of graph.operations) {
    (op.descriptors || []).forEach((d, i) => { out[op.outputs[i]] = d; });
  }
  return out;
}

// ---------------------------------------------------------------------------------------- replayer

function shapeOf(operand) {
  let shape = operand.shape ?? operand.dimensions;  // MLOperand.shape; older drafts: shape() or dimensions
  if (typeof shape === 'function') shape = shape.call(operand);
  return shape == null ? null : Array.from(shape);
}

function stepError(e, what) {
  const err = new Error(`${what}: ${e && e.message ? e.message : e}`, {cause: e});
  err.name = e && e.name ? e.name : 'Error';
  return err;
}

/**
 * Replay `graph` (the file's JSON object) on `builder` (an MLGraphBuilder); `weights` is the ArrayBuffer its
 * {offset} data point into.  Returns {outputs: {name: MLOperand}, operands: {name: MLOperand}}.
 * Each result is checked against the file's recorded descriptors, so a builder that infers another shape fails
 * here, naming the step.  A builder without the method throws NotSupportedError.  `onError(error, step)`
 * (step: {kind: 'input' | 'constant' | 'operation', name, index, op?, args?}) may return the error to throw
 * instead of the default (the builder's error, its name kept, its message prefixed with the step).
 * `otherBuilder()` gives a second MLGraphBuilder of the same context: it makes the inputs and constants marked
 * `foreign`, operands `builder` must refuse (https://www.w3.org/TR/webnn/#mlgraphbuilder-validate-operand).
 */
export function replay(graph, weights, builder, {onError, otherBuilder} = {}) {
  check(graph);
  const operands = {};
  let other = null;
  const owner = (e, name) => {
    if (!e.foreign) return builder;
    if (!otherBuilder) throw new TypeError(`graph file: '${name}' is foreign, and replay() was given no otherBuilder`);
    return (other = other || otherBuilder());
  };
  const fail = (e, step) => {
    const mine = onError ? onError(e, step) : null;
    if (mine) return mine;
    const what = step.kind === 'operation' ? `${step.op} '${step.label ?? ''}'` : `${step.kind} '${step.name}'`;
    return stepError(e, `replay step ${step.index} (${what})`);
  };
  let index = 0;
  for (const [name, e] of Object.entries(graph.inputs)) {
    try {
      operands[name] = owner(e, name).input(name, {dataType: e.dataType, shape: e.shape});
    } catch (err) { throw fail(err, {kind: 'input', name, index, dataType: e.dataType}); }
    index++;
  }
  for (const [name, e] of Object.entries(graph.constants || {})) {
    try {
      operands[name] = owner(e, name).constant({dataType: e.dataType, shape: e.shape}, tensorData(e, weights, name));
    } catch (err) { throw fail(err, {kind: 'constant', name, index, dataType: e.dataType}); }
    index++;
  }
  for (const op of graph.operations) {
    const step = {kind: 'operation', name: op.outputs.join(','), index, op: op.op, label: op.options?.label};
    try {
      if (typeof builder[op.op] !== 'function') {
        throw new DOMException(`MLGraphBuilder.${op.op} does not exist in this implementation`, 'NotSupportedError');
      }
      const args = decodeValue(op.args, operands);
      if (op.options && Object.keys(op.options).length) args.push(decodeValue(op.options, operands));
      step.args = args;
      const result = builder[op.op](...args);
      const list = Array.isArray(result) ? result : [result];
      if (list.length !== op.outputs.length) {
        throw new Error(`returned ${list.length} operand(s), the file names ${op.outputs.length}`);
      }
      list.forEach((o, k) => {
        const want = op.descriptors && op.descriptors[k];
        const got = shapeOf(o);
        if (want && got && got.join() !== want.shape.join()) {
          throw new Error(`output ${k} has shape [${got}], the file recorded [${want.shape}]`);
        }
        operands[op.outputs[k]] = o;
      });
    } catch (err) { throw fail(err, step); }
    index++;
  }
  const outputs = {};
  for (const [name, operand] of Object.entries(graph.outputs)) {
    if (!(operand in operands)) throw new TypeError(`graph file: output '${name}' names no operand ('${operand}')`);
    outputs[name] = operands[operand];
  }
  return {outputs, operands};
}

/** Replay on a new builder of `context` and build: resolves to the MLGraph. */
export async function buildGraph(graph, weights, context, GraphBuilder = globalThis.MLGraphBuilder) {
  const builder = new GraphBuilder(context);
  const {outputs} = replay(graph, weights, builder, {otherBuilder: () => new GraphBuilder(context)});
  return builder.build(outputs);
}

// ------------------------------------------------------------------------------------------- files

/** Fetch `<stem>.json` and, when it names weights, `<stem>.bin` beside it: {graph, weights}. */
export async function load(url, init = {}) {
  const r = await fetch(url, init);
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
  const graph = check(await r.json());
  let weights = null;
  if (graph.weights) {
    const binURL = new URL(url, location.href);
    binURL.pathname = binURL.pathname.replace(/\.json$/, '') + '.bin';
    const w = await fetch(binURL, init);
    if (!w.ok) throw new Error(`HTTP ${w.status} for ${binURL}`);
    weights = await w.arrayBuffer();
    if (weights.byteLength !== graph.weights.byteLength) {
      throw new RangeError(`${binURL}: ${weights.byteLength} bytes, the file names ${graph.weights.byteLength}`);
    }
  }
  return {graph, weights};
}

/** The JSON text of a graph file (strict JSON: numbers JSON cannot hold must already be tagged). */
export function stringify(graph) {
  check(graph);
  return JSON.stringify(graph, (k, v) => {
    if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) {
      throw new TypeError(`graph file: ${v} at '${k}' must be written as {$n} (encodeValue)`);
    }
    if (typeof v === 'bigint') throw new TypeError(`graph file: bigint at '${k}' must be written as {$n} (encodeValue)`);
    return v;
  });
}
