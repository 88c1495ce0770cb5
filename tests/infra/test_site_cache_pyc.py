"""The .pyc a site-packages cache entry carries (polyfill/src/boot/sitecache.js, boot.js prepareSite) are the ones
CPython then loads: under Node, Pyodide imports the page's builder (py_core.bridge.builder_host) from files
written with SITE_MTIME_MS while writing bytecode; a fresh Pyodide given the same tree back (sitecache.js
writeTree) imports every module from its .pyc, by CPython's own verbose import log (the oracle: "X.pyc matches
X.py").  Written with another modification time, none match: the check is not vacuous."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCRIPT = """
import {nodePyodide, copyTree, root} from '%(root)s/scripts/pyodide_node.mjs';
import {SITE_MTIME_MS, listTree, wheelTree, writeTree, forgetListings} from '%(root)s/polyfill/src/boot/sitecache.js';
const dir = '/lib/python3.12/site-packages';
const first = await nodePyodide({});
copyTree(first, root + '/py_core', dir + '/py_core', /\\.(py|json)$/);
for (const path of listTree(first.FS, dir)) first.FS.utime(`${dir}/${path}`, SITE_MTIME_MS, SITE_MTIME_MS);
forgetListings(first);
first.runPython('import sys; sys.dont_write_bytecode = False; import py_core.bridge.builder_host');
const tree = wheelTree(first.FS, dir, ['py_core']);
const out = {};
for (const mtime of [SITE_MTIME_MS, SITE_MTIME_MS + 86400000]) {
  const lines = [];
  const py = await nodePyodide({env: {PYTHONVERBOSE: '1'}, stderr: (l) => lines.push(l)});
  writeTree(py.FS, dir, tree.map((f) => ({path: f.path, data: f.data.slice()})), mtime);
  forgetListings(py);
  py.runPython('import py_core.bridge.builder_host');
  out[mtime === SITE_MTIME_MS ? 'same' : 'other'] = {
    pyc: tree.filter((f) => f.path.endsWith('.pyc')).map((f) => f.path),
    matches: lines.filter((l) => / matches .*site-packages\\/py_core\\//.test(l)).length,
    fromSource: lines.filter((l) => /^# code object from .*site-packages\\/py_core\\/.*\\.py$/.test(l)).length,
  };
}
console.log(JSON.stringify(out));
"""


def test_cached_pyc_are_loaded_and_only_with_the_fixed_mtime(run_in_pyodide_node: Callable[[str], Any]) -> None:
    out = run_in_pyodide_node(SCRIPT)
    same, other = out["same"], out["other"]
    assert len(same["pyc"]) >= 10  # the builder's modules
    assert same["matches"] == len(same["pyc"]) and same["fromSource"] == 0
    assert other["matches"] == 0 and other["fromSource"] == len(other["pyc"])
