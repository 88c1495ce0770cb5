"""The build's Pyodide snapshot (scripts/make_snapshot.mjs) under Node, through the polyfill's own restore
(polyfill/src/snapshot.js startPyodide): it restores, carries a browser's environment and not Node's, and two
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
    run = subprocess.run([NODE, "--input-type=module", "-e", RUNNER, str(ROOT / "polyfill/src/snapshot.js"),
                          str(settings.pyodide_dir), str(gz)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first, second = json.loads(run.stdout.strip().splitlines()[-1])
    assert first["snapshot"] == second["snapshot"] == "handed"
    assert first["state"][0] != second["state"][0]  # random seeded again after each restore
    # the browser's program name and a fixed LANG, not this Node process's script path or locale
    assert first["state"][1:] == ["./this.program", "C.UTF-8", "/home/pyodide", [""], "/home/pyodide/this.program"]
