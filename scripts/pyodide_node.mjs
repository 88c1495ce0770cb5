// Pyodide under Node with NumPy, SciPy and this checkout's py_core, for the scripts that time the engine without
// a page (bench_pyodide.mjs, profile_pyodide.mjs).  Assets come from the cache scripts/fetch_assets.py fills.
import fs from 'fs';
import os from 'os';
import path from 'path';
import {fileURLToPath} from 'url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Copy the files of src whose names match `keep` into Pyodide's file system at dst, recursively. */
export function copyTree(py, src, dst, keep) {
  py.FS.mkdirTree(dst);
  for (const e of fs.readdirSync(src, {withFileTypes: true})) {
    if (e.name === '__pycache__') continue;
    const s = path.join(src, e.name);
    if (e.isDirectory()) copyTree(py, s, `${dst}/${e.name}`, keep);
    else if (keep.test(e.name)) py.FS.writeFile(`${dst}/${e.name}`, fs.readFileSync(s));
  }
}

/** A Pyodide with NumPy and SciPy loaded and py_core (sources and the wasm C kernels) in /home/pyodide. */
export async function pyodideWithCore() {
  const cache = process.env.PYODIDE_WEBNN_CACHE || path.join(os.homedir(), '.cache', 'pyodide-webnn');
  const indexURL = path.join(cache, 'pyodide-0.27.7') + '/';
  const {loadPyodide} = await import(path.join(indexURL, 'pyodide.mjs'));
  const py = await loadPyodide({indexURL});
  await py.loadPackage(['numpy', 'scipy'], {messageCallback: () => {}});
  copyTree(py, path.join(root, 'py_core'), '/home/pyodide/py_core', /\.(py|json)$|\.wasm32\.wasm$/);
  py.FS.writeFile('/home/pyodide/bench_models.py', fs.readFileSync(path.join(root, 'scripts', 'bench_models.py')));
  return py;
}
