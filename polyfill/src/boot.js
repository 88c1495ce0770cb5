// The one way this project starts a Pyodide: the page's (builder) and the execution worker's (runtime.js,
// engine.js) in the browser, and the Node runners (scripts/pyodide_node.mjs, tests/pyodide/run_wpt.mjs).
//
// Steps: import Pyodide's loader from indexURL (load-pyodide.js: pages, workers, service workers), start the
// interpreter (snapshot.js: from the memory snapshot when there is one), then install NumPy and wheels
// (wheels.js: fetched with their sha256 checked and unpacked, or loadPackage where fetch cannot reach the files,
// e.g. a file system path under Node).  The version is the one its loader reports; the repository pins it in
// one place, the file PYODIDE_VERSION (read by web/settings.py, scripts/fetch_assets.py and, for the Node
// runners, scripts/pyodide_node.mjs).

import {importPyodide} from './load-pyodide.js';
import {startPyodide} from './snapshot.js';
import {installNumpy, installWheel} from './wheels.js';

const QUIET = {messageCallback: () => {}};

/** True when wheels can be fetched from indexURL (http, https, blob); false for a file system path. */
function fetchable(indexURL) {
  return /^(https?|blob):/i.test(indexURL);
}

/**
 * A started Pyodide with what it needs installed.
 *  indexURL      Pyodide's folder (a URL, or a path ending in '/' under Node)
 *  lockFileURL   a lock file other than indexURL's own (the dist package's)
 *  env, stdout, stderr, args: loadPyodide's options (stdout/stderr default to silence)
 *  snapshot      {use, make}: restore the cached memory snapshot / take one when booting without (snapshot.js)
 *  numpy         install NumPy
 *  wheels        [{url, sha256}] installed after (sha256: hex, checked before anything is unpacked)
 *  packages      names for loadPackage (e.g. 'scipy' under Node)
 *  unpack        false installs with loadPackage (the worker's ?unpack=0)
 *  mark(stage)   called after 'script', 'runtime' and 'packages'
 * Resolves to {py, version, snapshot: 'loaded'|'made'|'none', numpy: 'unpacked'|'loadPackage'|null}.
 */
export async function bootPyodide({indexURL, lockFileURL, env, stdout = () => {}, stderr = () => {}, args,
  snapshot = {use: false, make: false}, numpy = false, wheels = [], packages = [], unpack = true,
  mark = () => {}} = {}) {
  const {loadPyodide, version} = await importPyodide(indexURL);
  mark('script');
  const options = {indexURL, stdout, stderr};
  if (lockFileURL) options.lockFileURL = lockFileURL;
  if (env && Object.keys(env).length) options.env = env;
  if (args) options.args = args;
  const started = await startPyodide(loadPyodide, version, options, snapshot);
  const py = started.py;
  mark('runtime');
  const viaFetch = unpack && fetchable(indexURL);
  // NumPy and the wheels fetched and unpacked concurrently; then packages by name (SciPy needs NumPy)
  const [numpyHow] = await Promise.all([
    numpy ? installNumpy(py, indexURL, {unpack: viaFetch}) : null,
    ...wheels.map((w) => installWheel(py, w.url, w.sha256, {unpack: viaFetch})),
  ]);
  if (packages.length) await py.loadPackage(packages, QUIET);
  mark('packages');
  return {py, version: version || py.version, snapshot: started.snapshot, numpy: numpyHow};
}
