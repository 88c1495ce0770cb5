// DecompressionStream into one buffer of a known size: the wheels' deflated entries (wheels.js) and the build's
// gzipped snapshot (snapshot.js).  No Blob or Response: in Chromium each Blob is registered with the browser
// process, which made 338 of them slower than CPython's inflate.

/** `packed` (format: 'gzip', 'deflate-raw') inflated into a fresh buffer of `size` bytes; throws past `size`
 *  (`source` names who said so), and returns fewer bytes (a subarray) when the stream ends short. */
export async function inflate(format, packed, size, source) {
  const stream = new DecompressionStream(format);
  const writer = stream.writable.getWriter();
  writer.write(packed).catch(() => {});
  writer.close().catch(() => {});
  const reader = stream.readable.getReader();
  const out = new Uint8Array(size);
  let n = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    if (n + value.length > size) throw new Error(`more than the ${size} bytes ${source} says`);
    out.set(value, n);
    n += value.length;
  }
  return n === size ? out : out.subarray(0, n);
}
