// Pyodide under Node for the scripts and tests that run the engine without a page (bench_pyodide.mjs,
// profile_pyodide.mjs, tests/pyodide/run_wpt.mjs).  Pyodide is started by the polyfill's own boot module
// (polyfill/src/boot/boot.js); its assets come from the cache scripts/fetch_assets.py fills, in the folder named
// after the one pinned version (the file PYODIDE_VERSION).
import fs from 'fs';
import os from 'os';
import path from 'path';
import {fileURLToPath} from 'url';

import {bootPyodide} from '../polyfill/src/boot/boot.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The Pyodide version the repository pins (PYODIDE_VERSION). */
export const PYODIDE_VERSION = fs.readFileSync(path.join(root, 'PYODIDE_VERSION'), 'utf8').trim();

/** The asset folder (Pyodide's indexURL, no trailing slash): `explicit`, else $PYODIDE_WEBNN_CACHE's or
 *  ~/.cache/pyodide-webnn's pyodide-<version>. */
export function assetDir(explicit) {
  if (explicit) return explicit;
  const cache = process.env.PYODIDE_WEBNN_CACHE || path.join(os.homedir(), '.cache', 'pyodide-webnn');
  return path.join(cache, `pyodide-${PYODIDE_VERSION}`);
}

/** A Pyodide started from the asset folder (options: polyfill/src/boot/boot.js BOOT_OPTIONS, e.g. {numpy: true}). */
export async function nodePyodide({assets, ...options} = {}) {
  const {py} = await bootPyodide({indexURL: assetDir(assets) + '/', ...options});
  return py;
}

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
  const py = await nodePyodide({numpy: true, packages: ['scipy'], stdout: console.log, stderr: console.error});
  copyTree(py, path.join(root, 'py_core'), '/home/pyodide/py_core', /\.(py|json)$|\.wasm32\.wasm$/);
  py.FS.writeFile('/home/pyodide/bench_models.py', fs.readFileSync(path.join(root, 'scripts', 'bench_models.py')));
  return py;
}

/**
 * The graph a Node tool's arguments name, put into py's file system: `MODEL_DIR NAME [COUNT]` copies NAME.json
 * and NAME.bin of a benchmark directory to /home/pyodide/models/m.*, `--captured BUILD.json [COUNT]` copies a
 * build message a page sent its worker to /home/pyodide/models/captured.json.  Sets the Python globals CAPTURED
 * and `countName` (COUNT, or `defaultCount`); returns the flags (the arguments starting with --).
 */
export function loadGraphArgs(py, argv, countName, defaultCount) {
  const flags = argv.filter((a) => a.startsWith('--'));
  const captured = flags.includes('--captured');
  const positional = argv.filter((a) => !a.startsWith('--'));
  const [modelDir, name, count = String(defaultCount)] =
    captured ? [positional[0], '', positional[1] || String(defaultCount)] : positional;
  py.FS.mkdirTree('/home/pyodide/models');
  if (captured) {
    py.FS.writeFile('/home/pyodide/models/captured.json', fs.readFileSync(modelDir));
  } else {
    for (const ext of ['json', 'bin'].filter((e) => fs.existsSync(path.join(modelDir, `${name}.${e}`)))) {
      py.FS.writeFile(`/home/pyodide/models/m.${ext}`, fs.readFileSync(path.join(modelDir, `${name}.${ext}`)));
    }
  }
  py.globals.set('CAPTURED', captured);
  py.globals.set(countName, Number(count));
  return flags;
}
