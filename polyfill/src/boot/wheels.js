// Installing wheels into a Pyodide without loadPackage's extra work.
//
// pyodide.loadPackage(url) took 0.63 s for the 140 KB core wheel (Pyodide under Node), unpacking it 0.08 s: the
// rest is its package machinery.  For NumPy it also compiles and links all ten extension modules (7.5 MB of
// wasm) before returning, where `import numpy` needs five (numpy.random and numpy.fft are never imported here).
// So both Pyodides fetch wheels themselves (with a sha256 as the fetch's integrity: the lock file's for NumPy,
// the dev server's manifest for the core), unpack them into site-packages and let CPython's import load what it
// needs, synchronously (a worker may; the page's Pyodide never imports an extension module).  Install + import
// under Node: NumPy 1.2-1.5 -> 0.75-0.8 s.  NumPy is marked loaded, so a later loadPackage (SciPy's dependency)
// does not install it twice.
//
// A wheel with a known sha256 is installed only from bytes that match it: a mismatch is an error (a DOMException
// named SecurityError that says which file, the expected and the received digest), never a retry through
// loadPackage(url), which checks nothing.  Other failures of the unpack path (an unexpected Pyodide) fall back
// to loadPackage only where that is checked too (NumPy by name: Pyodide verifies it against its lock file) or
// where there is nothing to check (no sha256 given).  A failed download is an error that names the file, never a
// fallback: loadPackage would fetch the same file, and report its failure only on the console.

import {hex, integrityOf} from './digest.js';
import {inflate} from './inflate.js';
import {forgetListings, sitePackagesOf, writeTree} from './sitecache.js';

const QUIET = {messageCallback: () => {}};

/** The bytes at url; with a sha256, only if they match it (SecurityError naming the file and both digests). */
async function fetchVerified(url, sha256) {
  const integrity = integrityOf(sha256);
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  // Our own digest gives an error that names the file; fetch's integrity option, used where there is no
  // crypto.subtle, fails with a bare network TypeError.
  let bytes;
  try {
    const response = await fetch(url, integrity && !subtle ? {integrity} : {});
    if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (e) {
    throw notFetched(url, e);
  }
  if (integrity && subtle) {
    const got = hex(await subtle.digest('SHA-256', bytes));
    if (got !== sha256) {
      throw new DOMException(`integrity check failed for ${url}: expected sha256 ${sha256}, got ${got} `
        + `(${bytes.length} bytes); the wheel was not installed`, 'SecurityError');
    }
  }
  return bytes;
}

const isIntegrityFailure = (e) => e instanceof DOMException && e.name === 'SecurityError';

// A download that failed: loadPackage would fetch the same URL again, so no fallback is tried (tryUnpack)
function notFetched(url, e) {
  const message = e && e.message ? e.message : String(e);
  return Object.assign(new Error(message.includes(url) ? message : `${url}: ${message}`), {notFetched: true});
}

// `installed` (optional) gets the wheel's top-level names in site-packages: `tops` (sitecache.js wheelTree)
async function unpackWheel(py, url, sha256, {unzip = true, installed = null} = {}) {
  const wheel = await fetchVerified(url, sha256);
  const sitePackages = sitePackagesOf(py);
  if (installed) installed.tops = topLevelNames(wheel);
  let how = 'unpacked';
  // the zip read here (the browser's inflate) when it can be; else (or with unzip: false) CPython's zipfile
  const files = unzip ? await readZip(wheel).catch((e) => {
    console.warn(`WebNN polyfill: ${url} unpacked by CPython (${e && e.message ? e.message : e})`);
    return null;
  }) : null;
  if (files) {
    writeTree(py.FS, sitePackages, files);
    how = 'unzipped';
  } else {
    py.unpackArchive(wheel, 'wheel', {extractDir: sitePackages});
  }
  forgetListings(py);
  return how;
}

// Unpacking in JavaScript.  CPython's zipfile (Pyodide's unpackArchive) first imports zipfile, shutil and
// tempfile from the standard library zip and inflates in wasm: 0.6 s of a warm Chromium start for NumPy's 3 MB
// wheel (12 MB, 338 files) on the worker's clock, 0.3 s for the core wheel on the page's.  The browser's
// DecompressionStream inflates natively, and the files go into the Emscripten file system in one pass.
// Only what wheels contain is read: no zip64, no encryption, methods 0 (stored) and 8 (deflate); anything else
// throws, and the caller unpacks with CPython instead.

const u16 = (b, i) => b[i] | (b[i + 1] << 8);
const u32 = (b, i) => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;

/** [{path, data: Uint8Array}] of a zip's files (directories left out); throws on what it does not read. */
export async function readZip(bytes) {
  if (typeof DecompressionStream !== 'function') throw new Error('no DecompressionStream');
  return Promise.all(zipEntries(bytes).map(async ({path, method, size, raw}) => {
    const data = method === 0 ? raw : await inflate('deflate-raw', raw, size, 'the zip');
    if (data.length !== size) throw new Error(`${path}: ${data.length} bytes inflated, ${size} expected`);
    return {path, data};
  }));
}

// the first path component of every file in the zip, or null where zipEntries does not read it
function topLevelNames(bytes) {
  try {
    return [...new Set(zipEntries(bytes).map((e) => e.path.split('/')[0]))];
  } catch (e) {
    return null;
  }
}

// the files of a zip's central directory: [{path, method, size, raw (its compressed bytes)}]
function zipEntries(bytes) {
  // the end of central directory record: the last 22 bytes unless the zip has a comment
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 65535); i--) {
    if (u32(bytes, i) === 0x06054b50) { end = i; break; }
  }
  if (end < 0) throw new Error('no zip end record');
  const count = u16(bytes, end + 10);
  let at = u32(bytes, end + 16);
  if (count === 0xffff || at === 0xffffffff) throw new Error('zip64 is not read here');
  const names = new TextDecoder('utf-8', {fatal: true});
  const entries = [];
  for (let n = 0; n < count; n++) {
    if (u32(bytes, at) !== 0x02014b50) throw new Error('bad zip central directory');
    const flags = u16(bytes, at + 8);
    const method = u16(bytes, at + 10);
    const size = u32(bytes, at + 24);
    const compressed = u32(bytes, at + 20);
    const nameLength = u16(bytes, at + 28);
    const local = u32(bytes, at + 42);
    const path = names.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + u16(bytes, at + 30) + u16(bytes, at + 32);
    if (flags & 1) throw new Error(`${path} is encrypted`);
    if (method !== 0 && method !== 8) throw new Error(`${path}: zip method ${method}`);
    if (u32(bytes, local) !== 0x04034b50) throw new Error(`${path}: bad local header`);
    if (path.split('/').some((p) => p === '..') || path.startsWith('/')) throw new Error(`${path}: unsafe path`);
    if (path.endsWith('/')) continue;
    const start = local + 30 + u16(bytes, local + 26) + u16(bytes, local + 28);
    const raw = bytes.subarray(start, start + compressed);
    if (raw.length !== compressed) throw new Error(`${path}: truncated`);
    entries.push({path, method, size, raw});
  }
  return entries;
}

// install()'s answer ('unzipped' or 'unpacked') when it worked; otherwise false, and says why, so the caller
// falls back to loadPackage; an integrity failure, a failed download (or any failure when `strict`) is thrown
// instead
async function tryUnpack(what, install, {strict = false} = {}) {
  try {
    return await install();
  } catch (e) {
    if (strict || isIntegrityFailure(e) || (e && e.notFetched)) throw e;
    console.warn(`WebNN polyfill: ${what} through loadPackage (${e && e.message ? e.message : e})`);
    return false;
  }
}

/** Install the wheel at url (sha256: hex digest or undefined); resolves to 'unzipped' (read in JavaScript),
 *  'unpacked' (by CPython's zipfile: unzip false, or a zip readZip does not read) or 'loadPackage'.
 *  With a sha256 every failure is thrown (loadPackage(url) could not check the bytes it installs).
 *  unpack: false goes to loadPackage (the worker's ?unpack=0, for comparisons and tests), after checking the
 *  sha256 of the same URL's bytes: the wheel URLs are immutable, so loadPackage's fetch is normally the HTTP
 *  cache's copy of them. */
export async function installWheel(py, url, sha256, {unpack = true, unzip = true, installed = null} = {}) {
  const strict = !!integrityOf(sha256);
  const how = unpack && await tryUnpack(url, () => unpackWheel(py, url, sha256, {unzip, installed}), {strict});
  if (how) return how;
  if (strict) await fetchVerified(url, sha256);
  await py.loadPackage(url, QUIET);
  return 'loadPackage';
}

/** Install NumPy into `py` (a Pyodide started from indexURL); resolves as installWheel does.  `strict`: a failure
 * to unpack it is thrown, not retried through loadPackage (which reports a failed download only on the console). */
export async function installNumpy(py, indexURL, {unpack = true, unzip = true, installed = null, strict = false} = {}) {
  const unpackNumpy = async () => {
    const entry = numpyLockEntry(py);
    if (!entry || !entry.file_name || !integrityOf(entry.sha256) || (entry.depends || []).length) {
      throw new Error('no usable numpy entry in the Pyodide lock file');
    }
    const how = await unpackWheel(py, new URL(entry.file_name, indexURL).href, entry.sha256, {unzip, installed});
    py.loadedPackages.numpy = `pyodide-webnn (${how}; extension modules load on import)`;
    return how;
  };
  const how = unpack && await tryUnpack('NumPy', unpackNumpy, {strict});
  if (how) return how;
  await py.loadPackage('numpy', QUIET);
  return 'loadPackage';
}

/** NumPy's entry in the lock file `py` started with ({file_name, sha256, depends, ...}), or null. */
export function numpyLockEntry(py) {
  return (py._api && py._api.lockfile_packages && py._api.lockfile_packages.numpy) || null;
}
