// Buffer checks and copies for constants, tensors and compute(): byte length and element type per data type.
// https://www.w3.org/TR/webnn/#api-mlcontext-writetensor

export const BYTES_PER_ELEMENT = {
  float32: 4, float16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, int8: 1, uint8: 1,
};

// The typed arrays whose element type matches each data type; Uint8Array and DataView fit any type.
const VIEW_TYPES = {
  float32: ['Float32Array'],
  float16: ['Float16Array', 'Uint16Array'],
  int32: ['Int32Array'],
  uint32: ['Uint32Array'],
  int64: ['BigInt64Array'],
  uint64: ['BigUint64Array'],
  int8: ['Int8Array'],
  uint8: ['Uint8ClampedArray'],
};

/** Bytes a descriptor's tensor occupies. */
export function byteLengthOf(desc) {
  return desc.shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[desc.dataType];
}

function isBuffer(v) {
  return v instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer !== 'undefined' && v instanceof SharedArrayBuffer);
}

/** A Uint8Array over `source` (AllowSharedBufferSource) after checking it fits `desc`; no copy. */
export function bytesFor(source, desc, where) {
  let bytes;
  if (isBuffer(source)) {
    bytes = new Uint8Array(source);
  } else if (ArrayBuffer.isView(source)) {
    const kind = source.constructor && source.constructor.name;
    if (!(source instanceof Uint8Array && kind === 'Uint8Array') && !(source instanceof DataView) &&
        !VIEW_TYPES[desc.dataType].includes(kind)) {
      throw new TypeError(`${where}: a ${kind} cannot hold ${desc.dataType} data`);
    }
    bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  } else {
    throw new TypeError(`${where}: expected an ArrayBuffer or ArrayBufferView`);
  }
  const expected = byteLengthOf(desc);
  if (bytes.byteLength !== expected) {
    throw new TypeError(`${where}: buffer has ${bytes.byteLength} bytes, ${desc.dataType}[${desc.shape}] needs ${expected}`);
  }
  return bytes;
}

/** A private copy of `source` (the spec copies at call time), as a Uint8Array over a new ArrayBuffer. */
export function copyFor(source, desc, where) {
  return bytesFor(source, desc, where).slice();
}

/** Encode one MLNumber as the bytes of a 0-D tensor of `dataType`. */
export function scalarBytes(dataType, value) {
  const buf = new ArrayBuffer(BYTES_PER_ELEMENT[dataType]);
  const view = new DataView(buf);
  const num = typeof value === 'bigint' ? Number(value) : Number(value);
  switch (dataType) {
    case 'float32': view.setFloat32(0, num, true); break;
    case 'float16': view.setUint16(0, float16Bits(num), true); break;
    case 'int32': view.setInt32(0, num, true); break;
    case 'uint32': view.setUint32(0, num, true); break;
    case 'int64': view.setBigInt64(0, BigInt.asIntN(64, typeof value === 'bigint' ? value : BigInt(Math.trunc(num))), true); break;
    case 'uint64': view.setBigUint64(0, BigInt.asUintN(64, typeof value === 'bigint' ? value : BigInt(Math.trunc(num))), true); break;
    case 'int8': view.setInt8(0, num); break;
    case 'uint8': view.setUint8(0, num); break;
    default: throw new TypeError(`unknown data type ${dataType}`);
  }
  return new Uint8Array(buf);
}

/** IEEE half-precision bits of a number, round to nearest even. */
export function float16Bits(x) {
  if (typeof Math.f16round === 'function') {
    const dv = new DataView(new ArrayBuffer(2));
    if (typeof dv.setFloat16 === 'function') { dv.setFloat16(0, x, true); return dv.getUint16(0, true); }
  }
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
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
