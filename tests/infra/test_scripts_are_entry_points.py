"""scripts/ holds entry points only (setup, build, data generation, long runs): every file there is run as a
command by the Makefile or a doc, or by a test that tests it as a script; and no library module (py_core, web,
bench) imports a script or loads one by path: library code lives in its package, the script calls it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
LIBRARY = [ROOT / p for p in ("py_core", "web", "bench")]
# ways a module is loaded from a file path instead of imported from its package
PATH_LOADERS = {"spec_from_file_location", "SourceFileLoader", "run_path", "load_script"}


def _commands() -> str:
    """The Makefile and the docs: where a script is named as a command."""
    docs = [ROOT / "Makefile", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in docs if p.is_file())


def _tests() -> str:
    files = [p for p in (ROOT / "tests").rglob("*") if p.suffix in (".py", ".mjs", ".js") and p.is_file()]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def unused_scripts(commands: str, tests: str) -> list[str]:
    """The files of scripts/ that neither a command line of `commands` runs nor `tests` use."""
    out = []
    for path in sorted(p for p in SCRIPTS.iterdir() if p.is_file()):
        name = re.escape(path.name)
        run = re.search(rf"(python3?|node|bash|\$\(PY\)|GEN_SCRIPT :=)[^\n`]*scripts/{name}", commands)
        tested = re.search(rf"scripts/{name}|load_script\(\"{re.escape(path.stem)}\"", tests)
        if not (run or tested):
            out.append(path.name)
    return out


def path_loads(package: Path, root: Path = ROOT) -> list[str]:
    """`module: what` for every import of a script and every load of a module by file path under `package`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "scripts":
                found.append(f"{where}: from {node.module} import")
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "scripts" for a in node.names):
                found.append(f"{where}: import scripts")
            elif isinstance(node, (ast.Name, ast.Attribute)) and getattr(node, "attr", getattr(node, "id", "")) in \
                    PATH_LOADERS:
                found.append(f"{where}: {getattr(node, 'attr', getattr(node, 'id', ''))}")
    return found


def test_every_script_is_an_entry_point_something_runs() -> None:
    assert len(list(SCRIPTS.iterdir())) > 10  # the folder was found
    assert unused_scripts(_commands(), _tests()) == []


def test_a_script_nothing_runs_is_found() -> None:
    assert unused_scripts("", "") != []
    commands = "\n".join(f"node scripts/{p.name}" for p in SCRIPTS.iterdir())
    assert unused_scripts(commands, "") == []


def test_no_library_module_loads_a_script() -> None:
    assert {p.name for p in LIBRARY} == {"py_core", "web", "bench"} and all(p.is_dir() for p in LIBRARY)
    assert [f for package in LIBRARY for f in path_loads(package)] == []


def test_a_library_module_loading_a_script_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("import importlib.util\nspec = importlib.util.spec_from_file_location('x', 'y')\n")
    (package / "b.py").write_text("def f():\n    from scripts.make_dist import main\n")
    assert path_loads(package, tmp_path) == ["pkg/a.py: spec_from_file_location",
                                             "pkg/b.py: from scripts.make_dist import"]


def test_make_samples_runs_as_a_script(tmp_path: Path) -> None:
    """The thin entry point calls web.samples from any current directory."""
    pytest.importorskip("skimage")
    out = subprocess.run([sys.executable, str(ROOT / "scripts/make_samples.py"), "--out", str(tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["astronaut.png", "cameraman.png"]
