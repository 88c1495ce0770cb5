"""Buffers in and out: every AllowSharedBufferSource the spec accepts for each data type (its typed array,
Uint8Array, ArrayBuffer, SharedArrayBuffer, views on either; Float16Array or Uint16Array bits for float16;
BigInt64Array/BigUint64Array for the 64-bit types), TypeError for the wrong size or element type, exact
64-bit and float16 values, the MLNumber cast of constants (the rule of py_core/spec/mlnumber.py), and no
caller buffer modified or detached except by the legacy compute().
https://www.w3.org/TR/webnn/#validate-buffer-with-descriptor
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from py_core.spec.mlnumber import cast_number
from py_core.types import INT_RANGES, DataType

pytestmark = pytest.mark.browser

ACCEPTANCE_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const hasF16 = typeof Float16Array === 'function';
  const types = {
    float32: ['Float32Array'], float16: hasF16 ? ['Float16Array', 'Uint16Array'] : ['Uint16Array'],
    int32: ['Int32Array'], uint32: ['Uint32Array'], int64: ['BigInt64Array'], uint64: ['BigUint64Array'],
    int8: ['Int8Array'], uint8: ['Uint8Array'],
  };
  const bytes = {float32: 4, float16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, int8: 1, uint8: 1};
  const allViews = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
                    'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
                    ...(hasF16 ? ['Float16Array'] : [])];
  const problems = [];
  let accepted = 0, rejected = 0;
  const shape = [2, 3];
  for (const [dataType, own] of Object.entries(types)) {
    const n = bytes[dataType] * 6;
    const tensor = await ctx.createTensor({dataType, shape, writable: true});
    const b = new P.MLGraphBuilder(ctx);
    // three entry points, one verdict each: writeTensor (throws), constant (throws), createConstantTensor (rejects).
    // writeTensor takes any view of the right byte length, as Chromium does, unless the page is strict
    // (docs/compatibility.md); constant() and createConstantTensor() follow the draft in Chromium too.
    const verdict = async (source) => {
      const got = [];
      try { ctx.writeTensor(tensor, source); got.push('ok'); } catch (e) { got.push(e.name); }
      try { b.constant({dataType, shape}, source); got.push('ok'); } catch (e) { got.push(e.name); }
      try { (await ctx.createConstantTensor({dataType, shape}, source)).destroy(); got.push('ok'); }
      catch (e) { got.push(e.name); }
      return got;
    };
    const expect = async (label, source, ok, writeOk = ok) => {
      const got = await verdict(source);
      const want = [writeOk, ok, ok].map((v) => (v ? 'ok' : 'TypeError'));
      if (got.some((g, i) => g !== want[i])) problems.push(`${dataType} ${label}: ${got.join('/')} (want ${want.join('/')})`);
      if (ok) accepted++; else rejected++;
    };
    // WebKitGTK has no SharedArrayBuffer even when crossOriginIsolated: its cases run where it exists
    const hasShared = typeof SharedArrayBuffer === 'function';
    await expect('ArrayBuffer', new ArrayBuffer(n), true);
    if (hasShared) await expect('SharedArrayBuffer', new SharedArrayBuffer(n), true);
    await expect('Uint8Array', new Uint8Array(n), true);
    if (hasShared) await expect('Uint8Array on a SharedArrayBuffer', new Uint8Array(new SharedArrayBuffer(n)), true);
    await expect('offset Uint8Array view', new Uint8Array(new ArrayBuffer(n + 16), 8, n), true);
    for (const view of allViews) {
      const C = globalThis[view];
      const ok = own.includes(view) || view === 'Uint8Array';
      if (n % C.BYTES_PER_ELEMENT === 0) {
        await expect(view, new C(n / C.BYTES_PER_ELEMENT), ok, ok || !P.strict);
        if (ok && hasShared) await expect(`${view} on a SharedArrayBuffer`, new C(new SharedArrayBuffer(n)), true);
      }
    }
    await expect('DataView', new DataView(new ArrayBuffer(n)), false, !P.strict);
    await expect('one byte short', new ArrayBuffer(n - 1), false);
    await expect('one byte long', new ArrayBuffer(n + 1), false);
    await expect('one element short', new globalThis[own[0]](5), false);
    await expect('one element long', new globalThis[own[0]](7), false);
    const detached = new ArrayBuffer(n);
    detached.transfer();
    await expect('detached ArrayBuffer', detached, false);
    await expect('a plain array', Array(6).fill(0), false);
    await expect('a number', 6, false);
    tensor.destroy();
  }
  ctx.destroy();
  return {problems, accepted, rejected, hasF16, hasShared: typeof SharedArrayBuffer === 'function'};
}
"""


@pytest.mark.parametrize("mode", ["default", "strict"])
def test_buffer_kinds_accepted_and_rejected_per_data_type(mode: str, browser_name: str,
                                                          request: pytest.FixtureRequest) -> None:
    page = request.getfixturevalue("webnn_page" if mode == "default" else "webnn_strict_page")
    out = page.evaluate(ACCEPTANCE_JS)
    assert out["problems"] == [], "\n".join(out["problems"])
    # per data type: 4 kinds of buffer and view always, 3 more on a SharedArrayBuffer where the browser has one
    assert out["accepted"] >= 8 * (7 if out["hasShared"] else 4) and out["rejected"] >= 8 * 10


VALUES_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const r = {};
  const roundTrip = async (dataType, data, View) => {
    const t = await ctx.createTensor({dataType, shape: [data.length], readable: true, writable: true});
    ctx.writeTensor(t, data);
    const plain = new View(await ctx.readTensor(t));
    const byob = new View(data.length);
    await ctx.readTensor(t, byob);
    const larger = new View(data.length + 3);
    await ctx.readTensor(t, larger);
    t.destroy();
    return {plain: Array.from(plain, String), byob: Array.from(byob, String), largerPrefix: Array.from(larger.subarray(0, data.length), String),
            largerTail: Array.from(larger.subarray(data.length), String)};
  };
  r.int64 = await roundTrip('int64', BigInt64Array.from([-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -1n]), BigInt64Array);
  r.uint64 = await roundTrip('uint64', BigUint64Array.from([0n, 2n ** 64n - 1n, 2n ** 53n + 1n]), BigUint64Array);
  r.float16bits = await roundTrip('float16', Uint16Array.from([0x3c00, 0xc000, 0x7c00, 0x0001]), Uint16Array);
  if (typeof Float16Array === 'function') {
    r.float16 = await roundTrip('float16', Float16Array.from([1, -2.5, 65504, 0.000061035156]), Float16Array);
  }
  r.uint8 = await roundTrip('uint8', Uint8Array.from([0, 255, 128]), Uint8Array);

  // float16 data sent as Uint16Array bits means the same numbers inside a graph
  const b = new P.MLGraphBuilder(ctx);
  const h = b.constant({dataType: 'float16', shape: [3]}, Uint16Array.from([0x3c00, 0xc000, 0x3800]));
  // MLNumber constants are cast like py_core/spec/mlnumber.py: saturate, truncate toward zero for integers
  const consts = {
    i8: b.constant('int8', 300), u8: b.constant('uint8', -5), i32half: b.constant('int32', 2.5),
    i32half3: b.constant('int32', 3.5), u32nan: b.constant('uint32', NaN), i64big: b.constant('int64', 2n ** 62n + 1n),
    u64max: b.constant('uint64', 2n ** 64n - 1n), i64clamp: b.constant('int64', 2n ** 70n), f32: b.constant('float32', 1 / 3),
    f16: b.constant('float16', 1 / 3), f16inf: b.constant('float16', 70000), i32num: b.constant('int32', 1e12),
    f32negzero: b.constant('float32', -0),
  };
  // MLNumber options keep bigint precision through the builder and the worker
  const i64 = b.constant({dataType: 'int64', shape: [3]}, BigInt64Array.from([2n ** 63n - 1n, -(2n ** 63n), 5n]));
  const u64 = b.constant({dataType: 'uint64', shape: [1]}, BigUint64Array.from([7n]));
  const outputs = {
    h32: b.cast(h, 'float32'),
    clampBig: b.clamp(i64, {minValue: -(2n ** 62n), maxValue: 2n ** 62n + 1n}),
    padBig: b.pad(u64, [1], [1], {value: 2n ** 64n - 1n}),
    clampInf: b.clamp(b.constant({dataType: 'float32', shape: [2]}, Float32Array.from([-1e30, 1e30])), {minValue: -Infinity}),
    padNegZero: b.pad(b.constant({dataType: 'float32', shape: [1]}, Float32Array.from([1])), [1], [1], {value: -0}),
  };
  for (const [k, v] of Object.entries(consts)) outputs[k] = b.identity(v);
  const g = await b.build(outputs);
  const views = {h32: new Float32Array(3), clampBig: new BigInt64Array(3), padBig: new BigUint64Array(3),
                 clampInf: new Float32Array(2), i8: new Int8Array(1), u8: new Uint8Array(1), i32half: new Int32Array(1),
                 i32half3: new Int32Array(1), u32nan: new Uint32Array(1), i64big: new BigInt64Array(1),
                 u64max: new BigUint64Array(1), i64clamp: new BigInt64Array(1), f32: new Float32Array(1),
                 f16: new Uint16Array(1), f16inf: new Uint16Array(1), i32num: new Int32Array(1),
                 f32negzero: new Float32Array(1), padNegZero: new Float32Array(3)};
  const res = await ctx.compute(g, {}, views);
  // String(-0) is "0": the sign of zero is written out
  const text = (x) => (Object.is(x, -0) ? '-0' : String(x));
  r.constants = Object.fromEntries(Object.entries(res.outputs).map(([k, v]) => [k, Array.from(v, text)]));
  ctx.destroy();
  return r;
}
"""


def test_exact_values_for_64_bit_float16_and_cast_constants(webnn_page: Any) -> None:
    r = webnn_page.evaluate(VALUES_JS)
    assert r["int64"]["plain"] == [str(-(2**63)), str(2**63 - 1), str(2**53 + 1), "-1"]
    assert r["uint64"]["plain"] == ["0", str(2**64 - 1), str(2**53 + 1)]
    assert r["float16bits"]["plain"] == ["15360", "49152", "31744", "1"]
    if "float16" in r:
        assert r["float16"]["plain"] == ["1", "-2.5", "65504", "0.00006103515625"]
    assert r["uint8"]["plain"] == ["0", "255", "128"]
    for case in ("int64", "uint64", "float16bits", "uint8"):
        assert r[case]["byob"] == r[case]["plain"], case
        assert r[case]["largerPrefix"] == r[case]["plain"], case
        assert set(r[case]["largerTail"]) == {"0"}, f"{case}: bytes past the tensor were written"
    c = r["constants"]
    assert c["h32"] == ["1", "-2", "0.5"]
    assert c["clampBig"] == [str(2**62 + 1), str(-(2**62)), "5"], "bigint MLNumber options stay exact"
    assert c["padBig"] == [str(2**64 - 1), "7", str(2**64 - 1)]
    assert c["clampInf"] == ["-1.0000000150474662e+30", "1.0000000150474662e+30"]
    assert c["i8"] == ["127"] and c["u8"] == ["0"], "integer casts clamp"
    assert c["i32half"] == ["2"] and c["i32half3"] == ["3"], "integer casts truncate toward zero (WPT mlNumber)"
    assert c["u32nan"] == ["0"], "NaN casts to 0"
    assert c["i64big"] == [str(2**62 + 1)] and c["u64max"] == [str(2**64 - 1)] and c["i64clamp"] == [str(2**63 - 1)]
    assert c["f32"] == [repr(struct.unpack("<f", struct.pack("<f", 1 / 3))[0])]
    assert c["f16"] == [str(0x3555)], "1/3 rounds to the nearest float16"
    assert c["f16inf"] == [str(0x7C00)], "beyond the float16 range casts to Infinity"
    assert c["i32num"] == [str(2**31 - 1)]
    assert c["f32negzero"] == ["-0"] and c["padNegZero"] == ["-0", "1", "-0"], "-0 keeps its sign on the way in"


# MLNumber scalars as text, so that NaN, +/-Infinity, -0 and bigints ("...n") cross to the page exactly:
# halves and fractions both ways, the non-finite values, -0, out of range for some or all integer types,
# doubles beyond 2^53 (2^63 and 2^64 are exact doubles, at and past the 64-bit bounds), and bigints
INT_CAST_CASES = [
    "2.5", "-2.5", "2.7", "-2.7", "0.5", "-0.5", "-0", "NaN", "Infinity", "-Infinity",
    "127.9", "-128.9", "255.5", "300.9", "-300.9", "4294967295.9", "-2147483648.7", "1e20", "-1e20",
    "9007199254740994", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
    "-1n", "7n", "300n", "9007199254740993n", "-9223372036854775809n", "18446744073709551615n", "18446744073709551616n",
]

INT_CAST_JS = r"""
async (cases) => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const parse = (s) => (s.endsWith('n') ? BigInt(s.slice(0, -1)) : Number(s));
  const views = {int8: Int8Array, uint8: Uint8Array, int32: Int32Array, uint32: Uint32Array,
                 int64: BigInt64Array, uint64: BigUint64Array};
  const r = {};
  for (const [dataType, View] of Object.entries(views)) {
    const b = new P.MLGraphBuilder(ctx);
    const outputs = {};
    const out = {};
    cases.forEach((c, i) => {
      outputs[`c${i}`] = b.identity(b.constant(dataType, parse(c)));
      out[`c${i}`] = new View(1);
    });
    const res = await ctx.compute(await b.build(outputs), {}, out);
    r[dataType] = cases.map((c, i) => String(res.outputs[`c${i}`][0]));
  }
  ctx.destroy();
  return r;
}
"""


def _ml_number(text: str) -> int | float:
    """The Python MLNumber cast_number takes for a case's text: an int for a bigint, else a float."""
    return int(text[:-1]) if text.endswith("n") else float(text)


def test_integer_scalar_constants_cast_like_cast_number(webnn_page: Any) -> None:
    """constant(dataType, value) casts like clamp's bounds and pad's value: py_core.spec.mlnumber.cast_number
    (NaN -> 0, truncate toward zero, saturate), read back through identity for every integer type."""
    got = webnn_page.evaluate(INT_CAST_JS, INT_CAST_CASES)
    problems = []
    for data_type in INT_RANGES:
        want = [str(cast_number(_ml_number(c), data_type)) for c in INT_CAST_CASES]
        problems += [f"{data_type.value} constant({c}): got {g}, cast_number gives {w}"
                     for c, g, w in zip(INT_CAST_CASES, got[data_type.value], want, strict=True) if g != w]
    assert problems == [], "\n".join(problems)
    # the WPT vector the rule comes from, and the cases round-half-even would get wrong
    assert cast_number(3.9, DataType.INT64) == 3
    assert got["int8"][INT_CAST_CASES.index("2.7")] == "2" and got["int8"][INT_CAST_CASES.index("-2.7")] == "-2"


CALLER_BUFFERS_JS = r"""
async () => {
  const P = webnnPolyfill;
  const ctx = await P.ml.createContext();
  const r = {};
  const desc = {dataType: 'float32', shape: [4]};
  const snapshot = (v) => ({len: v.byteLength, bufLen: v.buffer.byteLength, data: Array.from(v)});

  // constant(descriptor, buffer): copied at the call; later changes are not seen, the source is untouched
  const weights = new Float32Array([1, 2, 3, 4]);
  const cTensorData = new Float32Array([10, 20, 30, 40]);
  const b = new P.MLGraphBuilder(ctx);
  const w = b.constant(desc, weights);
  const ct = b.constant(await ctx.createConstantTensor(desc, cTensorData));
  const x = b.input('x', desc);
  const g = await b.build({y: b.add(b.add(x, w), ct)});
  weights.fill(100);
  cTensorData.fill(100);
  r.sourcesAfterBuild = [snapshot(weights), snapshot(cTensorData)];

  // writeTensor/dispatch/readTensor: input intact, readTensor returns a new ArrayBuffer each time
  const input = new Float32Array([1, 1, 1, 1]);
  const xt = await ctx.createTensor({...desc, writable: true});
  const yt = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(xt, input);
  ctx.dispatch(g, {x: xt}, {y: yt});
  const out1 = await ctx.readTensor(yt);
  const out2 = await ctx.readTensor(yt);
  r.result = Array.from(new Float32Array(out1));
  r.freshBuffers = out1 !== out2 && out1 instanceof ArrayBuffer && out1.byteLength === 16;
  r.inputAfterDispatch = snapshot(input);

  // readTensor(tensor, outputData): written in place, never detached, the caller's view stays usable
  // into a SharedArrayBuffer's view where the browser has one (WebKitGTK does not), else a plain one
  const into = new Float32Array(typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(16) : new ArrayBuffer(16));
  await ctx.readTensor(yt, into);
  r.byobShared = snapshot(into);
  const intoPlain = new Float32Array(4);
  const promise = ctx.readTensor(yt, intoPlain);
  r.byobNotDetachedWhilePending = intoPlain.byteLength === 16;
  await promise;
  r.byobPlain = snapshot(intoPlain);

  // the legacy compute(): the one place where the spec transfers (detaches) the caller's buffers
  const cin = new Float32Array([1, 1, 1, 1]);
  const cout = new Float32Array(4);
  const res = await ctx.compute(g, {x: cin}, {y: cout});
  r.compute = {inDetached: cin.byteLength === 0, outDetached: cout.byteLength === 0,
               returnedIn: Array.from(res.inputs.x), returnedOut: Array.from(res.outputs.y)};
  ctx.destroy();
  return r;
}
"""


def test_caller_buffers_are_never_modified_or_detached_except_by_compute(webnn_page: Any) -> None:
    r = webnn_page.evaluate(CALLER_BUFFERS_JS)
    assert r["sourcesAfterBuild"] == [{"len": 16, "bufLen": 16, "data": [100] * 4}] * 2
    assert r["result"] == [12, 23, 34, 45], "constants were copied when constant()/createConstantTensor() ran"
    assert r["freshBuffers"]
    assert r["inputAfterDispatch"] == {"len": 16, "bufLen": 16, "data": [1, 1, 1, 1]}
    assert r["byobShared"]["data"] == [12, 23, 34, 45] and r["byobShared"]["len"] == 16
    assert r["byobNotDetachedWhilePending"]
    assert r["byobPlain"] == {"len": 16, "bufLen": 16, "data": [12, 23, 34, 45]}
    assert r["compute"] == {"inDetached": True, "outDetached": True, "returnedIn": [1, 1, 1, 1],
                            "returnedOut": [12, 23, 34, 45]}
