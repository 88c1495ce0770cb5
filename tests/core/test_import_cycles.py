"""No import cycles in the repository's Python: the import graph of every package at its top (py_core, web,
bench) and of the tests' helper modules, read with ast, has no strongly connected component larger than one
module.  The layers point one way: the dev server (web) never imports the bench, which builds on it.

Every import counts, the ones deferred into a function body too: a deferred import hides a cycle from the
interpreter, it does not remove it.  Only imports under `if TYPE_CHECKING:` are left out, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# every folder at the top of the repository that is a Python package
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `package` (a package is its __init__.py)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def helper_modules() -> dict[str, Path]:
    """The tests' helper modules (not test files, not conftest.py) by the name the tests import them under:
    pytest puts each test folder, and tests/ itself (pythonpath), on sys.path."""
    tests = ROOT / "tests"
    return {p.stem: p for p in sorted(tests.glob("*.py")) + sorted(tests.glob("*/*.py"))
            if not p.name.startswith(("test_", "conftest"))}


def repository_modules() -> dict[str, Path]:
    """Every module of the repository's packages and the tests' helpers."""
    found = helper_modules()
    for package in PACKAGES:
        found.update(modules(ROOT / package))
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under node, at any depth, except those under `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _imports(child)


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `mods` it imports (`from a import b` names a.b when that is a module)."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: climb level - 1 packages up from this module's package
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            edges |= {t for t in targets if t in mods and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_py_core_has_no_import_cycle() -> None:
    graph = import_graph(modules(ROOT / "py_core"))
    assert len(graph) > 50  # the walk found the package
    assert "py_core.loaders.tflite_ops" in graph["py_core.loaders.tflite"]
    assert cycles(graph) == []


def test_the_repository_has_no_import_cycle() -> None:
    graph = import_graph(repository_modules())
    assert {"py_core", "web", "bench"} <= set(PACKAGES)
    assert {"bench.cases.select", "bench.report.perf", "web.app", "pages", "scriptfiles"} <= set(graph)
    assert "bench.cases.models" in graph["bench.cases.select"]  # imports across a package's modules are seen
    assert cycles(graph) == []


def test_the_dev_server_does_not_import_the_bench() -> None:
    graph = import_graph(repository_modules())
    assert "web.app" in graph["bench.pages"]  # the bench builds on the dev server
    assert {(m, t) for m, ts in graph.items() if m.startswith("web") for t in ts if t.startswith("bench")} == set()


def test_a_deferred_import_cycle_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from . import c\n")
    (pkg / "sub" / "c.py").write_text("def f():\n    from pkg import a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (pkg / "e.py").write_text("import pkg.d\n")
    graph = import_graph(modules(pkg))
    assert graph["pkg.d"] == set() and graph["pkg.e"] == {"pkg.d"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]
