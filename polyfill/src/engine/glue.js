// The engine's side of py_core/bridge/pyodide_glue.py: how the glue's replies unpack, and the one copy of a
// Python buffer out of the WebAssembly heap.

/** [error-json, result] from a glue call: its result; throws its error as a plain {name, message} object. */
export function unwrap(reply) {
  try {
    const err = reply.get(0);
    if (err) throw JSON.parse(err);
    return reply.get(1);
  } finally {
    reply.destroy();
  }
}

/** A hot-path glue call's reply (write, dispatch, read): its value; its error, a JSON string, is thrown. */
export function valueOrThrow(reply) {
  if (typeof reply === 'string') throw JSON.parse(reply);
  return reply;
}

/** The bytes of a Python memoryview copied out of the WebAssembly heap, once, into a new ArrayBuffer. */
export function takeBytes(proxy) {
  const buf = proxy.getBuffer('u8');
  try {
    return buf.data.slice().buffer;
  } finally {
    buf.release();
    proxy.destroy();
  }
}

/**
 * The worker's memory for stats: the WebAssembly memory's size (it only grows), the bytes malloc has handed out
 * and not freed (dlmalloc's mallinfo: uordblks), and how many objects CPython's collector tracks (this Pyodide
 * has no pymalloc, so sys.getallocatedblocks() is 0).  Figures that cannot be read are left out and
 * `memoryError` says why: stats never fail a call, nor end the engine.
 */
export function memoryStats(pyodide) {
  try {
    return readMemory(pyodide);
  } catch (e) {
    return {memoryError: `the worker's memory figures could not be read: ${e && e.message ? e.message : e}`};
  }
}

function readMemory(pyodide) {
  const m = pyodide._module;
  const out = {wasmBytes: m.HEAPU8.buffer.byteLength,
    pyObjects: pyodide.runPython('import gc; len(gc.get_objects())')};
  // (a wasm export's pointer is a signed i32: past 2 GiB of heap it comes negative, so read it unsigned; 0 is a
  // calloc that failed, and mallinfo would write its struct at address 0)
  const p = typeof m._mallinfo === 'function' && typeof m._calloc === 'function' ? m._calloc(1, 64) >>> 0 : 0;
  if (p) {  // struct mallinfo: 10 size_t (4 bytes in wasm32)
    try {
      m._mallinfo(p);
      const v = new Uint32Array(m.HEAPU8.buffer, p, 10);
      Object.assign(out, {mallocArena: v[0], mallocInUse: v[7], mallocFree: v[8]});
    } finally {
      m._free(p);
    }
  }
  return out;
}
