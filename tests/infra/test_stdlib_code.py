"""The standard library's compiled code kept in the site-packages cache entry (polyfill/src/boot/stdlibpyc.js): under
Node, one Pyodide records what zipimport compiles from python_stdlib.zip while it imports dataclasses and json, and
saves it; a fresh Pyodide given that file back gets those code objects instead of compiling.  The oracle is a
doctored file: a code object stored under dataclasses' path with its source's CRC-32 is what runs (a marker
attribute appears), one stored under json's path with a wrong CRC-32 is not (json compiles from its source); the
methods dataclasses compiles from text are kept too and still work; a file that is not marshal data is ignored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCRIPT = """
import {nodePyodide} from '%(root)s/scripts/pyodide_node.mjs';
import {STDLIB_CODE_FILE, hookStdlib, saveStdlib} from '%(root)s/polyfill/src/boot/stdlibpyc.js';
const dir = '/lib/python3.12/site-packages';
const file = `${dir}/${STDLIB_CODE_FILE}`;
const out = {};
const first = await nodePyodide({});
hookStdlib(first, dir, true);
first.runPython(`import dataclasses, json
@dataclasses.dataclass(frozen=True)
class P:
    x: int = 1`);
out.saved = saveStdlib(first, dir);
const saved = first.FS.readFile(file);
first.runPython('import pickle');  // after save: no longer recorded
out.savedAgain = saveStdlib(first, dir);

const doctor = `import marshal
d = marshal.load(open(PATH, "rb"))
dc, js = "/lib/python312.zip/dataclasses.py", "/lib/python312.zip/json/__init__.py"
d[dc] = (d[dc][0], compile("MARKER = 'cached'", dc, "exec"))
d[js] = (d[js][0] ^ 1, compile("MARKER = 'cached'", js, "exec"))
marshal.dump(d, open(PATH, "wb"))`;
const markers = 'import dataclasses, json\\n[getattr(dataclasses, "MARKER", None), getattr(json, "MARKER", None)]';
const check = `import dataclasses, json, marshal
@dataclasses.dataclass(frozen=True)
class P:
    x: int = 1
try:
    methods = sum(1 for k in marshal.load(open(PATH, "rb")) if type(k) is tuple)  # dataclasses' exec'd texts
except ValueError:
    methods = 0
[getattr(dataclasses, "MARKER", None), getattr(json, "MARKER", None), P().x, repr(P(2)), P(3) == P(3),
 hash(P(4)) == hash(P(4)), json.dumps([1]), dataclasses.__file__, methods > 3]`;
for (const variant of ['plain', 'doctored', 'garbage']) {
  const py = await nodePyodide({});
  py.FS.writeFile(file, variant === 'garbage' ? new Uint8Array([1, 2, 3, 4, 5]) : saved);
  py.globals.set('PATH', file);
  if (variant === 'doctored') py.runPython(doctor);
  const count = hookStdlib(py, dir, false);
  const got = py.runPython(variant === 'doctored' ? markers : check);
  out[variant] = {count, got: got.toJs()};
  got.destroy();
}
console.log(JSON.stringify(out));
"""


def test_stdlib_code_is_reused_only_for_the_same_source(run_in_pyodide_node: Callable[[str], Any]) -> None:
    out = run_in_pyodide_node(SCRIPT)
    assert out["saved"] >= 5  # dataclasses, json and its submodules at least
    assert out["savedAgain"] == 0
    zipped = "/lib/python312.zip/dataclasses.py"
    works = [1, "P(x=2)", True, True, "[1]", zipped]
    assert out["plain"] == {"count": out["saved"], "got": [None, None, *works, True]}
    # the stored code object runs where its CRC-32 matches the source, not where it does not
    assert out["doctored"]["got"] == ["cached", None]
    assert out["garbage"] == {"count": 0, "got": [None, None, *works, False]}
