// MLGraphBuilder: every operator method is generated from the core's op table (py_core/spec), and each
// call validates synchronously in the page's Pyodide.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder

import OPS from '../generated/ops.json';
import {checkBufferSource, copyFor, scalarBytes} from './buffers.js';
import {
  DATA_TYPES, convertValue, toDOMString, toDictionary, toEnum, toMLNumberValue, toOperandDescriptor, toRecord,
  toSequence,
} from './idl.js';
import {
  builderState, contextState, defineInterface, foreignHint, operandState, stateOf, tensorState,
} from './internal.js';
import {makeOperand} from './operand.js';
import {isStrict} from './compat.js';

export const OPERATOR_NAMES = OPS.map((op) => op.name);

// Builders dropped without build() release their graph in the page's builder host once collected.
const unbuilt = new FinalizationRegistry(({runtime, bid}) => {
  try { runtime.call('release', bid); } catch (_) { /* the runtime is gone */ }
});

/** "can not build": build() was called, or the context is lost.  https://www.w3.org/TR/webnn/#mlgraphbuilder-can-build */
function checkCanBuild(s, where) {
  if (s.built) throw new DOMException(`${where}: build() has already been called on this MLGraphBuilder`, 'InvalidStateError');
  if (s.core.lost) throw new DOMException(`${where}: the MLContext is lost`, 'InvalidStateError');
}

/** WebIDL conversion of an MLOperand argument (any builder); ownership is checked after canBuild. */
function operandArg(v, where) {
  const o = operandState.get(v);
  if (!o) throw new TypeError(`${where} is not an MLOperand${foreignHint(v, 'MLOperand', operandState)}`);
  return {o, where};
}

/** "Validate operand": the operand must come from this builder.  https://www.w3.org/TR/webnn/#mlgraphbuilder-validate-operand */
function ownId(builder, arg) {
  if (arg.o.builder !== builder) throw new TypeError(`${arg.where} was created by another MLGraphBuilder`);
  return arg.o.id;
}

function convertArg(param, v, where) {
  if (param.kind === 'MLOperand') return operandArg(v, where);
  if (param.kind === 'sequence<MLOperand>') return toSequence(v, where, operandArg);
  return convertValue(param, v, where);
}

function resolveArg(builder, param, v) {
  if (param.kind === 'MLOperand') return ownId(builder, v);
  if (param.kind === 'sequence<MLOperand>') return v.map((x) => ownId(builder, x));
  return v;
}

function operatorMethod(spec) {
  const required = spec.params.filter((p) => p.required).length;
  const where = `MLGraphBuilder.${spec.name}`;
  const fn = {[spec.name](...args) {
    const s = stateOf(builderState, this, where);
    if (args.length < required) {
      throw new TypeError(`${where}: ${required} argument(s) required, but only ${args.length} present`);
    }
    // WebIDL converts every argument before the method steps run (TypeError), then "can build" is checked.
    const converted = [];
    spec.params.forEach((p, i) => {
      if (args[i] === undefined && !p.required) return;
      converted.push([p, convertArg(p, args[i], `${where}: argument '${p.name}'`)]);
    });
    const options = toDictionary(args[spec.params.length], `${where}: options`);
    for (const p of spec.options) {
      const v = options[p.name];
      if (v !== undefined) converted.push([p, convertArg(p, v, `${where}: options.${p.name}`)]);
    }
    const label = options.label === undefined ? '' : toDOMString(options.label, `${where}: options.label`);
    checkCanBuild(s, where);
    const payload = {};
    for (const [p, v] of converted) payload[p.name] = resolveArg(this, p, v);
    const outs = s.runtime.call('op', s.bid, spec.name, payload, label);
    const operands = outs.map((o) => makeOperand(this, o));
    return spec.returns === 'operands' ? operands : operands[0];
  }}[spec.name];
  return fn;
}

export class MLGraphBuilder {
  /** new MLGraphBuilder(context).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constructor */
  constructor(context) {
    if (arguments.length < 1) throw new TypeError('MLGraphBuilder: 1 argument required, but only 0 present');
    const core = contextState.get(context);
    if (!core) {
      throw new TypeError(`MLGraphBuilder: the argument is not an MLContext${foreignHint(context, 'MLContext', contextState)}`);
    }
    if (core.lost) throw new DOMException('MLGraphBuilder: the MLContext is lost', 'InvalidStateError');
    // Chromium accepts a repeated input name at input() and refuses it at build(); the draft refuses it at input()
    const bid = core.runtime.call('new_builder', !isStrict());
    builderState.set(this, {
      core, context, runtime: core.runtime, bid, constants: new Map(), constantTensors: new Map(), built: false,
    });
    unbuilt.register(this, {runtime: core.runtime, bid}, this);
  }

  /** input(name, descriptor).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-input */
  input(name, descriptor) {
    const where = 'MLGraphBuilder.input';
    const s = stateOf(builderState, this, where);
    if (arguments.length < 2) throw new TypeError(`${where}: 2 arguments required, but only ${arguments.length} present`);
    const n = toDOMString(name, `${where}: name`);
    const desc = toOperandDescriptor(descriptor, `${where}: descriptor`);
    checkCanBuild(s, where);
    return makeOperand(this, s.runtime.call('input', s.bid, n, desc));
  }

  /** constant(descriptor, buffer) | constant(dataType, value) | constant(tensor).
   *  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-constant */
  constant(...args) {
    const where = 'MLGraphBuilder.constant';
    const s = stateOf(builderState, this, where);
    // WebIDL overload resolution: one argument selects constant(tensor); two select by the first argument's
    // type: a dictionary (object, null or undefined) picks constant(descriptor, buffer), anything else the enum.
    if (args.length === 0) throw new TypeError(`${where}: at least 1 argument required, but only 0 present`);
    if (args.length === 1) return constantTensor(this, s, args[0]);
    const [a, b] = args;
    if (a === undefined || a === null || typeof a === 'object' || typeof a === 'function') {
      const desc = toOperandDescriptor(a, `${where}: descriptor`);
      checkBufferSource(b, `${where}: buffer`);
      checkCanBuild(s, where);
      // the draft's order: "check dimensions" before "validate buffer with descriptor"
      s.core.checkDescriptor(desc, where, 'constant');
      const bytes = copyFor(b, desc, `${where}: buffer`);
      const out = s.runtime.call('constant', s.bid, desc);
      s.constants.set(out.id, bytes);
      return makeOperand(this, out);
    }
    const dataType = toEnum(a, `${where}: dataType`, DATA_TYPES, 'MLOperandDataType');
    const value = toMLNumberValue(b, `${where}: value`);
    // WPT ("Throw if using BigInt value for float32 data type") rejects a bigint for a floating-point type
    if (typeof value === 'bigint' && (dataType === 'float32' || dataType === 'float16')) {
      throw new TypeError(`${where}: a BigInt value cannot be used for a ${dataType} constant`);
    }
    checkCanBuild(s, where);
    const out = s.runtime.call('constant', s.bid, {dataType, shape: []});
    s.constants.set(out.id, scalarBytes(dataType, value));
    return makeOperand(this, out);
  }

  /** build(outputs): compile in the worker, once per builder.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build */
  async build(outputs) {
    const where = 'MLGraphBuilder.build';
    const s = stateOf(builderState, this, where);
    if (arguments.length < 1) throw new TypeError(`${where}: 1 argument required, but only 0 present`);
    const record = toRecord(outputs, `${where}: outputs`, operandArg);
    checkCanBuild(s, where);
    if (record.length === 0) throw new TypeError(`${where}: at least one output is required`);
    const ids = {};
    for (const [name, arg] of record) {
      if (name === '') throw new TypeError(`${where}: an output name must not be empty`);
      ids[name] = ownId(this, arg);
    }
    // The spec checks this for output operands only; a destroyed constant tensor anywhere cannot be compiled.
    for (const t of s.constantTensors.values()) {
      if (t.destroyed) throw new TypeError(`${where}: a constant operand's MLTensor has been destroyed`);
    }
    // {graph: the graph's JSON text, passed on to the worker unread, constants: ids, inputs/outputs: descriptors}
    const built = s.runtime.call('build', s.bid, ids);
    const constants = new Map();
    const constantTensors = {};
    for (const id of built.constants) {
      if (s.constants.has(id)) constants.set(id, s.constants.get(id));
      else if (s.constantTensors.has(id)) constantTensors[id] = s.constantTensors.get(id).id;
    }
    s.built = true;
    s.constants.clear();
    s.constantTensors.clear();
    unbuilt.unregister(this);
    return s.core.buildGraph(built, constants, constantTensors, where);
  }
}

/** constant(tensor): a constant operand whose data is a constant MLTensor of the same context. */
function constantTensor(builder, s, tensor) {
  const where = 'MLGraphBuilder.constant';
  const t = tensorState.get(tensor);
  if (!t) throw new TypeError(`${where}: the argument is not an MLTensor${foreignHint(tensor, 'MLTensor', tensorState)}`);
  if (t.context !== s.context) throw new TypeError(`${where}: the tensor belongs to another MLContext`);
  if (t.destroyed) throw new TypeError(`${where}: the tensor has been destroyed`);
  if (!t.constant) throw new TypeError(`${where}: the tensor was not created by createConstantTensor()`);
  checkCanBuild(s, where);
  const out = s.runtime.call('constant', s.bid, {dataType: t.dataType, shape: [...t.shape]});
  s.constantTensors.set(out.id, t);
  return makeOperand(builder, out);
}

for (const spec of OPS) {
  Object.defineProperty(MLGraphBuilder.prototype, spec.name, {
    value: operatorMethod(spec), writable: true, enumerable: true, configurable: true,
  });
}
defineInterface(MLGraphBuilder, 'MLGraphBuilder', {
  input: 2, constant: 1, build: 1,
  ...Object.fromEntries(OPS.map((op) => [op.name, op.params.filter((p) => p.required).length])),
}, 1);
