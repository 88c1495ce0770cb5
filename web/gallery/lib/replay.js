// Replays a recorded WebNN program (py_core/loaders/recording.py) against ANY MLGraphBuilder: the polyfill's
// or the browser's own.  A program is JSON steps plus one weights ArrayBuffer; see recording.py for the format.
// https://www.w3.org/TR/webnn/#api-mlgraphbuilder

const TYPED_ARRAYS = {
  float32: Float32Array,
  float16: globalThis.Float16Array || Uint16Array,  // raw bits where Float16Array is missing
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int8: Int8Array,
  uint8: Uint8Array,
};

/** A typed array over `weights` for one constant step (no copy: the builder copies, as the spec says). */
export function constantView(weights, step) {
  const Ctor = TYPED_ARRAYS[step.desc.dataType];
  if (!Ctor) throw new TypeError(`replay: constant #${step.id} has unknown dataType ${step.desc.dataType}`);
  const {offset, byteLength} = step.constant;
  if (offset + byteLength > weights.byteLength) {
    throw new RangeError(`replay: constant #${step.id} [${offset}, +${byteLength}) is outside the weights`);
  }
  return new Ctor(weights, offset, byteLength / Ctor.BYTES_PER_ELEMENT);
}

function decode(value, operands) {
  if (Array.isArray(value)) return value.map((v) => decode(v, operands));
  if (value && typeof value === 'object') {
    if ('operand' in value && Object.keys(value).length === 1) {
      const o = operands[value.operand];
      if (o === undefined) throw new Error(`replay: operand #${value.operand} is used before it is defined`);
      return o;
    }
    if ('number' in value && Object.keys(value).length === 1) return Number(value.number);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v, operands)]));
  }
  return value;
}

function sameShape(operand, desc) {
  let shape = operand.shape ?? operand.dimensions;  // MLOperand.shape; older drafts: shape() or dimensions
  if (typeof shape === 'function') shape = shape.call(operand);
  return shape == null || Array.from(shape).join() === desc.shape.join();
}

/**
 * Replay `program` on `builder` (an MLGraphBuilder); returns {outputs: {name: MLOperand}, operands}.
 * Each step's result is checked against the recorded descriptor, so a builder that infers a different
 * shape fails here, naming the step, rather than later with a wrong picture.
 */
export function replay(program, weights, builder) {
  if (program.format !== 'webnn-program' || program.version !== 1) {
    throw new TypeError(`replay: not a webnn-program v1 (format ${program.format}, version ${program.version})`);
  }
  const operands = [];
  program.steps.forEach((step, index) => {
    try {
      if ('input' in step) {
        operands[step.id] = builder.input(step.input, step.desc);
      } else if ('constant' in step) {
        operands[step.id] = builder.constant(step.desc, constantView(weights, step));
      } else {
        const method = builder[step.op];
        if (typeof method !== 'function') throw new TypeError(`this MLGraphBuilder has no ${step.op}()`);
        const args = decode(step.args, operands);
        const options = decode(step.options, operands);
        const result = method.call(builder, ...args, options);
        const list = Array.isArray(result) ? result : [result];
        if (list.length !== step.out.length) {
          throw new Error(`returned ${list.length} operand(s), the program expects ${step.out.length}`);
        }
        list.forEach((o, k) => {
          if (!sameShape(o, step.descs[k])) {
            throw new Error(`output ${k} has shape [${o.shape}], the program recorded [${step.descs[k].shape}]`);
          }
          operands[step.out[k]] = o;
        });
      }
    } catch (e) {
      const what = step.op ? `${step.op} '${step.options?.label ?? ''}'` : ('input' in step ? 'input' : 'constant');
      const err = new Error(`replay step ${index} (${what}): ${e && e.message ? e.message : e}`, {cause: e});
      err.name = e && e.name ? e.name : 'Error';
      throw err;
    }
  });
  const outputs = {};
  for (const [name, out] of Object.entries(program.outputs)) outputs[name] = operands[out.operand];
  return {outputs, operands};
}

/** Replay on a new builder of `context` and build: resolves to the MLGraph. */
export async function buildGraph(program, weights, context, GraphBuilder = globalThis.MLGraphBuilder) {
  const builder = new GraphBuilder(context);
  const {outputs} = replay(program, weights, builder);
  return builder.build(outputs);
}
