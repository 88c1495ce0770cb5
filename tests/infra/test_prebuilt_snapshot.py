"""The build's Pyodide snapshot (scripts/make_snapshot.mjs) under Node, through the polyfill's own restore
(polyfill/src/boot/snapshot.js startPyodide): it restores, carries a browser's environment and not Node's, and two
restores of it draw different `random` numbers (one heap for every visitor: the generator is seeded again)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from web.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# argv: snapshot.js, the Pyodide folder, the .gz
RUNNER = r"""
import fs from 'fs';
import zlib from 'zlib';
const [snapshotJs, dir, gz] = process.argv.slice(1);
const {startPyodide} = await import(snapshotJs);
const {loadPyodide, version} = await import(dir + '/pyodide.mjs');
const bytes = new Uint8Array(zlib.gunzipSync(fs.readFileSync(gz)));
const out = [];
for (let i = 0; i < 2; i++) {
  const {py, snapshot} = await startPyodide(loadPyodide, version, {indexURL: dir + '/'},
    {use: false, given: bytes.slice()});
  out.push({snapshot, state: JSON.parse(py.runPython(
    'import json, os, random, sys; json.dumps([random.random(), os.environ.get("_"), os.environ.get("LANG"), ' +
    'os.environ.get("HOME"), sys.argv, sys.executable])'))});
}
console.log(JSON.stringify(out));
"""


def test_two_restores_of_the_build_snapshot_differ_in_random_and_hold_no_trace_of_node() -> None:
    settings = Settings.from_env()
    asset = settings.snapshot_asset()
    if asset is None:
        pytest.skip("no Pyodide snapshot in polyfill/dist: make snapshot")
    gz = settings.polyfill_dist / asset["url"].rsplit("/", 1)[1]
    assert NODE is not None
    run = subprocess.run([NODE, "--input-type=module", "-e", RUNNER, str(ROOT / "polyfill/src/boot/snapshot.js"),
                          str(settings.pyodide_dir), str(gz)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert first["snapshot"] == second["snapshot"] == "handed"
    assert first["state"][0] != second["state"][0]  # random seeded again after each restore
    # the browser's program name and a fixed LANG, not this Node process's script path or locale
    assert first["state"][1:] == ["./this.program", "C.UTF-8", "/home/pyodide", [""], "/home/pyodide/this.program"]


# argv: snapshot.js, the Pyodide folder, the .gz, its .json, the NumPy wheel; restores the NumPy snapshot through
# startPyodide's `numpy` option (its cached copy given), twice as built and once with a relink record off by one
NUMPY_RUNNER = r"""
import fs from 'fs';
import zlib from 'zlib';
const [snapshotJs, dir, gz, metaFile, wheel] = process.argv.slice(1);
const {startPyodide} = await import(snapshotJs);
const {loadPyodide, version} = await import(dir + '/pyodide.mjs');
const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8'));
const bytes = new Uint8Array(zlib.gunzipSync(fs.readFileSync(gz)));
const out = [];
for (const offBy of [0, 0, 1]) {
  const asset = {...meta, relink: {...meta.relink, tableBefore: meta.relink.tableBefore + offBy}};
  const {py, snapshot, numpy} = await startPyodide(loadPyodide, version, {indexURL: dir + '/', stderr: () => {}},
    {use: true, numpy: {asset, lockSha256: Promise.resolve(meta.numpySha256), cached: Promise.resolve(bytes.slice())}});
  // NumPy's files, as the worker writes them after the restore (lazy imports read them)
  py.FS.writeFile('/tmp/numpy.whl', fs.readFileSync(wheel));
  out.push({snapshot, numpy: !!numpy, state: JSON.parse(py.runPython(`
import json, sys, zipfile, site, importlib
imported = 'numpy' in sys.modules
lazy = 'numpy.polynomial' in sys.modules
with zipfile.ZipFile('/tmp/numpy.whl') as z:
    z.extractall(site.getsitepackages()[0])
importlib.invalidate_caches()
import numpy as np, numpy.polynomial
a = np.linspace(-2.0, 3.0, 12).reshape(3, 4)
json.dumps([imported, (a @ a.T).tolist(), np.linalg.inv(a @ a.T + np.eye(3)).tolist(),
            float(np.polynomial.polynomial.polyval(2.0, [1.0, 2.0, 3.0])), lazy])`))});
}
console.log(JSON.stringify(out));
"""


def test_the_numpy_snapshot_restores_numpy_imported_and_refuses_a_record_that_does_not_match() -> None:
    """The worker's NumPy snapshot (polyfill/src/boot/relink.js): NumPy comes imported, computes what CPython's NumPy
    computes, imports a module it did not hold (numpy.polynomial) after the restore; a relink record whose function
    table does not match is refused before anything runs and the boot goes on without it."""
    np = pytest.importorskip("numpy")
    settings = Settings.from_env()
    asset = settings.snapshot_asset("pyodide-snapshot-numpy")
    if asset is None:
        pytest.skip("no NumPy snapshot in polyfill/dist: make snapshot")
    gz = settings.polyfill_dist / asset["url"].rsplit("/", 1)[1]
    lock = json.loads((settings.pyodide_dir / "pyodide-lock.json").read_text())
    wheel = settings.pyodide_dir / lock["packages"]["numpy"]["file_name"]
    assert NODE is not None
    run = subprocess.run([NODE, "--input-type=module", "-e", NUMPY_RUNNER, str(ROOT / "polyfill/src/boot/snapshot.js"),
                          str(settings.pyodide_dir), str(gz), str(gz.with_name("pyodide-snapshot-numpy.json")),
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first, second, refused = json.loads(run.stdout.strip().splitlines()[-1])
    a = np.linspace(-2.0, 3.0, 12).reshape(3, 4)
    for got in (first, second):
        assert got["snapshot"] == "loaded" and got["numpy"] is True
        imported, product, inverse, polyval, lazy = got["state"]
        assert imported is True and lazy is False
        np.testing.assert_allclose(product, a @ a.T, rtol=1e-12)
        np.testing.assert_allclose(inverse, np.linalg.inv(a @ a.T + np.eye(3)), rtol=1e-9)
        assert polyval == 17.0
    assert "the function table has" in run.stderr
    assert refused["snapshot"] == "none" and refused["numpy"] is False and refused["state"][0] is False
    np.testing.assert_allclose(refused["state"][1], a @ a.T, rtol=1e-12)


# argv: snapshot.js, boot.js, the Pyodide folder, the .gz, the core wheel's sha256; restores the bare snapshot
# three times: beside the same core wheel, beside another, and with the imports switched off (boot.js)
CORE_RUNNER = r"""
import fs from 'fs';
import zlib from 'zlib';
const [snapshotJs, bootJs, dir, gz, sha] = process.argv.slice(1);
const {startPyodide} = await import(snapshotJs);
const {dropStaleImports} = await import(bootJs);
const {loadPyodide, version} = await import(dir + '/pyodide.mjs');
const bytes = new Uint8Array(zlib.gunzipSync(fs.readFileSync(gz)));
const out = [];
for (const wheels of [[{sha256: sha}], [{sha256: '0'.repeat(64)}], []]) {
  const {py} = await startPyodide(loadPyodide, version, {indexURL: dir + '/'}, {use: false, given: bytes.slice()});
  const before = py.runPython('import sys; "py_core.bridge.builder_host" in sys.modules');
  const kept = dropStaleImports(py, wheels);
  out.push({before, kept, after: py.runPython(
    'import sys; sorted(m for m in sys.modules if m.split(".")[0] == "py_core")').toJs().length});
}
console.log(JSON.stringify(out));
"""


def test_the_bare_snapshot_holds_the_core_imported_and_drops_it_beside_another_core() -> None:
    """The build's bare snapshot comes with the page's core imported (scripts/make_snapshot.mjs --core-wheel, as
    `make snapshot` runs it): kept beside the core wheel it was made from, dropped beside another one and where the
    boot asks (coreSnapshot: false), so that a changed core is never run from an older snapshot's modules."""
    settings = Settings.from_env()
    asset = settings.snapshot_asset()
    if asset is None:
        pytest.skip("no Pyodide snapshot in polyfill/dist: make snapshot")
    gz = settings.polyfill_dist / asset["url"].rsplit("/", 1)[1]
    meta = json.loads(gz.with_name("pyodide-snapshot.json").read_text())
    if not meta.get("coreSha256"):
        pytest.skip("the snapshot was made without the core: make snapshot")
    assert NODE is not None
    run = subprocess.run([NODE, "--input-type=module", "-e", CORE_RUNNER, str(ROOT / "polyfill/src/boot/snapshot.js"),
                          str(ROOT / "polyfill/src/boot/boot.js"), str(settings.pyodide_dir), str(gz),
                          meta["coreSha256"]], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    same, other, off = json.loads(run.stdout.strip().splitlines()[-1])
    assert same["before"] is True and same["kept"] == ["py_core"] and same["after"] > 10
    for dropped in (other, off):
        assert dropped["before"] is True and dropped["kept"] == [] and dropped["after"] == 0
