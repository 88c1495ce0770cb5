// WebIDL conversions for builder arguments and option dictionaries, done before the core validates.
// https://webidl.spec.whatwg.org/#es-type-mapping

const MAX_ULONG = 2 ** 32 - 1;

function fail(where, message) {
  throw new TypeError(`${where}: ${message}`);
}

function toNumber(v, where) {
  if (typeof v === 'bigint') fail(where, 'a BigInt is not accepted here');
  if (typeof v === 'symbol') fail(where, 'a Symbol is not accepted here');
  return Number(v);
}

/** [EnforceRange] unsigned long. */
export function toUnsignedLong(v, where) {
  const n = toNumber(v, where);
  if (!Number.isFinite(n)) fail(where, `${String(v)} is not a finite number`);
  const t = Math.trunc(n);
  if (t < 0 || t > MAX_ULONG) fail(where, `${String(v)} is outside the unsigned long range`);
  return t;
}

/** [EnforceRange] long. */
export function toLong(v, where) {
  const n = toNumber(v, where);
  if (!Number.isFinite(n)) fail(where, `${String(v)} is not a finite number`);
  const t = Math.trunc(n);
  if (t < -(2 ** 31) || t > 2 ** 31 - 1) fail(where, `${String(v)} is outside the long range`);
  return t;
}

/** Restricted double / float: finite numbers only. */
export function toFiniteNumber(v, where, isFloat = false) {
  const n = toNumber(v, where);
  const x = isFloat ? Math.fround(n) : n;
  if (!Number.isFinite(x)) fail(where, `${String(v)} is not a finite ${isFloat ? 'float' : 'double'}`);
  return x;
}

/** sequence<T>: any iterable object. */
export function toSequence(v, where, convert) {
  if (v === null || typeof v !== 'object' || typeof v[Symbol.iterator] !== 'function') {
    fail(where, 'expected a sequence');
  }
  return Array.from(v, (x, i) => convert(x, `${where}[${i}]`));
}

/** An IDL enum value. */
export function toEnum(v, where, values, enumName) {
  const s = String(v);
  if (!values.includes(s)) fail(where, `'${s}' is not a valid value of enum ${enumName}`);
  return s;
}

/** MLNumber = (bigint or unrestricted double), encoded for JSON: non-finite and bigint values are tagged. */
export function toMLNumber(v, where) {
  if (typeof v === 'bigint') return {$n: v.toString()};
  const n = toNumber(v, where);
  return Number.isFinite(n) ? n : {$n: String(n)};
}

/** A dictionary argument: undefined/null is an empty dictionary, anything else must be an object. */
export function toDictionary(v, where) {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' && typeof v !== 'function') fail(where, 'expected a dictionary object');
  return v;
}

/** Convert one non-operand value by the kind the core's op table gives. */
export function convertValue(param, v, where) {
  switch (param.kind) {
    case 'unsigned long': return toUnsignedLong(v, where);
    case 'long': return toLong(v, where);
    case 'sequence<unsigned long>': return toSequence(v, where, toUnsignedLong);
    case 'sequence<long>': return toSequence(v, where, toLong);
    case '(unsigned long or sequence<unsigned long>)':
      return (v !== null && typeof v === 'object') ? toSequence(v, where, toUnsignedLong) : toUnsignedLong(v, where);
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

export const DATA_TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'uint64', 'int8', 'uint8'];

/** MLOperandDescriptor {dataType, shape}; the legacy `dimensions` member is accepted too. */
export function toOperandDescriptor(v, where) {
  const d = toDictionary(v, where);
  if (d.dataType === undefined) fail(where, "the descriptor's dataType is required");
  const dataType = toEnum(d.dataType, `${where}.dataType`, DATA_TYPES, 'MLOperandDataType');
  const rawShape = d.shape !== undefined ? d.shape : d.dimensions;
  if (rawShape === undefined) fail(where, "the descriptor's shape is required");
  const shape = toSequence(rawShape, `${where}.shape`, toUnsignedLong);
  return {dataType, shape};
}
