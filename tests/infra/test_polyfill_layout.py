"""polyfill/src is grouped by layer (api/, runtime/, engine/, boot/; polyfill/src/README.md): its top holds the entry
points and the two tables, each folder says what it is for, the page bundle carries no engine, and nothing under
polyfill/ speaks of the project's development history."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "polyfill" / "src"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
LAYERS = ("api", "runtime", "engine", "boot")
TOP_FILES_MAX = 12  # entry points, config, switches, README: the rest lives in a layer
HISTORY = re.compile(r"session [0-9]|#[0-9]+ line|issue #[0-9]", re.I)


def test_the_top_of_polyfill_src_holds_at_most_12_files() -> None:
    top = sorted(p.name for p in SRC.iterdir() if p.is_file())
    assert len(top) <= TOP_FILES_MAX, f"polyfill/src holds {len(top)} files at its top (at most {TOP_FILES_MAX}): {top}"


def test_each_layer_says_what_it_is_for() -> None:
    for layer in LAYERS:
        readme = SRC / layer / "README.md"
        assert readme.is_file(), f"polyfill/src/{layer}/ has no README.md"
        lines = readme.read_text().strip().splitlines()
        assert 5 <= len(lines) <= 25, f"polyfill/src/{layer}/README.md: about a dozen lines, not {len(lines)}"
        # every module of the layer is named in its README
        for module in sorted((SRC / layer).glob("*.js")):
            assert module.name in readme.read_text(), f"polyfill/src/{layer}/README.md does not name {module.name}"


def test_nothing_under_polyfill_speaks_of_development_history() -> None:
    tracked = subprocess.run(["git", "ls-files", "polyfill"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = [f"{path}:{n}: {line.strip()}" for path in tracked.stdout.split()
             if (ROOT / path).is_file() and not path.endswith((".whl", ".wasm", ".gz"))
             for n, line in enumerate((ROOT / path).read_text(errors="replace").splitlines(), 1)
             if HISTORY.search(line)]
    assert not found, found


@pytest.mark.skipif(not ESBUILD.exists() or not (SRC / "generated" / "ops.json").exists(),
                    reason="esbuild or polyfill/src/generated/ (make build) missing")
def test_the_page_bundle_carries_no_engine(tmp_path: Path) -> None:
    """The script tag's bundle (index.js) and the ES module entry leave the engine to the worker and to the engine
    script (webnn-engine.js, loaded only by scopes that run it in their own thread); the engine script carries no
    boot code of its own (the page bundle's is handed to it)."""
    def inputs(entry: str, fmt: str) -> set[str]:
        meta = tmp_path / f"{entry}.json"
        subprocess.run([str(ESBUILD), str(SRC / entry), "--bundle", f"--format={fmt}", f"--metafile={meta}",
                        f"--outfile={tmp_path / entry}", "--log-level=warning"], cwd=ROOT, check=True)
        return {Path(p).relative_to("polyfill/src").as_posix() for p in json.loads(meta.read_text())["inputs"]}

    for entry, fmt in (("index.js", "iife"), ("module.js", "esm")):
        page = inputs(entry, fmt)
        assert "boot/boot.js" in page and "runtime/spawn.js" in page
        assert not [p for p in page if p.startswith("engine/")], f"{entry} bundles the engine"
    engine = inputs("engine-script.js", "iife")
    assert "engine/engine.js" in engine
    assert not [p for p in engine if p.startswith(("boot/", "runtime/", "api/context"))], sorted(engine)
    worker = inputs("worker.js", "esm")
    assert {"engine/engine.js", "boot/boot.js"} <= worker
