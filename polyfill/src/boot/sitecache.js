// The installed site-packages of a Pyodide, kept in Cache Storage with the bytecode CPython compiled while
// importing it: one uncompressed entry per wheel.
//
// After the memory snapshot (snapshot.js), a warm start was mostly installing the wheels (fetch, sha256,
// inflate) and importing them: CPython compiles every .py it imports from source on every visit, because
// Pyodide does not write .pyc (sys.dont_write_bytecode) and a fresh file system has none.  On a visit without
// an entry, boot.js unpacks the wheel as usual, gives every file one fixed modification time and lets CPython
// write its .pyc while the caller imports what it needs; then (storeSite) the wheel's files, sources and
// __pycache__, go into its entry.  The next visit writes that entry back into the file system in one pass (no
// wheel fetched or inflated), with the same modification time, so CPython's timestamp check accepts the .pyc.
//
// One entry per wheel, stored as soon as the caller has imported from it (the worker stores NumPy's right after
// `import numpy`, the core's after the core's import): a single entry of both, stored after the last import,
// was often cut short by a page closed soon after its graph was built (the bench's visits; Firefox then found
// it damaged, Chromium not there).  Left out of every entry: files no import reads (IMPORT_FREE).
//
// Keyed by the Pyodide version, whose Pyodide it is (`scope`: the page's and the worker's import different
// modules, so their .pyc differ) and the wheel's sha256 (NumPy's from Pyodide's lock file, the core wheel's from
// the manifest): a new wheel is a new key.  The entry carries the sha256 of its own bytes and its key; one that
// does not match (damaged storage, another entry's bytes), or that does not parse, is deleted (said on the console
// and in bootTimings.cache: cachelog.js) and the visit installs that wheel as if there were none, then stores a
// fresh entry.  Once an entry is stored, the entries it replaces are deleted: the same wheel's (by name) of the
// same scope from another wheel file or Pyodide version, and those of older formats.  No Cache Storage (plain
// http, some private modes): nothing is kept.

import {noteCheck, noteDropped, noteRefused} from './cachelog.js';
import {sha256Hex} from './digest.js';
import {openCache} from './snapstore.js';
import {STDLIB_CODE_FILE} from './stdlibpyc.js';

const CACHE = 'webnn-polyfill-site';
const FORMAT = 3;  // bump to orphan entries made by older polyfill code (2: no key in the entry)
const PREFIX = 'webnn-site-v';
const MAGIC = 0x31535057;  // 'WPS1'
// every file's mtime (ms), so a .pyc written on one visit matches its source on the next
export const SITE_MTIME_MS = 315532800000;  // 1980-01-01, as zip dates begin

/** The Pyodide's site-packages directory. */
export const sitePackagesOf = (py) => py.runPython('import site; site.getsitepackages()[0]');

/** The Cache Storage key of one wheel's entry (scope: whose site-packages, e.g. 'worker'). */
export function siteKey(indexURL, version, scope, sha256) {
  return new URL(`${PREFIX}${FORMAT}-${encodeURIComponent(version)}-${encodeURIComponent(scope)}-${sha256}.bin`,
    indexURL).href;
}

// what an entry holds, for the entries it replaces: its scope (from its key: siteKey) and its wheel's name (the
// project part of its .dist-info folder; without one, its top-level names)
function holding(key, files) {
  const name = key.slice(key.lastIndexOf('/') + 1);
  const rest = name.slice(`${PREFIX}${FORMAT}-`.length, name.length - '-.bin'.length - 64);
  const scope = rest.slice(rest.indexOf('-') + 1);  // after the version (Pyodide's versions hold no '-')
  const tops = [...new Set(files.map((f) => f.path.split('/')[0]))].sort();
  const info = tops.find((t) => t.endsWith('.dist-info'));
  return `${scope} ${info ? info.split('-')[0] : tops.filter((t) => t !== STDLIB_CODE_FILE).join(',')}`;
}

// Files no import reads, left out of the entries: type stubs, and C headers and static libraries for compiling
// against a package (NumPy's: 0.96 MB in 120 files)
const IMPORT_FREE = /\.(pyi|h|pxd|a)$/;

/** The files (paths relative to site-packages dir) a wheel with these top-level names put there, with the .pyc
 *  written since, IMPORT_FREE files left out. */
export function wheelPaths(FS, dir, tops) {
  const out = [];
  for (const top of tops) {
    let mode;
    try {
      mode = FS.stat(`${dir}/${top}`).mode;
    } catch (e) {
      continue;  // a name the wheel lists but did not install
    }
    const paths = FS.isDir(mode) ? listTree(FS, `${dir}/${top}`).map((p) => `${top}/${p}`) : [top];
    out.push(...paths.filter((p) => !IMPORT_FREE.test(p)));
  }
  return out;
}

/** wheelPaths' files, as [{path, data}]. */
export function wheelTree(FS, dir, tops) {
  return wheelPaths(FS, dir, tops).map((path) => ({path, data: FS.readFile(`${dir}/${path}`)}));
}

/** [{path, data}] from the entry at key, or null (none, no Cache Storage, or damaged: then deleted). */
export async function readSite(key, mark = () => {}) {
  const cache = await openCache(CACHE);
  mark('siteOpen');
  if (!cache || !globalThis.crypto || !crypto.subtle) return null;
  let response;
  try {
    response = await cache.match(key);
  } catch (e) {
    return null;
  }
  if (!response) return null;
  try {
    if (response.headers.get('x-site-key') !== key) throw new Error('it holds another entry');
    const bytes = new Uint8Array(await response.arrayBuffer());
    mark('siteRead');
    const t0 = performance.now();
    const got = await sha256Hex(bytes);
    noteCheck('site', performance.now() - t0);
    if (got !== response.headers.get('x-site-sha256')) throw new Error('its bytes do not match their sha256');
    mark('siteChecked');
    return parse(bytes);
  } catch (e) {
    noteDropped(key, e && e.message ? e.message : String(e));
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

/** Store files ([{path, data}]) under key.  Resolves once the write is under way, to {stored: a promise of
 *  whether it was stored (not: quota, no Cache Storage)}: from there it proceeds in the browser without this
 *  thread (the worker's next import holds its thread for a while; a digest or put awaited after it had often not
 *  been written when a short visit ended). */
export async function writeSite(key, files) {
  const cache = await openCache(CACHE);
  if (!cache || !globalThis.crypto || !crypto.subtle) return {stored: Promise.resolve(false)};
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
  const holds = holding(key, files);
  try {
    const sha256 = await sha256Hex(bytes);
    const put = cache.put(key, new Response(bytes, {headers: {'content-type': 'application/octet-stream',
      'x-site-sha256': sha256, 'x-site-key': key, 'x-site-holds': holds}}));
    return {stored: put.then(() => dropReplaced(cache, key, holds).then(() => true), (e) => {
      noteRefused('storing site-packages in Cache Storage', e);
      return false;
    })};
  } catch (e) {
    noteRefused('storing site-packages in Cache Storage', e);
    return {stored: Promise.resolve(false)};  // the next visit installs the wheels, as this one did
  }
}

// Deletes the entries the one just stored under key replaces: of older formats, and those holding the same
// (`holds`: scope and wheel name) under another key.  A failure leaves them for the next store.
async function dropReplaced(cache, key, holds) {
  try {
    for (const request of await cache.keys()) {
      const name = request.url.slice(request.url.lastIndexOf('/') + 1);
      if (request.url === key || !name.startsWith(PREFIX)) continue;
      const older = !name.startsWith(`${PREFIX}${FORMAT}-`);
      const response = older ? null : await cache.match(request);
      if (older || (response && response.headers.get('x-site-holds') === holds)) await cache.delete(request);
    }
  } catch (e) {
    // as above
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
