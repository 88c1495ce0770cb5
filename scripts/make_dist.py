"""make dist: the polyfill as a self-contained static folder that is also the npm package root.

    dist/
      package.json, README.md          the npm package (name, version, exports, files, license)
      webnn-polyfill.js                 the one-tag script (IIFE); stable name, references the hashed assets
      webnn-polyfill.mjs                the ES module entry; stable name
      assets/webnn-worker.<hash>.js     the execution worker
      assets/webnn-engine.<hash>.js     the engine as a classic script, for scopes that cannot start workers
      assets/pyodide-lock.<hash>.json   Pyodide's lock, cut to NumPy and extended with py_core (pyodide-lock)
      assets/pyodide-<hash>/            the Pyodide core (its file names are fixed by Pyodide: the folder is hashed)
      assets/numpy-<hash>/numpy-....whl, assets/py_core-<hash>/py_core-....whl   (wheel names are fixed too)
      assets/pyodide-snapshot.<hash>.bin-gz   with --snapshots: the Pyodide memory snapshot a first visit restores
      assets/pyodide-snapshot-numpy.<hash>.bin-gz   with --snapshots: the worker's, taken after `import numpy`
      *.br, *.gz                        precompressed siblings, for servers that negotiate Content-Encoding

Every asset a browser may cache has its content hash in its path, so a server can send them with
`Cache-Control: immutable`; only the two entry scripts and package.json keep their names.  Pyodide is the cut
build the dev server serves (scripts/trim_pyodide.mjs).  Without --snapshots a first visit downloads no memory
snapshot: the worker starts CPython, takes its own snapshot and stores it for the next visit (12 MB less on the
wire; docs/startup.md has the measured trade).  Usage: `python scripts/make_dist.py [--out dist] [--no-compress]
[--snapshots]` (make dist runs it after make build).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pyodide_lock import PyodideLockSpec
from pyodide_lock.utils import add_wheels_to_spec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from web.core_wheel import NATIVE_SUFFIX, build_wheel, read_project_meta  # noqa: E402
from web.settings import Settings  # noqa: E402

PACKAGE_NAME = "pyodide-webnn"
# the Pyodide files a page and its worker fetch (pyodide.js: for the polyfill inside a classic worker)
PYODIDE_FILES = ("pyodide.mjs", "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
HASH_LEN = 16
# precompressed siblings for these; a sibling is kept only when it saves at least this fraction
COMPRESSIBLE = (".js", ".mjs", ".json", ".wasm", ".whl", ".zip", ".map")
MIN_SAVING = 0.01
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"


def sha256(data: bytes) -> str:
    """Hex sha256 of data."""
    return hashlib.sha256(data).hexdigest()


def compressed_cache() -> Path:
    """Where .br/.gz results are kept by the source's sha256: brotli at quality 11 takes a minute for the wasm."""
    return Settings.from_env().cache_dir / "compressed"


def compress_file(path: Path, cache: Path | None) -> list[Path]:
    """Write path.br and path.gz when each saves at least MIN_SAVING; returns the files written."""
    import brotli  # the dist extra

    data = path.read_bytes()
    digest = sha256(data)
    written = []
    for suffix, compress in (
        (".br", lambda d: brotli.compress(d, quality=11, lgwin=24)),
        (".gz", lambda d: gzip.compress(d, compresslevel=9, mtime=0)),
    ):
        cached = cache / f"{digest}{suffix}" if cache else None
        if cached and cached.is_file():
            packed = cached.read_bytes()
        else:
            packed = compress(data)
            if cached:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_suffix(f".{os.getpid()}.part")
                tmp.write_bytes(packed)
                tmp.replace(cached)
        if len(packed) <= len(data) * (1 - MIN_SAVING):
            out = path.with_name(path.name + suffix)
            out.write_bytes(packed)
            written.append(out)
    return written


def hashed_dir(assets: Path, stem: str, files: dict[str, bytes]) -> Path:
    """assets/<stem>-<hash of the files' names and bytes>/ holding files; returns the folder."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + sha256(files[name]).encode())
    folder = assets / f"{stem}-{h.hexdigest()[:HASH_LEN]}"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


SNAPSHOT_SUFFIX = ".bin-gz"  # the build's Pyodide snapshot, gzipped (see where it is written)


def hashed_file(assets: Path, stem: str, suffix: str, data: bytes) -> Path:
    """assets/<stem>.<hash><suffix>; returns its path."""
    path = assets / f"{stem}.{sha256(data)[:HASH_LEN]}{suffix}"
    path.write_bytes(data)
    return path


def esbuild(entry: str, fmt: str, define: dict[str, str] | None = None) -> bytes:
    """Bundle polyfill/src/<entry> (minified) and return the output bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.js"
        cmd = [str(ESBUILD), str(ROOT / "polyfill" / "src" / entry), "--bundle", f"--format={fmt}", "--minify",
               "--legal-comments=none", f"--outfile={out}", "--log-level=warning"]
        cmd += [f"--define:{k}={v}" for k, v in (define or {}).items()]
        subprocess.run(cmd, check=True, cwd=ROOT)
        return out.read_bytes()


def make_lock(pyodide_dir: Path, numpy_wheel: Path, core_wheel: Path, index_dir: Path) -> PyodideLockSpec:
    """Pyodide's official lock cut to NumPy (its dependencies: none), pointed at our copy, plus py_core."""
    official = PyodideLockSpec.from_json(pyodide_dir / "pyodide-lock.json")
    numpy = official.packages["numpy"]
    if numpy.depends:
        raise SystemExit(f"make_dist: numpy now depends on {numpy.depends}; copy those wheels too")
    if numpy.sha256 != sha256(numpy_wheel.read_bytes()):
        raise SystemExit("make_dist: the NumPy wheel does not match the lock's sha256 (run scripts/fetch_assets.py)")
    rel = os.path.relpath(numpy_wheel, index_dir)
    lock = official.model_copy(update={"packages": {"numpy": numpy.model_copy(update={"file_name": rel})}})
    base = os.path.relpath(core_wheel.parent, index_dir) + "/"
    return add_wheels_to_spec(lock, [core_wheel], base_path=core_wheel.parent, base_url=base)


def package_json(version: str) -> dict[str, object]:
    """The npm manifest: the script tag file is the CDN default, the module entry is what bundlers import."""
    return {
        "name": PACKAGE_NAME,
        "version": version,
        "description": "W3C WebNN polyfill (navigator.ml) whose engine is Python + NumPy on Pyodide",
        "license": "Apache-2.0",
        "type": "module",
        "main": "./webnn-polyfill.mjs",
        "module": "./webnn-polyfill.mjs",
        "unpkg": "./webnn-polyfill.js",
        "jsdelivr": "./webnn-polyfill.js",
        "exports": {
            ".": {"import": "./webnn-polyfill.mjs", "default": "./webnn-polyfill.js"},
            "./webnn-polyfill.js": "./webnn-polyfill.js",
            "./webnn-polyfill.mjs": "./webnn-polyfill.mjs",
            "./assets/*": "./assets/*",
            "./package.json": "./package.json",
        },
        # the precompressed siblings stay out of the tarball (npm gzips it anyway; CDNs compress themselves)
        "files": ["webnn-polyfill.js", "webnn-polyfill.mjs", "assets/", "README.md", "!**/*.br", "!**/*.gz"],
        "sideEffects": True,
        "keywords": ["webnn", "polyfill", "pyodide", "numpy", "machine-learning"],
    }


README = """# {name} {version}

A W3C WebNN polyfill (`navigator.ml`, `MLGraphBuilder`, ...) whose engine is Python + NumPy running on Pyodide
in a Web Worker. Built by `make dist` from the pyodide-webnn repository.

- One script tag, from any static host or CDN: `<script src=".../webnn-polyfill.js"></script>`. The page
  needs no cross-origin isolation; the host needs only `Access-Control-Allow-Origin` on these files.
- ES module: `import webnn from '{name}'` (`webnn.ml`, `webnn.MLGraphBuilder`). A bundler copies the module away
  from `assets/`: serve `assets/` and set `globalThis.WEBNN_POLYFILL_CONFIG = {{baseURL: '<folder holding assets/>'}}`
  before the import.
- `data-base="https://host/path/"` on the script tag (or `WEBNN_POLYFILL_CONFIG.baseURL`) loads `assets/` from
  elsewhere. Files under `assets/` have content hashes in their paths: serve them `Cache-Control: immutable`.

Bundles Pyodide {pyodide} (MPL-2.0), NumPy {numpy} (BSD-3-Clause) and py_core (Apache-2.0).
"""


def build(out: Path, compress: bool = True, snapshots: bool = False) -> dict[str, object]:
    """Write the package into out (replaced); returns the asset map the entry scripts embed."""
    settings = Settings.from_env()
    pyodide_dir = settings.pyodide_dir
    missing = [f for f in (*PYODIDE_FILES, "pyodide-lock.json") if not (pyodide_dir / f).is_file()]
    if missing:
        raise SystemExit(f"make_dist: {pyodide_dir} lacks {missing}: run scripts/fetch_assets.py (make assets)")
    meta = read_project_meta(ROOT / "pyproject.toml")
    core = build_wheel(ROOT / "py_core", meta)
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(core.data)) as zf:
        if not any(n.endswith(NATIVE_SUFFIX) for n in zf.namelist()):
            raise SystemExit("make_dist: the core wheel has no wasm kernels: run make build first")

    if out.exists():
        shutil.rmtree(out)
    assets = out / "assets"
    assets.mkdir(parents=True)
    index_dir = hashed_dir(assets, "pyodide", {f: (pyodide_dir / f).read_bytes() for f in PYODIDE_FILES})
    official = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    numpy_name = official["packages"]["numpy"]["file_name"]
    numpy_dir = hashed_dir(assets, "numpy", {numpy_name: (pyodide_dir / numpy_name).read_bytes()})
    core_dir = hashed_dir(assets, "py_core", {core.filename: core.data})

    lock = make_lock(pyodide_dir, numpy_dir / numpy_name, core_dir / core.filename, index_dir)
    with tempfile.TemporaryDirectory() as tmp:
        lock.to_json(Path(tmp) / "lock.json", indent=None)
        lock_path = hashed_file(assets, "pyodide-lock", ".json", (Path(tmp) / "lock.json").read_bytes())

    worker = hashed_file(assets, "webnn-worker", ".js", esbuild("worker.js", "esm"))
    engine = hashed_file(assets, "webnn-engine", ".js", esbuild("engine-script.js", "iife"))
    rel = lambda p: p.relative_to(out).as_posix()  # noqa: E731
    asset_map: dict[str, object] = {
        "worker": rel(worker),
        "engine": rel(engine),
        "pyodide": rel(index_dir) + "/",
        "lock": rel(lock_path),
        "core": {"wheel": rel(core_dir / core.filename), "sha256": core.sha256},
    }
    # the build's Pyodide snapshots (scripts/make_snapshot.mjs: make dist makes them first), already gzipped: the
    # bare interpreter's, and the worker's taken after `import numpy`
    shipped = (("snapshot", "pyodide-snapshot"), ("numpySnapshot", "pyodide-snapshot-numpy")) if snapshots else ()
    for key, name in shipped:
        snapshot = settings.snapshot_asset(name)
        if snapshot is None:
            print(f"make_dist: no {name} built (make snapshot): first visits start without it", file=sys.stderr)
            continue
        data = (settings.polyfill_dist / Path(snapshot["url"]).name).read_bytes()
        # not ".gz": the package's "files" leave the precompressed siblings (*.gz) out of the tarball, and a server
        # may send a .gz with Content-Encoding: gzip, so the browser inflates it and the sha256 (of the gzip
        # bytes, checked as the fetch's integrity) no longer matches
        path = hashed_file(assets, name, SNAPSHOT_SUFFIX, data)
        asset_map[key] = {**snapshot, "url": rel(path)}
    define = {"__WEBNN_DIST__": json.dumps(asset_map)}
    (out / "webnn-polyfill.js").write_bytes(esbuild("index.js", "iife", define))
    (out / "webnn-polyfill.mjs").write_bytes(esbuild("module.js", "esm", define))
    (out / "package.json").write_text(json.dumps(package_json(meta.version), indent=2) + "\n")
    (out / "README.md").write_text(README.format(
        name=PACKAGE_NAME, version=meta.version, pyodide=official["info"]["version"],
        numpy=official["packages"]["numpy"]["version"]))
    if compress:
        cache = compressed_cache()
        for path in sorted(out.rglob("*")):
            if path.is_file() and path.suffix in COMPRESSIBLE:
                compress_file(path, cache)
    return asset_map


def main(argv: list[str] | None = None) -> int:
    """Command line: build the package, print what it holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--no-compress", action="store_true", help="skip the .br/.gz siblings")
    parser.add_argument("--snapshots", action="store_true",
                        help="ship the build's Pyodide snapshots: first visits restore them (12 MB more to download)")
    args = parser.parse_args(argv)
    asset_map = build(args.out.resolve(), compress=not args.no_compress, snapshots=args.snapshots)
    files = [p for p in args.out.rglob("*") if p.is_file()]
    plain = [p for p in files if p.suffix not in (".br", ".gz")]
    print(f"dist: {args.out} ({len(plain)} files, {sum(p.stat().st_size for p in plain) / 1e6:.1f} MB; "
          f"with .br/.gz siblings {sum(p.stat().st_size for p in files) / 1e6:.1f} MB)")
    print(json.dumps(asset_map, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
