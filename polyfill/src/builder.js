// MLGraphBuilder: every operator method is generated from the core's op table (py_core/spec), and each
// call validates synchronously in the page's Pyodide.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder

import OPS from './generated/ops.json';
import {scalarBytes, copyFor} from './buffers.js';
import {convertValue, toDictionary, toOperandDescriptor, toSequence, DATA_TYPES, toEnum} from './idl.js';
import {INTERNAL, builderState, contextState, operandState, tensorState} from './internal.js';
import {makeOperand} from './operand.js';

export const OPERATOR_NAMES = OPS.map((op) => op.name);

function state(builder, what) {
  const s = builderState.get(builder);
  if (!s) throw new TypeError(`Illegal invocation of MLGraphBuilder.${what}`);
  return s;
}

function checkUsable(s, what) {
  if (s.built) throw new DOMException(`${what}: build() has already been called on this builder`, 'InvalidStateError');
  if (contextState.get(s.context).lost) throw new DOMException(`${what}: the context is lost`, 'InvalidStateError');
}

function mixedHint(v) {
  const tag = v !== null && typeof v === 'object' ? Object.prototype.toString.call(v) : '';
  return tag === '[object MLOperand]' && !operandState.has(v)
    ? ' (it belongs to another WebNN implementation; native and polyfill objects cannot be mixed)' : '';
}

function operandId(builder, v, where) {
  const o = operandState.get(v);
  if (!o) throw new TypeError(`${where} is not an MLOperand${mixedHint(v)}`);
  if (o.builder !== builder) throw new TypeError(`${where} was created by another MLGraphBuilder`);
  return o.id;
}

function convertArg(builder, param, v, where) {
  if (param.kind === 'MLOperand') return operandId(builder, v, where);
  if (param.kind === 'sequence<MLOperand>') return toSequence(v, where, (x, w) => operandId(builder, x, w));
  return convertValue(param, v, where);
}

function operatorMethod(spec) {
  const required = spec.params.filter((p) => p.required).length;
  const fn = function (...args) {
    const s = state(this, spec.name);
    const where = `MLGraphBuilder.${spec.name}`;
    if (args.length < required) {
      throw new TypeError(`${where}: ${required} argument(s) required, but only ${args.length} present`);
    }
    checkUsable(s, where);
    const payload = {};
    spec.params.forEach((p, i) => {
      if (args[i] === undefined && !p.required) return;
      payload[p.name] = convertArg(this, p, args[i], `${where}: argument '${p.name}'`);
    });
    const options = toDictionary(args[spec.params.length], `${where}: options`);
    for (const p of spec.options) {
      const v = options[p.name];
      if (v !== undefined) payload[p.name] = convertArg(this, p, v, `${where}: options.${p.name}`);
    }
    const label = options.label === undefined ? '' : String(options.label);
    const outs = s.runtime.call('op', s.bid, spec.name, payload, label);
    const operands = outs.map((o) => makeOperand(this, o));
    return spec.returns === 'operands' ? operands : operands[0];
  };
  Object.defineProperty(fn, 'name', {value: spec.name});
  Object.defineProperty(fn, 'length', {value: required});
  return fn;
}

export class MLGraphBuilder {
  /** new MLGraphBuilder(context).  https://www.w3.org/TR/webnn/#dom-mlgraphbuilder-mlgraphbuilder */
  constructor(context) {
    const cs = contextState.get(context);
    if (!cs) {
      throw new TypeError(`MLGraphBuilder: the argument is not a polyfill MLContext${
        context && Object.prototype.toString.call(context) === '[object MLContext]'
          ? ' (a native MLContext cannot be used with the polyfill builder)' : ''}`);
    }
    if (cs.lost) throw new DOMException('MLGraphBuilder: the context is lost', 'InvalidStateError');
    const bid = cs.runtime.call('new_builder');
    builderState.set(this, {context, runtime: cs.runtime, bid, constants: new Map(),
      constantTensors: new Map(), built: false});
  }

  /** input(name, descriptor).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-input */
  input(name, descriptor) {
    const s = state(this, 'input');
    if (arguments.length < 2) throw new TypeError('MLGraphBuilder.input: 2 arguments required');
    checkUsable(s, 'MLGraphBuilder.input');
    const desc = toOperandDescriptor(descriptor, 'MLGraphBuilder.input: descriptor');
    return makeOperand(this, s.runtime.call('input', s.bid, String(name), desc));
  }

  /** constant(descriptor, buffer) | constant(type, value) | constant(tensor).
   *  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constant */
  constant(a, b) {
    const s = state(this, 'constant');
    if (arguments.length < 1) throw new TypeError('MLGraphBuilder.constant: at least 1 argument required');
    checkUsable(s, 'MLGraphBuilder.constant');
    if (tensorState.has(a)) {
      const t = tensorState.get(a);
      if (t.context !== s.context) throw new TypeError('MLGraphBuilder.constant: the tensor belongs to another context');
      if (!t.constant) throw new TypeError('MLGraphBuilder.constant: the tensor was not created by createConstantTensor()');
      if (t.destroyed) throw new TypeError('MLGraphBuilder.constant: the tensor has been destroyed');
      const out = s.runtime.call('constant', s.bid, {dataType: t.dataType, shape: [...t.shape]});
      s.constantTensors.set(out.id, t.id);
      return makeOperand(this, out);
    }
    if (typeof a === 'string') {
      const dataType = toEnum(a, 'MLGraphBuilder.constant: type', DATA_TYPES, 'MLOperandDataType');
      if (typeof b !== 'bigint') b = Number(b);
      const out = s.runtime.call('constant', s.bid, {dataType, shape: []});
      s.constants.set(out.id, scalarBytes(dataType, b));
      return makeOperand(this, out);
    }
    if (arguments.length < 2) throw new TypeError('MLGraphBuilder.constant: 2 arguments required');
    const desc = toOperandDescriptor(a, 'MLGraphBuilder.constant: descriptor');
    const out = s.runtime.call('constant', s.bid, desc);
    s.constants.set(out.id, copyFor(b, desc, 'MLGraphBuilder.constant'));
    return makeOperand(this, out);
  }

  /** build(outputs): compile in the worker.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build */
  async build(outputs) {
    const s = state(this, 'build');
    checkUsable(s, 'MLGraphBuilder.build');
    const record = toDictionary(outputs, 'MLGraphBuilder.build: outputs');
    const ids = {};
    for (const [name, operand] of Object.entries(record)) {
      ids[name] = operandId(this, operand, `MLGraphBuilder.build: outputs['${name}']`);
    }
    const graph = s.runtime.call('build', s.bid, ids);
    s.built = true;
    const constants = new Map();
    const constantTensors = {};
    for (const o of graph.operands) {
      if (o.kind !== 'constant') continue;
      if (s.constants.has(o.id)) constants.set(o.id, s.constants.get(o.id));
      else if (s.constantTensors.has(o.id)) constantTensors[o.id] = s.constantTensors.get(o.id);
    }
    s.constants.clear();
    return contextState.get(s.context).buildGraph(graph, constants, constantTensors);
  }
}

for (const spec of OPS) {
  Object.defineProperty(MLGraphBuilder.prototype, spec.name, {
    value: operatorMethod(spec), writable: true, enumerable: true, configurable: true,
  });
}
Object.defineProperty(MLGraphBuilder.prototype, Symbol.toStringTag, {value: 'MLGraphBuilder'});
export {INTERNAL};
