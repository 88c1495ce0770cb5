"""web/: isolation headers everywhere, MIME types, health, the in-memory core wheel and its manifest."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from fastapi import FastAPI

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # StarletteDeprecationWarning: it prefers httpx2; httpx works
    from fastapi.testclient import TestClient

from web.app import CROSS_ORIGIN_HEADERS, CROSS_ORIGIN_PREFIXES, ISOLATION_HEADERS, create_app
from web.core_wheel import CoreWheelCache, build_wheel, read_project_meta
from web.settings import PYODIDE_VERSION, Settings

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = '[project]\nname = "py_core"\nversion = "0.1.0"\ndependencies = ["numpy>=1.26"]\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A tiny fake checkout: py_core sources, a built bundle, and fake Pyodide assets."""
    root = tmp_path / "repo"
    pkg = root / "py_core"
    (pkg / "kernels" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""fake core."""\nVALUE = 1\n')
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "table.json").write_text('{"ops": []}\n')
    (pkg / "kernels" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    (pkg / "notes.txt").write_text("not packaged\n")
    (root / "pyproject.toml").write_text(PYPROJECT)
    dist = root / "polyfill" / "dist"
    dist.mkdir(parents=True)
    (dist / "webnn-polyfill.js").write_text("/* bundle */\n")
    assets = tmp_path / "cache" / f"pyodide-{PYODIDE_VERSION}"
    assets.mkdir(parents=True)
    lock = {"packages": {"numpy": {"file_name": "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"}}}
    (assets / "pyodide-lock.json").write_text(json.dumps(lock))
    for name in (
        "pyodide.mjs",
        "pyodide.asm.js",
        "pyodide.asm.wasm",
        "python_stdlib.zip",
        lock["packages"]["numpy"]["file_name"],
    ):
        (assets / name).write_bytes(b"\0asm" if name.endswith(".wasm") else b"x")
    return root


@pytest.fixture
def client(repo: Path) -> TestClient:
    settings = Settings(cache_dir=repo.parent / "cache", repo_root=repo)
    return TestClient(create_app(settings), raise_server_exceptions=False)


def _assert_isolated(response: object) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    expected = dict(ISOLATION_HEADERS)
    if response.request.url.path.startswith(CROSS_ORIGIN_PREFIXES):  # type: ignore[attr-defined]
        expected.update(CROSS_ORIGIN_HEADERS)  # what the polyfill loads may be included from any origin
    for key, value in expected.items():
        assert headers.get(key) == value, (response, key)


@pytest.mark.parametrize(
    "path,status",
    [
        ("/", 200),
        ("/api/health", 200),
        ("/core/manifest.json", 200),
        ("/test/smoke.html", 200),
        ("/gallery/", 200),
        ("/pyodide/pyodide.asm.wasm", 200),
        ("/polyfill/webnn-polyfill.js", 200),
        ("/nope", 404),
        ("/pyodide/nope.wasm", 404),
        ("/core/0000000000000000/py_core-0.1.0-py3-none-any.whl", 404),
    ],
)
def test_isolation_headers_on_every_response(client: TestClient, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status
    _assert_isolated(response)


def test_isolation_headers_on_405_and_500(repo: Path) -> None:
    app: FastAPI = create_app(Settings(cache_dir=repo.parent / "cache", repo_root=repo))

    def boom() -> None:
        raise RuntimeError("boom")

    app.add_api_route("/boom", boom)
    client = TestClient(app, raise_server_exceptions=False)
    _assert_isolated(client.post("/pyodide/pyodide.mjs"))
    response = client.get("/boom")
    assert response.status_code == 500
    _assert_isolated(response)


@pytest.mark.parametrize(
    "path,mime,cache",
    [
        ("/pyodide/pyodide.asm.wasm", "application/wasm", "max-age"),
        ("/pyodide/pyodide.mjs", "text/javascript", "max-age"),
        ("/pyodide/pyodide.asm.js", "text/javascript", "max-age"),
        ("/pyodide/pyodide-lock.json", "application/json", "max-age"),
        ("/pyodide/python_stdlib.zip", "application/zip", "max-age"),
        ("/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl", "application/zip", "max-age"),
        ("/polyfill/webnn-polyfill.js", "text/javascript", "no-cache"),
        ("/test/smoke.html", "text/html", "no-cache"),
        ("/", "text/html", "no-cache"),
        ("/favicon.ico", "image/svg+xml", "no-cache"),
    ],
)
def test_mime_types_and_cache_control(client: TestClient, path: str, mime: str, cache: str) -> None:
    response = client.get(path)
    assert response.headers["content-type"].split(";")[0] == mime
    assert cache in response.headers["cache-control"]


def test_missing_bundle_and_assets_are_404_not_500(tmp_path: Path) -> None:
    client = TestClient(create_app(Settings(cache_dir=tmp_path / "none", repo_root=tmp_path)))
    assert client.get("/polyfill/webnn-polyfill.js").status_code == 404
    assert client.get("/pyodide/pyodide.mjs").status_code == 404
    health = client.get("/api/health").json()
    assert (health["pyodide"], health["numpy"]) == (False, False)


def test_health(client: TestClient) -> None:
    health = client.get("/api/health").json()
    manifest = client.get("/core/manifest.json").json()
    assert health == {
        "status": "ok",
        "pyodide": True,
        "numpy": True,
        "core": manifest["sha256"][:16],
        "version": "0.1.0",
    }


def _check_record(data: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        record = zf.read("py_core-0.1.0.dist-info/RECORD").decode().splitlines()
        rows = dict((line.split(",")[0], line.split(",")[1:]) for line in record)
        assert set(rows) == set(names)
        for name in names:
            if name.endswith("RECORD"):
                continue
            digest, size = rows[name]
            body = zf.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={expected}", len(body))
        wheel = zf.read("py_core-0.1.0.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: true" in wheel and "Tag: py3-none-any" in wheel
        assert "Requires-Dist: numpy>=1.26" in zf.read("py_core-0.1.0.dist-info/METADATA").decode()
    return names


def test_manifest_and_wheel_download(client: TestClient) -> None:
    manifest = client.get("/core/manifest.json")
    assert manifest.headers["cache-control"] == "no-cache"
    body = manifest.json()
    assert body["wheel"] == f"/core/{body['sha256'][:16]}/py_core-0.1.0-py3-none-any.whl"
    assert body["files"] == 3
    wheel = client.get(body["wheel"])
    assert wheel.status_code == 200 and wheel.headers["content-type"] == "application/zip"
    assert hashlib.sha256(wheel.content).hexdigest() == body["sha256"]
    names = _check_record(wheel.content)
    assert "py_core/kernels/table.json" in names and not any(
        "__pycache__" in n or "notes" in n for n in names
    )


def test_manifest_names_the_build_snapshot_when_there_is_one(client: TestClient, repo: Path) -> None:
    # what scripts/make_snapshot.mjs writes beside the bundle; a snapshot of another Pyodide is not offered
    dist = repo / "polyfill" / "dist"
    assert "snapshot" not in client.get("/core/manifest.json").json()
    gz = b"\x1f\x8b fake snapshot"
    (dist / "pyodide-snapshot.bin.gz").write_bytes(gz)
    meta = {"file": "pyodide-snapshot.bin.gz", "sha256": hashlib.sha256(gz).hexdigest(), "size": len(gz),
            "snapshotSize": 65600, "pyodide": PYODIDE_VERSION}
    (dist / "pyodide-snapshot.json").write_text(json.dumps(meta))
    snapshot = client.get("/core/manifest.json").json()["snapshot"]
    assert snapshot == {"url": "/polyfill/pyodide-snapshot.bin.gz", "sha256": meta["sha256"], "size": 65600}
    served = client.get(snapshot["url"])
    assert served.content == gz and served.headers["content-type"] == "application/gzip"
    assert "content-encoding" not in served.headers  # the polyfill inflates it itself
    (dist / "pyodide-snapshot.json").write_text(json.dumps({**meta, "pyodide": "0.0.1"}))
    assert "snapshot" not in client.get("/core/manifest.json").json()


def test_wheel_rebuilt_on_change_and_unknown_hash_404(client: TestClient, repo: Path) -> None:
    old = client.get("/core/manifest.json").json()
    assert client.get("/core/manifest.json").json() == old  # no change, same wheel
    (repo / "py_core" / "extra.py").write_text("X = 2\n")
    new = client.get("/core/manifest.json").json()
    assert new["sha256"] != old["sha256"] and new["files"] == 4
    # a page that read the old manifest just before the edit still gets the wheel it was promised
    assert client.get(old["wheel"]).status_code == 200
    assert client.get(new["wheel"]).status_code == 200
    assert client.get(old["wheel"].replace(old["sha256"][:16], "0" * 16)).status_code == 404
    assert client.get(new["wheel"].replace("py_core-", "other-")).status_code == 404


def test_cache_notices_an_in_place_edit(repo: Path) -> None:
    cache = CoreWheelCache(repo / "py_core", repo / "pyproject.toml")
    first = cache.get()
    assert cache.get() is first
    init = repo / "py_core" / "__init__.py"
    init.write_text(init.read_text() + "VALUE = 3  # edited\n")
    os.utime(init, ns=(init.stat().st_atime_ns, init.stat().st_mtime_ns + 1_000_000))
    assert cache.get().sha256 != first.sha256


def test_wheel_is_deterministic(repo: Path) -> None:
    meta = read_project_meta(repo / "pyproject.toml")
    assert build_wheel(repo / "py_core", meta).data == build_wheel(repo / "py_core", meta).data


def test_real_core_wheel_installs_with_pip(tmp_path: Path) -> None:
    wheel = CoreWheelCache(ROOT / "py_core", ROOT / "pyproject.toml").get()
    path = tmp_path / wheel.filename
    path.write_bytes(wheel.data)
    _check_record(wheel.data)
    target = tmp_path / "site"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "-q",
        "--target",
        str(target),
        str(path),
    ]
    subprocess.run(cmd, check=True)
    # A fresh interpreter (py_core may already be imported here) that only locates the package:
    # importing it would test py_core's own code, not the wheel.
    probe = (
        f"import sys, importlib.util; sys.path.insert(0, {str(target)!r}); "
        "print(importlib.util.find_spec('py_core').origin)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(target / "py_core" / "__init__.py")
    assert (target / "py_core-0.1.0.dist-info" / "RECORD").is_file()
