"""scripts/setup_native_chromium.py: the npm Chromium 153 with native WebNN, installed from npm into a cache
outside the repo, verified, checked quickly when present, repaired when damaged, and a recorded reason (never a
failed setup) where it cannot be had."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from scriptfiles import load_script

from web import browsers


@pytest.fixture(scope="module")
def setup_mod() -> ModuleType:
    return load_script("setup_native_chromium")


@pytest.fixture(scope="module")
def fresh_install(setup_mod: ModuleType) -> Path:
    """The real install in the user cache (make setup made it; installed here when it did not); its root."""
    root = setup_mod.default_cache_root()
    try:
        setup_mod.ensure_native_chromium(root, quiet=True)
    except setup_mod.Unavailable as e:
        pytest.skip(f"this machine cannot install it: {e}")
    return root


@pytest.fixture
def cache(fresh_install: Path, setup_mod: ModuleType, tmp_path: Path) -> Path:
    """A copy of the fresh install to damage (the 200 MB binary hard-linked: these tests do not touch it)."""
    src = setup_mod.install_dir(fresh_install)
    dst = setup_mod.install_dir(tmp_path)
    dst.mkdir()
    for f in (src / name for name in setup_mod.read_json(src / "manifest.json")["files"]):
        if f.name == "chromium":
            os.link(f, dst / f.name)
        else:
            shutil.copy2(f, dst / f.name)
    shutil.copy2(src / "manifest.json", dst)
    return tmp_path


def test_install_unpacks_every_file_next_to_the_binary(fresh_install: Path, setup_mod: ModuleType) -> None:
    target = setup_mod.install_dir(fresh_install)
    assert target.parent == fresh_install and target.name == "chromium-153.0.0"
    manifest = setup_mod.read_json(target / "manifest.json")
    assert manifest["integrity"] == setup_mod.INTEGRITY and manifest["npm"] == "@sparticuz/chromium@153.0.0"
    assert manifest["version"].startswith("Chromium 153."), manifest["version"]
    assert sorted(manifest["files"]) == sorted(browsers.NATIVE_CHROMIUM_FILES)
    for name, entry in manifest["files"].items():
        assert setup_mod.sha256_file(target / name) == entry["sha256"], name
    assert os.access(target / "chromium", os.X_OK)
    assert setup_mod.installed(target, verify=True)
    # no tarball or staging directory is left behind in the cache
    assert not [p.name for p in fresh_install.iterdir() if p.name.startswith(".chromium-") or p.suffix == ".tgz"]


def test_second_run_only_checks_without_npm(
    fresh_install: Path, setup_mod: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm, no node: a reinstall would fail

    def no_install(*args: object) -> None:
        raise AssertionError("an installed Chromium was installed again")

    monkeypatch.setattr(setup_mod, "install", no_install)
    # the quick check compares sizes and times: hashing 300 MB is what --verify asks for
    monkeypatch.setattr(setup_mod, "sha256_file", lambda path: pytest.fail(f"the quick check hashed {path}"))
    path = setup_mod.ensure_native_chromium(fresh_install, quiet=True)
    assert path == setup_mod.install_dir(fresh_install) / "chromium"


def test_browsers_find_the_install(fresh_install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYODIDE_WEBNN_CACHE", str(fresh_install))
    monkeypatch.delenv("PYODIDE_WEBNN_NATIVE_CHROMIUM", raising=False)
    found = browsers.native_chromium()
    assert found.path == str(fresh_install / "chromium-153.0.0" / "chromium") and found.version.startswith("Chromium")
    kw = browsers.native_chromium_launch_args()
    assert kw["executable_path"] == found.path and kw["chromium_sandbox"] is False and kw["headless"] is True
    features = [a for a in kw["args"] if a.startswith("--enable-features=")]
    assert features == ["--enable-features=WebMachineLearningNeuralNetwork"]
    assert set(browsers.CHROMIUM_OFFLINE_ARGS) <= set(kw["args"])


def test_damage_is_seen(cache: Path, setup_mod: ModuleType) -> None:
    target = setup_mod.install_dir(cache)
    lib = target / "libvk_swiftshader.so"
    st = lib.stat()
    with lib.open("r+b") as fh:
        fh.seek(4096)
        byte = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and time: only --verify sees a flipped byte
    assert setup_mod.installed(target) and not setup_mod.installed(target, verify=True)
    os.utime(lib)  # a rewritten file: its time changed
    assert not setup_mod.installed(target)
    (target / "libEGL.so").unlink()
    assert not setup_mod.installed(target, verify=True)


def test_damaged_install_is_reinstalled(cache: Path, setup_mod: ModuleType) -> None:
    lib = setup_mod.install_dir(cache) / "libvk_swiftshader.so"
    lib.write_bytes(lib.read_bytes()[:1000])
    setup_mod.ensure_native_chromium(cache, quiet=True)
    assert setup_mod.installed(setup_mod.install_dir(cache), verify=True)


def test_wrong_architecture_is_a_recorded_reason_not_a_failure(
    setup_mod: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(setup_mod.platform, "machine", lambda: "aarch64")
    assert setup_mod.main(["--cache", str(tmp_path)]) == 0
    assert "Linux x86-64 binary; this machine is Linux aarch64" in capsys.readouterr().err
    assert setup_mod.main(["--cache", str(tmp_path), "--strict", "--quiet"]) == 2
    monkeypatch.setenv("PYODIDE_WEBNN_CACHE", str(tmp_path))
    monkeypatch.delenv("PYODIDE_WEBNN_NATIVE_CHROMIUM", raising=False)
    found = browsers.native_chromium()
    assert found.path is None
    assert "the setup could not install it" in found.reason and "aarch64" in found.reason
    with pytest.raises(RuntimeError, match="aarch64"):
        browsers.native_chromium_launch_args()


def test_no_npm_and_a_wrong_tarball_say_why(
    setup_mod: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(setup_mod.Unavailable, match="npm not found on PATH"):
        setup_mod.ensure_native_chromium(tmp_path / "a", quiet=True)
    monkeypatch.undo()
    # the pinned integrity is checked by the script itself, not only by npm
    monkeypatch.setattr(setup_mod, "INTEGRITY", "sha512-" + "A" * 86 + "==")
    with pytest.raises(setup_mod.Unavailable, match="integrity sha512-.* != pinned sha512-AAAA"):
        setup_mod.ensure_native_chromium(tmp_path / "b", quiet=True)
    assert not (setup_mod.install_dir(tmp_path / "b")).exists()


def test_not_installed_names_the_setup_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYODIDE_WEBNN_CACHE", str(tmp_path))
    monkeypatch.delenv("PYODIDE_WEBNN_NATIVE_CHROMIUM", raising=False)
    found = browsers.native_chromium()
    assert found.path is None and "make setup" in found.reason and "missing chromium" in found.reason
