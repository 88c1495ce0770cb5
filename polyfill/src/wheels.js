// Installing wheels into a Pyodide without loadPackage's extra work.
//
// pyodide.loadPackage(url) took 0.63 s for the 140 KB core wheel (Pyodide under Node), unpacking it 0.08 s: the
// rest is its package machinery.  For NumPy it also compiles and links all ten extension modules (7.5 MB of
// wasm) before returning, where `import numpy` needs five (numpy.random and numpy.fft are never imported here).
// So both Pyodides fetch wheels themselves (with a sha256 as the fetch's integrity: the lock file's for NumPy,
// the dev server's manifest for the core), unpack them into site-packages and let CPython's import load what it
// needs, synchronously (a worker may; the page's Pyodide never imports an extension module).  Install + import
// under Node: NumPy 1.2-1.5 -> 0.75-0.8 s.  NumPy is marked loaded, so a later loadPackage (SciPy's dependency)
// does not install it twice.  Anything unexpected falls back to loadPackage.

const QUIET = {messageCallback: () => {}};

function integrityOf(hexSha256) {
  if (!/^[0-9a-f]{64}$/.test(hexSha256 || '')) return undefined;
  const bytes = hexSha256.match(/../g).map((h) => parseInt(h, 16));
  return `sha256-${btoa(String.fromCharCode(...bytes))}`;
}

async function unpackWheel(py, url, sha256) {
  const integrity = integrityOf(sha256);
  const response = await fetch(url, integrity ? {integrity} : {});
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  const wheel = new Uint8Array(await response.arrayBuffer());
  const sitePackages = py.runPython('import site; site.getsitepackages()[0]');
  py.unpackArchive(wheel, 'wheel', {extractDir: sitePackages});
  py.runPython('import importlib; importlib.invalidate_caches()');
}

// true when install() worked; otherwise says why, so the caller falls back to loadPackage
async function tryUnpack(what, install) {
  try {
    await install();
    return true;
  } catch (e) {
    console.warn(`WebNN polyfill: ${what} through loadPackage (${e && e.message ? e.message : e})`);
    return false;
  }
}

/** Install the wheel at url (sha256: hex digest or undefined); resolves to 'unpacked' or 'loadPackage'.
 *  unpack: false goes straight to loadPackage (the worker's ?unpack=0, for comparisons and tests). */
export async function installWheel(py, url, sha256, {unpack = true} = {}) {
  if (unpack && await tryUnpack(url, () => unpackWheel(py, url, sha256))) return 'unpacked';
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
