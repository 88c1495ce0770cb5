// Where the Pyodide memory snapshots (snapshot.js) are kept: the Origin Private File System, else Cache Storage.
// A warm visit's worker reads its 30 MB NumPy snapshot before anything else can run, and the page its 20 MB bare
// one: from OPFS a worker reads it with a sync access handle straight into one buffer, 2.5x (Chromium) to 8x
// (Firefox) faster than a Cache Storage response's arrayBuffer(), and writes it with one too
// (docs/performance.md).  OPFS is missing or refused in some places (private modes, insecure contexts, service workers):
// there, and with the switch (`WEBNN_POLYFILL_CONFIG.opfs = false` on the page, `?opfs=0` on the worker's URL:
// useOpfs), Cache Storage.  One store per context: a snapshot is read from where this context would write it.
//
// Every entry carries the sha256 of its bytes and its own key, both checked before its bytes are used: an entry
// cut short, altered, written under another key or by an older polyfill (without them) is deleted, said on the
// console and in bootTimings.cache (cachelog.js), and the caller boots as without it.  An OPFS entry is the
// snapshot followed by a trailer: the sha256 (32 bytes), the key (UTF-8), then three u32 (little-endian): the
// snapshot's length, the key's length and a magic number.  A Cache Storage entry has them in headers.  An OPFS
// entry is written under a name of its own and moved into place, so two tabs writing at once each replace the
// whole file, and a reader sees one or the other.  File names are the keys (URLs), URI-encoded.

import {noteCheck, noteDropped, noteRefused, noteStore} from './cachelog.js';
import {canDigest, hex, sha256Hex} from './digest.js';
import {inServiceWorker} from './load-pyodide.js';
import {configOn, liveConfig} from '../switches.js';

const CACHE = 'webnn-polyfill-pyodide-snapshot';
const DIR = 'webnn-polyfill-pyodide-snapshot';
const MAGIC = 0x32534e57;  // 'WNS2', little-endian: an entry with its sha256 and key
const OLDER_MAGIC = 0x534e4e57;  // 'WNNS': an older polyfill's trailer (its length only)
const TAIL = 12;  // the trailer's three u32
const SHA = 32;  // the sha256's bytes in the trailer
const PART = '.part-';  // a write under way (or abandoned: dropped by a later write once an hour old)
const STALE_PART_MS = 3600 * 1000;

let opfsAllowed = true;

/** Turns OPFS off (or on again) for this context's snapshots: the worker's `?opfs=0`. */
export function useOpfs(on) {
  opfsAllowed = !!on;
  directory = null;
}

/** The Cache Storage cache `name` (the snapshots' by default), or null where the page or worker has none (the
 *  reason goes to bootTimings.cache.refused). */
export async function openCache(name = CACHE) {
  try {
    // Cache Storage exists only in secure contexts (https, localhost) and not in every private mode.
    if (typeof caches === 'undefined' || !caches) {
      noteRefused('Cache Storage', 'absent here');
      return null;
    }
    return await caches.open(name);
  } catch (e) {
    noteRefused('Cache Storage', e);
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
    noteRefused('the Origin Private File System', e);
    return null;
  }
}

/** Which store this context uses: 'opfs', 'cache' or null (none; nor without digests: entries could not be
 *  checked). */
export async function storeKind() {
  let kind = null;
  if (!canDigest()) noteRefused('stored snapshots', 'no crypto.subtle to check them');
  else if (await opfs()) kind = 'opfs';
  else if (await openCache()) kind = 'cache';
  noteStore(kind);
  return kind;
}

function fileName(key) {
  return encodeURIComponent(key);
}

/**
 * The stored bytes under `key` (a fresh Uint8Array of their own: Pyodide reads the header through a Uint32Array),
 * or null: none, no store, or an entry that fails its checks (then deleted, and said): cut short, its sha256 or
 * key not its own, an older polyfill's, or `check(bytes)` (the caller's) returns why not.
 */
export async function readStored(key, check = () => null) {
  if (!canDigest()) return null;
  const dir = await opfs();
  const entry = dir ? await readFileEntry(dir, key) : await readCached(key);
  if (!entry) return null;
  const why = entry.why || await verify(key, entry) || check(entry.bytes);
  if (!why) return entry.bytes;
  noteDropped(key, why);
  await dropStored(key);
  return null;
}

// why the entry ({bytes, sha256, key}) is not the one stored under key, or null when it is
async function verify(key, entry) {
  if (entry.key !== key) return `it holds another entry (${String(entry.key).slice(-80)})`;
  const t0 = performance.now();
  const got = await sha256Hex(entry.bytes);
  noteCheck('snapshot', performance.now() - t0);
  return got === entry.sha256 ? null : 'its bytes do not match their sha256';
}

// An OPFS entry as {bytes, sha256, key}, or {why} when it is not a whole entry of this format, or null (none; a
// file another tab holds open for writing).
async function readFileEntry(dir, key) {
  try {
    return await readFile(await dir.getFileHandle(fileName(key)));
  } catch (e) {
    return null;  // NotFoundError; a file another tab holds open for writing
  }
}

// Why a trailer ([snapshot length, key length, magic]) does not close a file of `size` bytes, or null
function trailerWhy([length, keyLength, magic], size) {
  if (magic === OLDER_MAGIC) return 'written by an older polyfill (no sha256)';
  if (magic !== MAGIC) return 'cut short or not an entry (no trailer)';
  return length + SHA + keyLength + TAIL === size ? null : 'cut short (its length is not the one recorded)';
}

// {bytes, sha256, key} from the trailer's metadata bytes (the sha256, then the key)
function entryOf(bytes, meta) {
  return {bytes, sha256: hex(meta.subarray(0, SHA)), key: new TextDecoder().decode(meta.subarray(SHA))};
}

// A file's entry.  In a worker one read into one buffer through a sync access handle (it locks the file for the
// few ms of the read: a write that would replace it meanwhile fails and is dropped); elsewhere the file's parts
// as blobs.
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
        if (size < TAIL) return {why: 'cut short (no trailer)'};
        const tail = new Uint32Array(3);
        if (access.read(new Uint8Array(tail.buffer), {at: size - TAIL}) !== TAIL) return {why: 'unreadable'};
        const why = trailerWhy(tail, size);
        if (why) return {why};
        const bytes = new Uint8Array(tail[0]);
        const meta = new Uint8Array(SHA + tail[1]);
        if (access.read(bytes, {at: 0}) !== bytes.length || access.read(meta, {at: bytes.length}) !== meta.length) {
          return {why: 'unreadable'};
        }
        return entryOf(bytes, meta);
      } finally {
        access.close();
      }
    }
  }
  const file = await handle.getFile();
  if (file.size < TAIL) return {why: 'cut short (no trailer)'};
  const tail = new Uint32Array(await file.slice(file.size - TAIL).arrayBuffer());
  const why = trailerWhy(tail, file.size);
  if (why) return {why};
  const bytes = new Uint8Array(await file.slice(0, tail[0]).arrayBuffer());
  const meta = new Uint8Array(await file.slice(tail[0], file.size - TAIL).arrayBuffer());
  return bytes.length === tail[0] && meta.length === SHA + tail[1] ? entryOf(bytes, meta) : {why: 'unreadable'};
}

// A Cache Storage entry as readFileEntry's
async function readCached(key) {
  const cache = await openCache();
  if (!cache) return null;
  try {
    const response = await cache.match(key);
    if (!response) return null;
    const bytes = new Uint8Array(await response.arrayBuffer());
    const sha256 = response.headers.get('x-snapshot-sha256');
    if (!sha256) return {why: 'written by an older polyfill (no sha256)'};
    if (String(bytes.length) !== response.headers.get('x-snapshot-length')) {
      return {why: 'cut short (its length is not the one recorded)'};
    }
    return {bytes, sha256, key: response.headers.get('x-snapshot-key')};
  } catch (e) {
    return null;
  }
}

/**
 * Stores `bytes` under `key` with their sha256; `replacing(key)`: true for other entries this one replaces
 * (deleted).  Resolves (never rejects) once done or failed: quota or storage errors leave the next visit without
 * it, as this one was (bootTimings.cache.refused says why).
 */
export async function writeStored(key, bytes, {replacing = null} = {}) {
  if (!canDigest()) return;
  // (started before any other await: digest() copies the bytes as called)
  const digest = sha256Hex(bytes).catch((e) => { noteRefused('a snapshot\'s sha256', e); return null; });
  const dir = await opfs();
  const sha256 = await digest;
  if (!sha256) return;
  if (!dir) {
    await writeCached(key, bytes, sha256, replacing);
    return;
  }
  const name = fileName(key);
  const part = `${name}${PART}${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    // (an engine without move() writes in place: createWritable's stream replaces the file, whole, on close)
    const canMove = typeof FileSystemFileHandle.prototype.move === 'function';
    const handle = await dir.getFileHandle(canMove ? part : name, {create: true});
    const trailer = trailerOf(bytes.length, sha256, key);
    if (canMove && typeof handle.createSyncAccessHandle === 'function' && typeof document === 'undefined') {
      // a worker writes its part file in one call (Firefox's stream took long enough to be cut off by the end of
      // a short visit: the next one found no snapshot)
      const access = await handle.createSyncAccessHandle();
      try {
        if (access.write(bytes, {at: 0}) !== bytes.length
          || access.write(trailer, {at: bytes.length}) !== trailer.length) {
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
    noteRefused('storing a snapshot in the Origin Private File System', e);
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

// the OPFS trailer: sha256 (hex -> 32 bytes), key (UTF-8), then [snapshot length, key length, MAGIC]
function trailerOf(length, sha256, key) {
  const keyBytes = new TextEncoder().encode(key);
  const out = new Uint8Array(SHA + keyBytes.length + TAIL);
  out.set(sha256.match(/../g).map((h) => parseInt(h, 16)));
  out.set(keyBytes, SHA);
  new DataView(out.buffer).setUint32(SHA + keyBytes.length, length, true);
  new DataView(out.buffer).setUint32(SHA + keyBytes.length + 4, keyBytes.length, true);
  new DataView(out.buffer).setUint32(SHA + keyBytes.length + 8, MAGIC, true);
  return out;
}

async function writeCached(key, bytes, sha256, replacing) {
  const cache = await openCache();
  if (!cache) return;
  try {
    await cache.put(key, new Response(bytes, {headers: {'content-type': 'application/octet-stream',
      'x-snapshot-length': String(bytes.length), 'x-snapshot-sha256': sha256, 'x-snapshot-key': key}}));
    if (replacing) await deleteCached(cache, replacing, key);
  } catch (e) {
    noteRefused('storing a snapshot in Cache Storage', e);  // the next visit boots as this one did
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
