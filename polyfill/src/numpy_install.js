// NumPy for the worker's Pyodide without loadPackage's eager extension loading.
//
// pyodide.loadPackage('numpy') unpacks the wheel and then compiles and links all ten of its extension modules
// (7.5 MB of wasm) before returning; `import numpy` needs five of them (numpy.random and numpy.fft are never
// imported here).  Unpacking the same wheel (same URL, the lock file's sha256 as the fetch's integrity) into
// site-packages lets CPython's import load just those, synchronously, which a worker may do.  Measured in
// Pyodide under Node, install + import: 1.2-1.5 s with loadPackage, 0.75-0.8 s this way.  Marking the package
// loaded keeps a later loadPackage (SciPy's dependency on NumPy) from installing it twice.
// Anything unexpected (no lock entry, a dependency, a failed fetch) falls back to loadPackage.

const QUIET = {messageCallback: () => {}};

function integrityOf(hexSha256) {
  const bytes = hexSha256.match(/../g).map((h) => parseInt(h, 16));
  return `sha256-${btoa(String.fromCharCode(...bytes))}`;
}

async function unpackNumpy(py, indexURL) {
  const entry = py._api && py._api.lockfile_packages && py._api.lockfile_packages.numpy;
  if (!entry || !entry.file_name || !/^[0-9a-f]{64}$/.test(entry.sha256 || '') || (entry.depends || []).length) {
    throw new Error('no usable numpy entry in the Pyodide lock file');
  }
  const response = await fetch(new URL(entry.file_name, indexURL), {integrity: integrityOf(entry.sha256)});
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${entry.file_name}`);
  const wheel = new Uint8Array(await response.arrayBuffer());
  const sitePackages = py.runPython('import site; site.getsitepackages()[0]');
  py.unpackArchive(wheel, 'wheel', {extractDir: sitePackages});
  py.loadedPackages.numpy = 'pyodide-webnn (unpacked; extension modules load on import)';
}

/** Install NumPy into `py` (a Pyodide started from indexURL); resolves to how: 'unpacked' or 'loadPackage'. */
export async function installNumpy(py, indexURL) {
  try {
    await unpackNumpy(py, indexURL);
    return 'unpacked';
  } catch (e) {
    console.warn(`WebNN polyfill: NumPy through loadPackage (${e && e.message ? e.message : e})`);
    await py.loadPackage('numpy', QUIET);
    return 'loadPackage';
  }
}
