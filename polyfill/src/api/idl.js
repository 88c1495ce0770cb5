// WebIDL conversions for arguments and dictionaries, done before the core validates.
// https://webidl.spec.whatwg.org/#es-type-mapping

import TYPES from '../generated/types.json';

// From py_core/types.py (scripts/gen_op_table.py): the core validates with the same values.
const MAX_ULONG = TYPES.maxUnsignedLong;
const MAX_DIMENSION = TYPES.maxDimension;
// WebIDL's long, for [EnforceRange] long arguments (a WebIDL type, not a WebNN limit)
const LONG_MIN = -(2 ** 31);
const LONG_MAX = 2 ** 31 - 1;

export const DATA_TYPES = TYPES.dataTypes;

function fail(where, message) {
  throw new TypeError(`${where}: ${message}`);
}

function isObject(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function');
}

/** ToPrimitive(v, "number"): @@toPrimitive, then valueOf, then toString.  https://tc39.es/ecma262/#sec-toprimitive */
function toPrimitive(v, where) {
  if (!isObject(v)) return v;
  const exotic = v[Symbol.toPrimitive];
  if (exotic !== undefined && exotic !== null) {
    const r = exotic.call(v, 'number');
    if (isObject(r)) fail(where, 'cannot convert the object to a primitive value');
    return r;
  }
  for (const m of ['valueOf', 'toString']) {
    const f = v[m];
    if (typeof f === 'function') {
      const r = f.call(v);
      if (!isObject(r)) return r;
    }
  }
  return fail(where, 'cannot convert the object to a primitive value');
}

/** ToNumeric: a number, or a bigint kept as is.  https://tc39.es/ecma262/#sec-tonumeric */
function toNumeric(v, where) {
  const p = toPrimitive(v, where);
  if (typeof p === 'symbol') fail(where, 'a Symbol cannot be converted to a number');
  return typeof p === 'bigint' ? p : Number(p);
}

function toNumber(v, where) {
  const n = toNumeric(v, where);
  if (typeof n === 'bigint') fail(where, 'a BigInt is not accepted here');
  return n;
}

/** DOMString / USVString (a Symbol throws TypeError, as WebIDL's ToString does). */
export function toDOMString(v, where) {
  if (typeof v === 'symbol') fail(where, 'a Symbol cannot be converted to a string');
  return `${v}`;
}

/** [EnforceRange] unsigned long. */
export function toUnsignedLong(v, where) {
  const n = toNumber(v, where);
  if (!Number.isFinite(n)) fail(where, `${String(n)} is not a finite number`);
  const t = Math.trunc(n);
  if (t < 0 || t > MAX_ULONG) fail(where, `${String(n)} is outside the unsigned long range`);
  return t;
}

/** [EnforceRange] long. */
export function toLong(v, where) {
  const n = toNumber(v, where);
  if (!Number.isFinite(n)) fail(where, `${String(n)} is not a finite number`);
  const t = Math.trunc(n);
  if (t < LONG_MIN || t > LONG_MAX) fail(where, `${String(n)} is outside the long range`);
  return t;
}

/** Restricted double / float: finite numbers only. */
export function toFiniteNumber(v, where, isFloat = false) {
  const n = toNumber(v, where);
  const x = isFloat ? Math.fround(n) : n;
  if (!Number.isFinite(x)) fail(where, `${String(n)} is not a finite ${isFloat ? 'float' : 'double'}`);
  return x;
}

/** sequence<T>: any iterable object. */
export function toSequence(v, where, convert) {
  if (!isObject(v) || typeof v[Symbol.iterator] !== 'function') fail(where, 'expected a sequence');
  return Array.from(v, (x, i) => convert(x, `${where}[${i}]`));
}

/** An IDL enum value. */
export function toEnum(v, where, values, enumName) {
  const s = toDOMString(v, where);
  if (!values.includes(s)) fail(where, `'${s}' is not a valid value of enum ${enumName}`);
  return s;
}

/** MLNumber = (bigint or unrestricted double).  https://www.w3.org/TR/webnn/#typedefdef-mlnumber */
export function toMLNumberValue(v, where) {
  return toNumeric(v, where);
}

/** MLNumber encoded for JSON: non-finite, -0 and bigint values are tagged for the core. */
export function toMLNumber(v, where) {
  const n = toNumeric(v, where);
  if (typeof n === 'bigint') return {$n: n.toString()};
  if (Object.is(n, -0)) return {$n: '-0.0'};  // JSON.stringify(-0) is "0"; the core reads "-0.0" as a float -0
  return Number.isFinite(n) ? n : {$n: String(n)};
}

/** A dictionary argument: undefined/null is an empty dictionary, anything else must be an object. */
export function toDictionary(v, where) {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) fail(where, 'expected a dictionary object');
  return v;
}

/** record<USVString, T>: the object's own enumerable string keys, in order, each value converted. */
export function toRecord(v, where, convert) {
  if (v === undefined || v === null) return [];
  if (!isObject(v)) fail(where, 'expected an object (a record of names to values)');
  const out = [];
  for (const key of Reflect.ownKeys(v)) {
    if (typeof key !== 'string') continue;
    const d = Reflect.getOwnPropertyDescriptor(v, key);
    if (d && d.enumerable) out.push([key, convert(v[key], `${where}['${key}']`)]);
  }
  return out;
}

/** Convert one non-operand value by the kind the core's op table gives. */
export function convertValue(param, v, where) {
  switch (param.kind) {
    case 'unsigned long': return toUnsignedLong(v, where);
    case 'long': return toLong(v, where);
    case 'sequence<unsigned long>': return toSequence(v, where, toUnsignedLong);
    case 'sequence<long>': return toSequence(v, where, toLong);
    case '(unsigned long or sequence<unsigned long>)':
      return isObject(v) ? toSequence(v, where, toUnsignedLong) : toUnsignedLong(v, where);
    case 'double': return toFiniteNumber(v, where);
    case 'float': return toFiniteNumber(v, where, true);
    case 'sequence<float>': return toSequence(v, where, (x, w) => toFiniteNumber(x, w, true));
    case 'boolean': return Boolean(v);
    case 'MLNumber': return toMLNumber(v, where);
    case 'enum': return toEnum(v, where, param.enum, param.enumName);
    case 'sequence<enum>': return toSequence(v, where, (x, w) => toEnum(x, w, param.enum, param.enumName));
    case 'MLOperandDataType': return toEnum(v, where, DATA_TYPES, 'MLOperandDataType');
    default: throw new TypeError(`${where}: unsupported argument kind ${param.kind}`);
  }
}

/** MLOperandDescriptor {dataType, shape}: both required (an earlier draft's `dimensions` is an unknown member, as in
 *  Chromium).  https://www.w3.org/TR/webnn/#dictdef-mloperanddescriptor */
export function toOperandDescriptor(v, where) {
  const d = toDictionary(v, where);
  const rawType = d.dataType;
  if (rawType === undefined) fail(where, 'required member dataType is missing');
  const dataType = toEnum(rawType, `${where}.dataType`, DATA_TYPES, 'MLOperandDataType');
  const rawShape = d.shape;
  if (rawShape === undefined) fail(where, 'required member shape is missing');
  const shape = toSequence(rawShape, `${where}.shape`, toUnsignedLong);
  return {dataType, shape};
}

/** MLTensorDescriptor: an MLOperandDescriptor plus readable/writable (false by default). */
export function toTensorDescriptor(v, where) {
  const d = toDictionary(v, where);
  const desc = toOperandDescriptor(d, where);
  return {...desc, readable: Boolean(d.readable), writable: Boolean(d.writable)};
}

/**
 * "Check dimensions", in the draft's order: every dimension a valid dimension (1 .. 2^31-1), the rank within
 * what is supported (`maxRank`, opSupportLimits' rankRange.max), the element count a valid dimension too, then
 * the byte length within the limit.  https://webmachinelearning.github.io/webnn/#mloperanddescriptor-check-dimensions
 */
export function checkDimensions(desc, where, maxRank, maxByteLength, bytesPerElement) {
  for (const d of desc.shape) {
    if (d < 1 || d > MAX_DIMENSION) fail(where, `dimension ${d} in shape [${desc.shape}] is not a valid dimension`);
  }
  if (desc.shape.length > maxRank) fail(where, `rank ${desc.shape.length} is more than the supported ${maxRank}`);
  const count = desc.shape.reduce((a, b) => a * b, 1);
  if (count > MAX_DIMENSION) {
    fail(where, `${desc.dataType}[${desc.shape}] has ${count} elements, more than a valid dimension (${MAX_DIMENSION})`);
  }
  const bytes = count * bytesPerElement;
  if (bytes > maxByteLength) {
    fail(where, `${desc.dataType}[${desc.shape}] is ${bytes} bytes, more than maxTensorByteLength (${maxByteLength})`);
  }
}
