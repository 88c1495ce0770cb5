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
// where there is nothing to check (no sha256 given).

const QUIET = {messageCallback: () => {}};

function integrityOf(hexSha256) {
  if (!/^[0-9a-f]{64}$/.test(hexSha256 || '')) return undefined;
  const bytes = hexSha256.match(/../g).map((h) => parseInt(h, 16));
  return `sha256-${btoa(String.fromCharCode(...bytes))}`;
}

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** The bytes at url; with a sha256, only if they match it (SecurityError naming the file and both digests). */
async function fetchVerified(url, sha256) {
  const integrity = integrityOf(sha256);
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  // Our own digest gives an error that names the file; fetch's integrity option, used where there is no
  // crypto.subtle, fails with a bare network TypeError.
  const response = await fetch(url, integrity && !subtle ? {integrity} : {});
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
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

async function unpackWheel(py, url, sha256) {
  const wheel = await fetchVerified(url, sha256);
  const sitePackages = py.runPython('import site; site.getsitepackages()[0]');
  py.unpackArchive(wheel, 'wheel', {extractDir: sitePackages});
  py.runPython('import importlib; importlib.invalidate_caches()');
}

// true when install() worked; otherwise says why, so the caller falls back to loadPackage; an integrity failure
// (or any failure when `strict`) is thrown instead
async function tryUnpack(what, install, {strict = false} = {}) {
  try {
    await install();
    return true;
  } catch (e) {
    if (strict || isIntegrityFailure(e)) throw e;
    console.warn(`WebNN polyfill: ${what} through loadPackage (${e && e.message ? e.message : e})`);
    return false;
  }
}

/** Install the wheel at url (sha256: hex digest or undefined); resolves to 'unpacked' or 'loadPackage'.
 *  With a sha256 every failure is thrown (loadPackage(url) could not check the bytes it installs).
 *  unpack: false goes to loadPackage (the worker's ?unpack=0, for comparisons and tests), after checking the
 *  sha256 of the same URL's bytes: the wheel URLs are immutable, so loadPackage's fetch is normally the HTTP
 *  cache's copy of them. */
export async function installWheel(py, url, sha256, {unpack = true} = {}) {
  const strict = !!integrityOf(sha256);
  if (unpack && await tryUnpack(url, () => unpackWheel(py, url, sha256), {strict})) return 'unpacked';
  if (strict) await fetchVerified(url, sha256);
  await py.loadPackage(url, QUIET);
  return 'loadPackage';
}

/** Install NumPy into `py` (a Pyodide started from indexURL); resolves to 'unpacked' or 'loadPackage'. */
export async function installNumpy(py, indexURL, {unpack = true} = {}) {
  const unpackNumpy = async () => {
    const entry = py._api && py._api.lockfile_packages && py._api.lockfile_packages.numpy;
    if (!entry || !entry.file_name || !integrityOf(entry.sha256) || (entry.depends || []).length) {
      throw new Error('no usable numpy entry in the Pyodide lock file');
    }
    await unpackWheel(py, new URL(entry.file_name, indexURL).href, entry.sha256);
    py.loadedPackages.numpy = 'pyodide-webnn (unpacked; extension modules load on import)';
  };
  if (unpack && await tryUnpack('NumPy', unpackNumpy)) return 'unpacked';
  await py.loadPackage('numpy', QUIET);
  return 'loadPackage';
}
