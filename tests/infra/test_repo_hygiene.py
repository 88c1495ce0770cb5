"""The repository describes itself as it is: the README stays an entry point, every repository path the README and
docs/ name exists (its tree included), and no tracked file speaks of development sessions or issue lines
(history is the git log)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 260
DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
# Paths a doc may name that the build makes rather than git holds (all git-ignored).
GENERATED = ("build/", "dist/", "polyfill/dist/", "polyfill/src/generated/", "reports/", "test-results/",
             "py_core/kernels/native/_webnn_kernels.", "node_modules/", ".venv/")
TOP_FILES = {"Makefile", "PYODIDE_VERSION", "README.md", "pyproject.toml", "package.json", "package-lock.json"}


@cache
def tracked() -> frozenset[str]:
    """Every tracked file and every folder above one (folders end with a slash)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [f for f in out.decode().split("\0") if f]
    folders = {"/".join(f.split("/")[:i]) + "/" for f in files for i in range(1, f.count("/") + 1)}
    return frozenset(files) | frozenset(folders)


@cache
def top_folders() -> frozenset[str]:
    return frozenset(p for p in tracked() if p.endswith("/") and p.count("/") == 1)


def exists(path: str) -> bool:
    """A tracked file or folder (a glob when the path has placeholders such as <hash> or *), or a generated one."""
    if path.startswith(GENERATED):
        return True
    pattern = re.sub(r"<[^>]*>", "*", path)
    if "*" in pattern:
        return any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, pattern + "/") for p in tracked())
    return path in tracked() or path.rstrip("/") + "/" in tracked()


def repo_paths(span: str) -> list[str]:
    """The words of a backticked span that name a repository path: under a tracked top folder, or a top file."""
    found = []
    for word in span.split():
        word = word.strip("'\",;()[]").split(":")[0].split("#")[0]
        if word in TOP_FILES or (("/" in word) and word.split("/")[0] + "/" in top_folders() | {"build/", "dist/"}):
            found.append(word)
    return found


def _doc_text(doc: str) -> str:
    return (ROOT / doc).read_text()


def _layout_tree(text: str) -> list[tuple[int, str]]:
    """The README's Layout block: (indent, name) per entry line."""
    block = re.search(r"^## Layout\n+```\n(.*?)^```", text, re.S | re.M)
    assert block, "README.md has no '## Layout' section with a tree"
    entries = []
    for line in block.group(1).splitlines():
        m = re.match(r"( *)(\S+)", line)
        if m and (m.group(2).endswith("/") or "." in m.group(2)) and not line[len(m.group(1)):].startswith("("):
            entries.append((len(m.group(1)), m.group(2)))
    return entries


def test_readme_is_an_entry_point() -> None:
    lines = _doc_text("README.md").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move reference text into docs/"


@pytest.mark.parametrize("doc", DOCS)
def test_paths_named_in_docs_exist(doc: str) -> None:
    """Backticked repository paths and relative links resolve to tracked files (or a listed generated path)."""
    text = _doc_text(doc)
    missing = [p for span in re.findall(r"`([^`\n]+)`", text) for p in repo_paths(span) if not exists(p)]
    base = Path(doc).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (base / target.split("#")[0]).as_posix()
        path = str(Path(path)) if not path.startswith("..") else path
        if not exists(path):
            missing.append(path)
    assert not missing, f"{doc} names paths that do not exist: {sorted(set(missing))}"


def test_readme_tree_is_the_repository() -> None:
    """Every entry of the Layout tree exists, every tracked top folder is in it, and a folder listed with children
    lists every tracked subfolder."""
    entries = _layout_tree(_doc_text("README.md"))
    parent, missing, children = "", [], {}
    for indent, name in entries:
        path = name if indent == 0 else parent + name
        if indent == 0:
            parent = name if name.endswith("/") else ""
            children.setdefault(name, set())
        else:
            children.setdefault(parent, set()).add(name)
        if not exists(path):
            missing.append(path)
    assert not missing, f"the README tree names paths that do not exist: {missing}"
    top = {name for indent, name in entries if indent == 0}
    covered = {name.split("/")[0] + "/" for name in top}
    absent = sorted(f for f in top_folders() if not f.startswith(".") and f not in covered)
    assert not absent, f"tracked folders missing from the README tree: {absent}"
    for folder, listed in children.items():
        if not listed:
            continue
        subfolders = {p[len(folder):] for p in tracked()
                      if p.startswith(folder) and p.endswith("/") and p[len(folder):].count("/") == 1}
        unlisted = sorted(s for s in subfolders if s not in listed and folder + s not in top)
        assert not unlisted, f"the README tree lists {folder} without its folders {unlisted}"


# Development history in the tree: session numbers, issue lines, diary wording.  History is the git log.
HISTORY = re.compile(
    r"session [0-9]|#[0-9]+ line|issue #[0-9]|\bissue [0-9]+\b|\(#1[0-9]\b|\bsessions? [0-9]+\b|"
    r"\bwe tried\b|\bpreviously\b|\buntil session\b|\bthis session\b|\bwas measured in\b|"
    r"\bbefore this (session|branch|change)\b|\bthis branch\b|\btried and reverted\b|\bas before\b",
    re.IGNORECASE,
)
# Files that must quote such text: this test of the patterns, and vendored third-party text (the draft, WPT data).
EXEMPT = ("tests/infra/test_repo_hygiene.py", "tests/data/")
BINARY = (".png", ".jpg", ".bin", ".whl", ".wasm", ".tflite", ".onnx", ".zip", ".gz", ".br", ".ico", ".y4m")


def _text_files() -> list[str]:
    return sorted(f for f in tracked() if not f.endswith("/") and not f.startswith(EXEMPT)
                  and not f.endswith(BINARY))


def test_no_history_wording() -> None:
    found = []
    for name in _text_files():
        try:
            text = (ROOT / name).read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, f"{len(found)} lines speak of development history:\n" + "\n".join(found)


def test_the_history_pattern_matches_what_it_must() -> None:
    for line in ("measured in session 10", "(#16 line 2)", "see issue #13", "as issue 14 found it",
                 "we tried a pool", "previously copied", "the plan (#3 line 2)", "tried and reverted",
                 "slower than before this change", "it starts CPython, as before"):
        assert HISTORY.search(line), line
    for line in ("pytest's session fixture", "a session of onnxruntime-web", "the #1 operator", "(#910)",
                 "after the first round"):
        assert not HISTORY.search(line), line
