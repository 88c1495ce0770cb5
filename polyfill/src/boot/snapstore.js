// Where the Pyodide memory snapshots (snapshot.js) are kept: the Origin Private File System, else Cache Storage.
// A warm visit's worker reads its 30 MB NumPy snapshot before anything else can run, and the page its 20 MB bare
// one: from OPFS a worker reads it with a sync access handle straight into one buffer, 2.5x (Chromium) to 8x
// (Firefox) faster than a Cache Storage response's arrayBuffer(), and writes it with one too
// (docs/performance.md).  OPFS is missing or refused in some places (private modes, insecure contexts, service workers):
// there, and with the switch (`WEBNN_POLYFILL_CONFIG.opfs = false` on the page, `?opfs=0` on the worker's URL:
// useOpfs), Cache Storage.  One store per context: a snapshot is read from where this context would write it.
//
// An OPFS entry is the snapshot followed by a trailer of 8 bytes, its length and a magic number: a file cut short
// (a tab closed mid-write, a full disk) never reads as a whole snapshot.  It is written under a name of its own
// and moved into place, so two tabs writing at once each replace the whole file, and a reader sees one or the
// other.  File names are the keys (URLs), URI-encoded.

import {inServiceWorker} from './load-pyodide.js';
import {configOn, liveConfig} from '../switches.js';

const CACHE = 'webnn-polyfill-pyodide-snapshot';
const DIR = 'webnn-polyfill-pyodide-snapshot';
const TRAILER_MAGIC = 0x534e4e57;  // 'WNNS', little-endian
const PART = '.part-';  // a write under way (or abandoned: dropped by a later write once an hour old)
const STALE_PART_MS = 3600 * 1000;

let opfsAllowed = true;

/** Turns OPFS off (or on again) for this context's snapshots: the worker's `?opfs=0`. */
export function useOpfs(on) {
  opfsAllowed = !!on;
  directory = null;
}

/** The Cache Storage cache `name` (the snapshots' by default), or null where the page or worker has none. */
export async function openCache(name = CACHE) {
  try {
    // Cache Storage exists only in secure contexts (https, localhost) and not in every private mode.
    if (typeof caches === 'undefined' || !caches) return null;
    return await caches.open(name);
  } catch (e) {
    return null;
  }
}

let directory = null;  // a promise of the snapshots' OPFS directory, or of null where OPFS is not used

function opfs() {
  if (!directory) directory = openDirectory();
  return directory;
}

async function openDirectory() {
  if (!opfsAllowed || !configOn(liveConfig(), 'opfs')) return null;
  try {
    const storage = typeof navigator !== 'undefined' ? navigator.storage : null;
    if (!storage || typeof storage.getDirectory !== 'function') return null;
    // a service worker: no sync access handle, and Firefox refuses OPFS there in some versions
    if (inServiceWorker()) return null;
    const root = await storage.getDirectory();  // throws in private modes that have none (SecurityError)
    const dir = await root.getDirectoryHandle(DIR, {create: true});
    // a store that cannot write is no store: a read-only or quota-less OPFS falls back to Cache Storage
    return typeof FileSystemFileHandle !== 'undefined' && 'createWritable' in FileSystemFileHandle.prototype
      ? dir : null;
  } catch (e) {
    return null;
  }
}

/** Which store this context uses: 'opfs', 'cache' or null (none). */
export async function storeKind() {
  if (await opfs()) return 'opfs';
  return await openCache() ? 'cache' : null;
}

function fileName(key) {
  return encodeURIComponent(key);
}

/**
 * The stored bytes under `key` (a fresh Uint8Array of their own: Pyodide reads the header through a Uint32Array),
 * or null: none, cut short (then deleted) or no store.  `check(bytes)`: false deletes the entry too.
 */
export async function readStored(key, check = () => true) {
  const dir = await opfs();
  if (!dir) return readCached(key, check);
  let bytes;
  try {
    const handle = await dir.getFileHandle(fileName(key));
    bytes = await readFile(handle);
  } catch (e) {
    return null;  // NotFoundError; a file another tab holds open for writing
  }
  if (bytes && check(bytes)) return bytes;
  await dropStored(key);
  return null;
}

// A file's snapshot, its trailer checked, or null.  In a worker one read into one buffer through a sync access
// handle (it locks the file for the few ms of the read: a write that would replace it meanwhile fails and is
// dropped); elsewhere the file's two parts as blobs.
async function readFile(handle) {
  if (typeof handle.createSyncAccessHandle === 'function' && typeof document === 'undefined') {
    let access = null;
    try {
      // read-only (Chromium): two tabs' workers may read at once; an engine without the mode locks it
      access = await handle.createSyncAccessHandle({mode: 'read-only'});
    } catch (e) {
      access = null;  // locked by another tab's worker: read the file as a blob instead
    }
    if (access) {
      try {
        const size = access.getSize();
        if (size < 8) return null;
        const trailer = new Uint32Array(2);
        if (access.read(new Uint8Array(trailer.buffer), {at: size - 8}) !== 8) return null;
        if (trailer[1] !== TRAILER_MAGIC || trailer[0] !== size - 8) return null;
        const bytes = new Uint8Array(size - 8);
        return access.read(bytes, {at: 0}) === bytes.length ? bytes : null;
      } finally {
        access.close();
      }
    }
  }
  const file = await handle.getFile();
  if (file.size < 8) return null;
  const trailer = new Uint32Array(await file.slice(file.size - 8).arrayBuffer());
  if (trailer[1] !== TRAILER_MAGIC || trailer[0] !== file.size - 8) return null;
  const bytes = new Uint8Array(await file.slice(0, file.size - 8).arrayBuffer());
  return bytes.length === file.size - 8 ? bytes : null;
}

async function readCached(key, check) {
  const cache = await openCache();
  if (!cache) return null;
  try {
    const response = await cache.match(key);
    if (!response) return null;
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (String(bytes.length) !== response.headers.get('x-snapshot-length') || !check(bytes)) {
      await cache.delete(key);
      return null;
    }
    return bytes;
  } catch (e) {
    return null;
  }
}

/**
 * Stores `bytes` under `key`; `replacing(key)`: true for other entries this one replaces (deleted).  Resolves
 * (never rejects) once done or failed: quota or storage errors leave the next visit without it, as this one was.
 */
export async function writeStored(key, bytes, {replacing = null} = {}) {
  const dir = await opfs();
  if (!dir) {
    await writeCached(key, bytes, replacing);
    return;
  }
  const name = fileName(key);
  const part = `${name}${PART}${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    // (an engine without move() writes in place: createWritable's stream replaces the file, whole, on close)
    const canMove = typeof FileSystemFileHandle.prototype.move === 'function';
    const handle = await dir.getFileHandle(canMove ? part : name, {create: true});
    const trailer = new Uint8Array(new Uint32Array([bytes.length, TRAILER_MAGIC]).buffer);
    if (canMove && typeof handle.createSyncAccessHandle === 'function' && typeof document === 'undefined') {
      // a worker writes its part file in one call (Firefox's stream took long enough to be cut off by the end of
      // a short visit: the next one found no snapshot)
      const access = await handle.createSyncAccessHandle();
      try {
        if (access.write(bytes, {at: 0}) !== bytes.length || access.write(trailer, {at: bytes.length}) !== 8) {
          throw new Error('short write');
        }
        access.flush();
      } finally {
        access.close();
      }
    } else {
      const writable = await handle.createWritable();
      try {
        await writable.write(bytes);
        await writable.write(trailer);
        await writable.close();
      } catch (e) {
        await writable.abort().catch(() => {});
        throw e;
      }
    }
    if (handle.name !== name) await handle.move(name);  // replaces the file there, whole (a reader holding it open keeps its own copy)
  } catch (e) {
    await dir.removeEntry(part).catch(() => {});
  }
  // what this store replaces: another build's NumPy snapshot, parts abandoned long ago; and this key's copy in
  // Cache Storage (a polyfill before OPFS stored it there: 20-30 MB each)
  try {
    const now = Date.now();
    for await (const [entry, handle] of dir.entries()) {
      if (entry === name || handle.kind !== 'file') continue;
      const at = entry.lastIndexOf(PART);
      if (at >= 0) {
        if (now - Number(entry.slice(at + PART.length).split('-')[0]) > STALE_PART_MS) {
          await dir.removeEntry(entry).catch(() => {});
        }
      } else if (replacing && replacing(decodeURIComponent(entry))) {
        await dir.removeEntry(entry).catch(() => {});
      }
    }
  } catch (e) {
    // a directory that cannot be listed (an older engine without entries()): nothing else is deleted
  }
  const cache = await openCache();
  if (cache) {
    await cache.delete(key).catch(() => {});
    if (replacing) await deleteCached(cache, replacing);
  }
}

async function writeCached(key, bytes, replacing) {
  const cache = await openCache();
  if (!cache) return;
  try {
    await cache.put(key, new Response(bytes, {headers: {
      'content-type': 'application/octet-stream', 'x-snapshot-length': String(bytes.length)}}));
    if (replacing) await deleteCached(cache, replacing, key);
  } catch (e) {
    // quota or storage errors: the next visit boots without a snapshot, as this one did
  }
}

async function deleteCached(cache, replacing, keep = null) {
  try {
    for (const request of await cache.keys()) {
      if (request.url !== keep && replacing(request.url)) await cache.delete(request);
    }
  } catch (e) {
    // as above
  }
}

/** Deletes the entry under `key`, if any. */
export async function dropStored(key) {
  const dir = await opfs();
  if (dir) {
    await dir.removeEntry(fileName(key)).catch(() => {});
    return;
  }
  const cache = await openCache();
  if (cache) await cache.delete(key).catch(() => {});
}
