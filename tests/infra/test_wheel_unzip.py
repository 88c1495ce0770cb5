"""polyfill/src/boot/wheels.js readZip (wheels unpacked in JavaScript with DecompressionStream) against CPython's
zipfile as the oracle, under Node: every file's bytes, and a refusal (so the caller unpacks with CPython) for
what it does not read."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# reads the zip at argv[2], prints {"files": {path: base64}} or {"error": message}
RUNNER = """
import {readFileSync} from 'fs';
const {readZip} = await import(process.argv[1]);
try {
  const files = await readZip(new Uint8Array(readFileSync(process.argv[2])));
  const b64 = (f) => [f.path, Buffer.from(f.data).toString('base64')];
  console.log(JSON.stringify({files: Object.fromEntries(files.map(b64))}));
} catch (e) {
  console.log(JSON.stringify({error: String(e && e.message)}));
}
"""


def read_zip(tmp_path: Path, data: bytes) -> dict:
    z = tmp_path / "t.zip"
    z.write_bytes(data)
    out = subprocess.run([NODE, "--input-type=module", "-e", RUNNER, str(ROOT / "polyfill/src/boot/wheels.js"), str(z)],
                         capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def zip_of(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED, comment: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        z.writestr(zipfile.ZipInfo("pkg/"), b"")  # a directory entry: skipped
        for name, data in entries.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_STORED if name.endswith(".stored") else method)
        z.comment = comment
    return buf.getvalue()


def test_files_match_cpython_zipfile(tmp_path: Path) -> None:
    rng = __import__("random").Random(5)
    entries = {"pkg/__init__.py": b"x = 1\n", "pkg/empty.txt": b"", "pkg/sub/data.bin": rng.randbytes(300_000),
               "pkg/sub/text.py": b"print('hi')\n" * 5000, "pkg/raw.stored": rng.randbytes(1000),
               "pkg-1.0.dist-info/RECORD": "caf\u00e9,,\n".encode()}
    data = zip_of(entries, comment=b"a zip comment moves the end record")
    got = read_zip(tmp_path, data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        oracle = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    assert set(got["files"]) == set(oracle)
    for name, expected in oracle.items():
        assert base64.b64decode(got["files"][name]) == expected, name


def test_numpy_wheel_matches_cpython_zipfile(tmp_path: Path) -> None:
    wheels = sorted(Path.home().glob(".cache/pyodide-webnn/pyodide-*/numpy-*.whl"))
    if not wheels:
        pytest.skip("no cached NumPy wheel (scripts/fetch_assets.py)")
    data = wheels[-1].read_bytes()
    got = read_zip(tmp_path, data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = [i.filename for i in z.infolist() if not i.is_dir()]
        assert sorted(got["files"]) == sorted(names)
        for name in names:
            assert base64.b64decode(got["files"][name]) == z.read(name), name


@pytest.mark.parametrize("case", ["bzip2", "parent-path", "truncated", "not-a-zip"])
def test_what_it_does_not_read_is_refused(tmp_path: Path, case: str) -> None:
    if case == "bzip2":
        data = zip_of({"pkg/a.py": b"a" * 1000}, method=zipfile.ZIP_BZIP2)
    elif case == "parent-path":
        data = zip_of({"../evil.py": b"x"})
    elif case == "truncated":
        good = zip_of({"pkg/a.bin": bytes(range(256)) * 400}, method=zipfile.ZIP_STORED)
        # keep the central directory, cut into the file's data: sizes no longer add up
        cut = good.index(b"PK\x01\x02")
        data = good[:cut // 2] + good[cut:]
    else:
        data = b"PK\x03\x04 but nothing more" * 3
    got = read_zip(tmp_path, data)
    assert "error" in got and got["error"], got
