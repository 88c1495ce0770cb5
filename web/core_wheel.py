"""Build the py_core pure-Python wheel in memory from the checkout; rebuild when a source changes."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import threading
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = (".py", ".json")
# the C kernels' Pyodide side module (scripts/build_native.sh); the host build for CPython stays out.  Not named
# .so: Pyodide's loadPackage links every .so of a wheel at install, also in the page's Pyodide, which never calls
# the kernels (measured +0.57 s to the page's boot in Firefox); the worker's ctypes.CDLL loads it on import.
NATIVE_SUFFIX = ".wasm32.wasm"
# Subpackages that stay out of the wheel: py_core/testing holds the test oracles (the WPT runner, the tolerance
# table, float64 references), which run under CPython and in the tests' own Pyodide (tests/pyodide mounts the
# checkout), never in a browser.
EXCLUDED_SUBPACKAGES = ("testing",)
TAG = "py3-none-any"
# A fixed timestamp makes the wheel bytes (and so its hash) depend on the sources alone.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class CoreWheel:
    """One built wheel: its file name, bytes, sha256 and the number of packaged source files."""

    filename: str
    data: bytes
    sha256: str
    files: int

    @property
    def short_hash(self) -> str:
        """First 16 hex digits of the sha256: the cache-busting path segment."""
        return self.sha256[:16]

    @property
    def url(self) -> str:
        """Server path of this wheel."""
        return f"/core/{self.short_hash}/{self.filename}"


@dataclass(frozen=True)
class ProjectMeta:
    """The few pyproject.toml fields a wheel's METADATA needs."""

    name: str = "py_core"
    version: str = "0.1.0"
    summary: str = ""
    requires_python: str = ""
    requires: tuple[str, ...] = ()


def read_project_meta(pyproject: Path) -> ProjectMeta:
    """Read name, version, summary and dependencies from pyproject.toml (defaults when absent)."""
    if not pyproject.is_file():
        return ProjectMeta()
    project = tomllib.loads(pyproject.read_text()).get("project", {})
    return ProjectMeta(
        name=project.get("name", "py_core"),
        version=project.get("version", "0.1.0"),
        summary=project.get("description", ""),
        requires_python=project.get("requires-python", ""),
        requires=tuple(project.get("dependencies", ())),
    )


def source_files(pkg_dir: Path) -> list[Path]:
    """The package's .py and .json files and the wasm C kernels, sorted, skipping caches, hidden directories and
    EXCLUDED_SUBPACKAGES."""
    if not pkg_dir.is_dir():
        return []
    found = [
        p
        for p in pkg_dir.rglob("*")
        if (p.suffix in SOURCE_SUFFIXES or p.name.endswith(NATIVE_SUFFIX))
        and p.is_file()
        and not _skipped(p.relative_to(pkg_dir).parts)
    ]
    return sorted(found)


def _skipped(parts: tuple[str, ...]) -> bool:
    if len(parts) > 1 and parts[0] in EXCLUDED_SUBPACKAGES:
        return True
    return any(part == "__pycache__" or part.startswith(".") for part in parts)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _metadata(meta: ProjectMeta) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {meta.name}", f"Version: {meta.version}"]
    if meta.summary:
        lines.append(f"Summary: {meta.summary}")
    if meta.requires_python:
        lines.append(f"Requires-Python: {meta.requires_python}")
    lines += [f"Requires-Dist: {req}" for req in meta.requires]
    return "\n".join(lines) + "\n"


def build_wheel(pkg_dir: Path, meta: ProjectMeta | None = None) -> CoreWheel:
    """Zip pkg_dir's sources plus a .dist-info (METADATA, WHEEL, RECORD) into a py3-none-any wheel."""
    meta = meta or ProjectMeta()
    dist = re.sub(r"[-_.]+", "_", meta.name).lower()
    dist_info = f"{dist}-{meta.version}.dist-info"
    wheel_txt = (
        f"Wheel-Version: 1.0\nGenerator: pyodide-webnn web.core_wheel\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    )
    entries = []
    for path in source_files(pkg_dir):
        try:
            entries.append((f"{pkg_dir.name}/{path.relative_to(pkg_dir).as_posix()}", path.read_bytes()))
        except FileNotFoundError:  # deleted while we listed: the next manifest request rebuilds anyway
            continue
    entries += [
        (f"{dist_info}/METADATA", _metadata(meta).encode()),
        (f"{dist_info}/WHEEL", wheel_txt.encode()),
        (f"{dist_info}/top_level.txt", f"{pkg_dir.name}\n".encode()),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in entries)
    entries.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode()))
    buf = io.BytesIO()
    # stored, not deflated: the server's brotli compresses the whole wheel (152 KB) better than deflate per file
    # does (247 KB with brotli on top)
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    data = buf.getvalue()
    filename = f"{dist}-{meta.version}-{TAG}.whl"
    return CoreWheel(filename, data, hashlib.sha256(data).hexdigest(), len(entries) - 4)


# Wheels kept after a rebuild, so a page that read the manifest just before a source edit still gets the
# wheel it was told about (a page boots two Pyodides that fetch the wheel moments apart).
KEEP_RECENT = 8


class CoreWheelCache:
    """Holds the latest wheel; `get()` rebuilds it only when a source file's mtime or size changed."""

    def __init__(self, pkg_dir: Path, pyproject: Path | None = None) -> None:
        self.pkg_dir = pkg_dir
        self.pyproject = pyproject or pkg_dir.parent / "pyproject.toml"
        self._lock = threading.Lock()
        self._stamp: tuple[tuple[str, int, int], ...] | None = None
        self._wheel: CoreWheel | None = None
        self._recent: dict[str, CoreWheel] = {}

    def _fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        paths = [*source_files(self.pkg_dir), self.pyproject]
        stamp = []
        for p in paths:
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            stamp.append((str(p), st.st_mtime_ns, st.st_size))
        return tuple(stamp)

    def get(self) -> CoreWheel:
        """The current wheel, rebuilt first if the sources changed since the last call."""
        with self._lock:
            stamp = self._fingerprint()
            if self._wheel is None or stamp != self._stamp:
                self._wheel = build_wheel(self.pkg_dir, read_project_meta(self.pyproject))
                self._stamp = stamp
                self._recent.pop(self._wheel.short_hash, None)
                self._recent[self._wheel.short_hash] = self._wheel
                while len(self._recent) > KEEP_RECENT:
                    del self._recent[next(iter(self._recent))]
            return self._wheel

    def find(self, short_hash: str) -> CoreWheel | None:
        """The current wheel or one of the last few, by the hash in its URL; None if unknown."""
        current = self.get()
        if short_hash == current.short_hash:
            return current
        with self._lock:
            return self._recent.get(short_hash)


def main(argv: list[str] | None = None) -> int:
    """Write the core wheel the dev server would serve now to a file (scripts/make_snapshot.mjs imports it into
    the build's snapshots): `python -m web.core_wheel OUT.whl`; prints its sha256."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m web.core_wheel OUT.whl", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[1]
    wheel = build_wheel(root / "py_core", read_project_meta(root / "pyproject.toml"))
    out = Path(args[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(wheel.data)
    print(wheel.sha256)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
