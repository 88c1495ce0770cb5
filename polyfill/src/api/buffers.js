// Buffer checks and copies for constants, tensors and compute(): byte length and element type per data type,
// and the cast of an MLNumber to a data type (the same rule as py_core/spec/mlnumber.py).
// https://www.w3.org/TR/webnn/#validate-buffer-with-descriptor  https://www.w3.org/TR/webnn/#algorithms-casting

import TYPES from '../generated/types.json';

// Bytes per element and the integer types' ranges: py_core/types.py's (scripts/gen_op_table.py).
export const BYTES_PER_ELEMENT = TYPES.bytesPerElement;
const INT_RANGES = Object.fromEntries(
  Object.entries(TYPES.intRanges).map(([type, [lo, hi]]) => [type, [BigInt(lo), BigInt(hi)]]));

// The view types that match each data type (the spec's appendix table); any Uint8Array fits every type.
// Uint16Array carries float16 bits where Float16Array is missing (the spec's note on Float16Array, and WPT).
const VIEW_TYPES = {
  float32: ['Float32Array'],
  float16: ['Float16Array', 'Uint16Array'],
  int32: ['Int32Array'],
  uint32: ['Uint32Array'],
  int64: ['BigInt64Array'],
  uint64: ['BigUint64Array'],
  int8: ['Int8Array'],
  uint8: ['Uint8Array'],
};

// %TypedArray%.prototype[@@toStringTag] gives the element type of any typed array, from any realm,
// and undefined for a DataView.
const typedArrayName = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Int8Array.prototype), Symbol.toStringTag).get;

/** Bytes a descriptor's tensor occupies. */
export function byteLengthOf(desc) {
  return desc.shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[desc.dataType];
}

function isArrayBuffer(v) {
  const tag = v !== null && typeof v === 'object' ? Object.prototype.toString.call(v) : '';
  return tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]';
}

/**
 * A Uint8Array over `source` (an AllowSharedBufferSource) after checking it fits `desc`; no copy.
 * `allowLarger` accepts a buffer longer than the tensor (readTensor(tensor, outputData), as WPT expects);
 * `anyView` accepts a view of any element type (readTensor/writeTensor in Chromium mode, see compat.js).
 */
export function bytesFor(source, desc, where, {allowLarger = false, anyView = false} = {}) {
  let bytes;
  if (isArrayBuffer(source)) {
    bytes = new Uint8Array(source);
  } else if (ArrayBuffer.isView(source)) {
    const kind = typedArrayName.call(source);
    if (!anyView && kind !== 'Uint8Array' && !VIEW_TYPES[desc.dataType].includes(kind)) {
      throw new TypeError(`${where}: a ${kind || 'DataView'} cannot hold ${desc.dataType} data `
        + `(use ${VIEW_TYPES[desc.dataType].join(' or ')}, Uint8Array or an ArrayBuffer)`);
    }
    bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  } else {
    throw new TypeError(`${where}: expected an ArrayBuffer, SharedArrayBuffer or ArrayBufferView`);
  }
  const expected = byteLengthOf(desc);
  if (bytes.byteLength !== expected && !(allowLarger && bytes.byteLength > expected)) {
    throw new TypeError(`${where}: the buffer has ${bytes.byteLength} bytes, ${desc.dataType}[${desc.shape}] `
      + `needs ${allowLarger ? 'at least ' : ''}${expected}${bytes.byteLength === 0 ? ' (is it detached?)' : ''}`);
  }
  return allowLarger ? bytes.subarray(0, expected) : bytes;
}

/** A private copy of `source` (the spec copies at call time), as a Uint8Array over a new ArrayBuffer. */
export function copyFor(source, desc, where, options = {}) {
  return bytesFor(source, desc, where, options).slice();
}

/**
 * Cast an MLNumber (bigint or double) to an integer data type, by the one rule py_core uses for every
 * MLNumber (py_core/spec/mlnumber.py, cast_number): NaN -> 0, a non-integer truncates toward zero (-0 -> 0),
 * then saturate to the type's range (+/-Infinity included).  Truncation follows the WPT vectors, not the
 * spec's round-half-even step of ConvertToInt: webnn/conformance_tests/mlNumber.https.any.js, "cast
 * fractional float to integer", expects clamp(int64, {minValue: 3.9}) to give 3; Chromium's
 * services/webnn/public/cpp/ml_number.cc (base::saturated_cast) does the same.
 * https://www.w3.org/TR/webnn/#algorithms-casting
 */
function castToInt(value, dataType) {
  const [lo, hi] = INT_RANGES[dataType];
  let n;
  if (typeof value === 'bigint') {
    n = value;
  } else if (Number.isNaN(value)) {
    n = 0n;
  } else if (value === Infinity) {
    n = hi;
  } else if (value === -Infinity) {
    n = lo;
  } else {
    // exact: a double beyond 2^53 is already an integer, and BigInt() of an integral double is exact
    n = BigInt(Math.trunc(value));
  }
  return n < lo ? lo : n > hi ? hi : n;
}

/** Encode one MLNumber as the bytes of a 0-D tensor of `dataType`: castToInt for integers, nearest-even for floats. */
export function scalarBytes(dataType, value) {
  const buf = new ArrayBuffer(BYTES_PER_ELEMENT[dataType]);
  const view = new DataView(buf);
  switch (dataType) {
    case 'float32': view.setFloat32(0, Number(value), true); break;
    case 'float16': view.setUint16(0, float16Bits(Number(value)), true); break;
    case 'int64': view.setBigInt64(0, castToInt(value, dataType), true); break;
    case 'uint64': view.setBigUint64(0, castToInt(value, dataType), true); break;
    case 'int32': view.setInt32(0, Number(castToInt(value, dataType)), true); break;
    case 'uint32': view.setUint32(0, Number(castToInt(value, dataType)), true); break;
    case 'int8': view.setInt8(0, Number(castToInt(value, dataType))); break;
    case 'uint8': view.setUint8(0, Number(castToInt(value, dataType))); break;
    default: throw new TypeError(`unknown data type ${dataType}`);
  }
  return new Uint8Array(buf);
}

/** IEEE half-precision bits of a number, round to nearest even. */
export function float16Bits(x) {
  const dv = new DataView(new ArrayBuffer(2));
  if (typeof dv.setFloat16 === 'function') { dv.setFloat16(0, x, true); return dv.getUint16(0, true); }
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  // float64 -> float32 -> float16 can round twice; exact for every value that is already a float32
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  let exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  exp = exp - 127 + 15;
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = sign | (exp << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  return half;
}

/** AllowSharedBufferSource conversion: TypeError unless `v` is an ArrayBuffer, SharedArrayBuffer or a view. */
export function checkBufferSource(v, where) {
  if (!isArrayBuffer(v) && !ArrayBuffer.isView(v)) {
    throw new TypeError(`${where}: expected an ArrayBuffer, SharedArrayBuffer or ArrayBufferView`);
  }
  return v;
}
