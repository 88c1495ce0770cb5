"""scripts/make_dist.py's pieces that the browser tests do not reach: the precompressed siblings and their cache,
and the package manifest. (tests/browser/test_dist.py builds and runs the whole package.)"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from types import ModuleType

import brotli
import pytest
from scriptfiles import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def make_dist() -> ModuleType:
    return load_script("make_dist")


def test_siblings_decode_to_the_file_and_come_from_the_cache_the_second_time(
    make_dist: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = tmp_path / "worker.js"
    text.write_bytes(b"export const x = 1;\n" * 500)
    cache = tmp_path / "cache"
    written = make_dist.compress_file(text, cache)
    assert sorted(p.name for p in written) == ["worker.js.br", "worker.js.gz"]
    assert brotli.decompress((tmp_path / "worker.js.br").read_bytes()) == text.read_bytes()
    assert gzip.decompress((tmp_path / "worker.js.gz").read_bytes()) == text.read_bytes()
    for p in written:
        p.unlink()

    def refuse(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("compressed again instead of reading the cache")

    monkeypatch.setattr(brotli, "compress", refuse)
    assert len(make_dist.compress_file(text, cache)) == 2


def test_no_sibling_when_it_would_not_save(make_dist: ModuleType, tmp_path: Path) -> None:
    noise = tmp_path / "already.whl"
    noise.write_bytes(os.urandom(50_000))  # as incompressible as a zip's deflated members
    assert make_dist.compress_file(noise, None) == []
    assert not list(tmp_path.glob("already.whl.*"))


def test_package_manifest(make_dist: ModuleType) -> None:
    pkg = make_dist.package_json("1.2.3")
    assert pkg["name"] == "pyodide-webnn" and pkg["version"] == "1.2.3" and pkg["license"] == "Apache-2.0"
    assert pkg["exports"]["."] == {"import": "./webnn-polyfill.mjs", "default": "./webnn-polyfill.js"}
    assert {"!**/*.br", "!**/*.gz", "assets/"} <= set(pkg["files"])
