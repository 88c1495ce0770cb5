// The installed site-packages of a Pyodide, kept in Cache Storage as one uncompressed blob with the bytecode
// CPython compiled while importing them.
//
// After the memory snapshot (snapshot.js), a warm start was mostly installing the wheels (fetch, sha256,
// inflate) and importing them: CPython compiles every .py it imports from source on every visit, because
// Pyodide does not write .pyc (sys.dont_write_bytecode) and a fresh file system has none.  On a visit without
// the blob, boot.js unpacks the wheels as usual, gives every file one fixed modification time and lets CPython
// write its .pyc while the caller imports what it needs; then (storeSite) the whole of site-packages, sources and
// __pycache__, goes into one entry.  The next visit writes that entry back into the file system in one pass (no
// wheel fetched or inflated), with the same modification time, so CPython's timestamp check accepts the .pyc.
//
// Keyed by the Pyodide version and the sha256 of every wheel in it (NumPy's from Pyodide's lock file, the core
// wheel's from the manifest): a new wheel is a new key.  The entry carries the sha256 of its own bytes; one that
// does not match (damaged storage), or that does not parse, is deleted and the visit installs the wheels as if
// there were none, then stores a fresh one.  No Cache Storage (plain http, some private modes): nothing is kept.

import {openCache} from './snapshot.js';

const CACHE = 'webnn-polyfill-site';
const FORMAT = 1;  // bump to orphan entries made by older polyfill code
const MAGIC = 0x31535057;  // 'WPS1'
// every file's mtime (ms), so a .pyc written on one visit matches its source on the next
export const SITE_MTIME_MS = 315532800000;  // 1980-01-01, as zip dates begin

/** The Pyodide's site-packages directory. */
export const sitePackagesOf = (py) => py.runPython('import site; site.getsitepackages()[0]');

export function siteKey(indexURL, version, sha256s) {
  return new URL(`webnn-site-v${FORMAT}-${encodeURIComponent(version)}-${sha256s.join('-')}.bin`, indexURL).href;
}

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** [{path, data}] from the entry at key, or null (none, no Cache Storage, or damaged: then deleted). */
export async function readSite(key, mark = () => {}) {
  const cache = await openCache(CACHE);
  mark('siteOpen');
  if (!cache || !globalThis.crypto || !crypto.subtle) return null;
  let bytes;
  try {
    const response = await cache.match(key);
    if (!response) return null;
    bytes = new Uint8Array(await response.arrayBuffer());
    mark('siteRead');
    const got = hex(await crypto.subtle.digest('SHA-256', bytes));
    if (got !== response.headers.get('x-site-sha256')) throw new Error('its sha256 does not match');
    mark('siteChecked');
    return parse(bytes);
  } catch (e) {
    console.warn(`WebNN polyfill: dropping a damaged site-packages cache entry (${e && e.message ? e.message : e})`);
    await cache.delete(key).catch(() => {});
    return null;
  }
}

// u32 magic, u32 header length, header (JSON: [[path, length], ...]), then the files' bytes in that order
function parse(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8 || view.getUint32(0, true) !== MAGIC) throw new Error('not a site-packages entry');
  const headerLength = view.getUint32(4, true);
  const list = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  let at = 8 + headerLength;
  const files = list.map(([path, n]) => {
    const data = bytes.subarray(at, at + n);
    at += n;
    return {path, data};
  });
  if (at !== bytes.length) throw new Error('its files do not add up to its length');
  return files;
}

/** Store files ([{path, data}]) under key; resolves when stored (or not: quota, no Cache Storage). */
export async function writeSite(key, files) {
  const cache = await openCache(CACHE);
  if (!cache || !globalThis.crypto || !crypto.subtle) return false;
  const header = new TextEncoder().encode(JSON.stringify(files.map((f) => [f.path, f.data.length])));
  const bytes = new Uint8Array(8 + header.length + files.reduce((n, f) => n + f.data.length, 0));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, header.length, true);
  bytes.set(header, 8);
  let at = 8 + header.length;
  for (const f of files) {
    bytes.set(f.data, at);
    at += f.data.length;
  }
  try {
    const sha256 = hex(await crypto.subtle.digest('SHA-256', bytes));
    await cache.put(key, new Response(bytes, {headers: {'content-type': 'application/octet-stream',
      'x-site-sha256': sha256}}));
    return true;
  } catch (e) {
    return false;  // the next visit installs the wheels, as this one did
  }
}

/** The paths (relative to dir) of every file under dir in an Emscripten file system. */
export function listTree(FS, dir) {
  const out = [];
  const walk = (rel) => {
    for (const name of FS.readdir(rel ? `${dir}/${rel}` : dir)) {
      if (name === '.' || name === '..') continue;
      const path = rel ? `${rel}/${name}` : name;
      const mode = FS.stat(`${dir}/${path}`).mode;
      if (FS.isDir(mode)) walk(path);
      else if (FS.isFile(mode)) out.push(path);
    }
  };
  walk('');
  return out;
}

/** Every file under dir, as [{path (relative), data}]. */
export function readTree(FS, dir) {
  return listTree(FS, dir).map((path) => ({path, data: FS.readFile(`${dir}/${path}`)}));
}

/** Write files ([{path, data}], paths relative to dir) into an Emscripten file system, each with mtimeMs. */
export function writeTree(FS, dir, files, mtimeMs = null) {
  const made = new Set();
  for (const {path, data} of files) {
    const slash = path.lastIndexOf('/');
    const parent = slash < 0 ? dir : `${dir}/${path.slice(0, slash)}`;
    if (!made.has(parent)) {
      FS.mkdirTree(parent);
      made.add(parent);
    }
    FS.writeFile(`${dir}/${path}`, data, {canOwn: true});
    if (mtimeMs !== null) FS.utime(`${dir}/${path}`, mtimeMs, mtimeMs);
  }
}

// What importlib.invalidate_caches() does for files written behind CPython's back, for the directory finders
// only: that function also imports importlib.metadata (0.2-0.3 s under Node) and has every zipimporter read
// its zip's directory again (the standard library's: 0.1-0.2 s), on each call.
const FORGET_LISTINGS = `import sys
from importlib.machinery import FileFinder as _FileFinder
for _finder in list(sys.path_importer_cache.values()):
    if isinstance(_finder, _FileFinder):
        _finder.invalidate_caches()
del _finder, _FileFinder`;

/** Make CPython see files just written into its file system. */
export function forgetListings(py) {
  py.runPython(FORGET_LISTINGS);
}
