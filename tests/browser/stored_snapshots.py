"""The stored Pyodide snapshots as a page script of the same origin sees them, in the formats of
polyfill/src/boot/snapstore.js: page functions that list, read, alter and write the entries from outside the
polyfill, as damaged storage or another program would."""

from __future__ import annotations

# Functions put in front of a page function's body (SNAPSHOT_STORE + "async (arg) => {...}" is not valid JS: use
# page_function() below).  An entry is {store: 'opfs'|'cache', name, key, file}: `file` the OPFS file's whole bytes
# (snapshot, then trailer), or for Cache Storage the response's bytes with `headers` beside them.
SNAPSHOT_STORE = """
const SNAPSHOT_DIR = 'webnn-polyfill-pyodide-snapshot';
const snapshotDir = async () => {
  try {
    return await (await navigator.storage.getDirectory()).getDirectoryHandle(SNAPSHOT_DIR);
  } catch (e) {
    return null;
  }
};
// the stored entries whose key holds `which` (writes under way left out)
const snapshotEntries = async (which = '') => {
  const out = [];
  const dir = await snapshotDir();
  if (dir) {
    for await (const [name, handle] of dir.entries()) {
      const key = decodeURIComponent(name);
      if (name.includes('.part-') || !key.includes(which)) continue;
      out.push({store: 'opfs', name, key, file: new Uint8Array(await (await handle.getFile()).arrayBuffer())});
    }
  }
  const cache = await caches.open(SNAPSHOT_DIR);
  for (const request of await cache.keys()) {
    if (!request.url.includes(which)) continue;
    const response = await cache.match(request);
    out.push({store: 'cache', name: request.url, key: request.url, headers: Object.fromEntries(response.headers),
      file: new Uint8Array(await response.arrayBuffer())});
  }
  return out;
};
// an entry's snapshot bytes (a copy), without its trailer
const snapshotBytes = (entry) => {
  if (entry.store === 'cache') return entry.file.slice();
  const v = new DataView(entry.file.buffer, entry.file.byteOffset, entry.file.byteLength);
  return entry.file.slice(0, v.getUint32(entry.file.length - 12, true));
};
// writes `file` (bytes as stored: with its trailer in OPFS) as the entry `name` of `store`; `headers` for Cache
// Storage
const putSnapshotFile = async (store, name, file, headers = {}) => {
  if (store === 'opfs') {
    const w = await (await (await snapshotDir()).getFileHandle(name, {create: true})).createWritable();
    await w.write(file);
    await w.close();
  } else {
    await (await caches.open(SNAPSHOT_DIR)).put(name, new Response(file, {headers}));
  }
};
const sha256Of = async (bytes) => Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)),
  (v) => v.toString(16).padStart(2, '0')).join('');
// stores `bytes` as a whole, consistent entry under `key` (its own sha256 and key): what the polyfill writes
const sealSnapshot = async (store, name, key, bytes) => {
  const sha256 = await sha256Of(bytes);
  if (store === 'cache') {
    return putSnapshotFile(store, name, bytes,
      {'x-snapshot-length': String(bytes.length), 'x-snapshot-sha256': sha256, 'x-snapshot-key': key});
  }
  const k = new TextEncoder().encode(key);
  const out = new Uint8Array(bytes.length + 32 + k.length + 12);
  out.set(bytes);
  out.set(sha256.match(/../g).map((h) => parseInt(h, 16)), bytes.length);
  out.set(k, bytes.length + 32);
  const v = new DataView(out.buffer);
  v.setUint32(out.length - 12, bytes.length, true);
  v.setUint32(out.length - 8, k.length, true);
  v.setUint32(out.length - 4, 0x32534e57, true);
  return putSnapshotFile(store, name, out);
};
"""


def page_function(body: str) -> str:
    """A page function `async (arg) => {body}` with SNAPSHOT_STORE's helpers in scope."""
    return "async (arg) => {\n" + SNAPSHOT_STORE + "\n" + body + "\n}"
