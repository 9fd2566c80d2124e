"""No import circles in the kafkalite package: no two modules (nor any longer loop) import
each other, counting imports inside functions too (they hide a circle, not remove it)."""

from __future__ import annotations

import ast
from pathlib import Path

import kafkalite

PACKAGE = Path(kafkalite.__file__).resolve().parent


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py and .pyi (the extension's stub) under root."""
    out = {}
    for path in [*root.rglob("*.py"), *root.rglob("*.pyi")]:
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports. `from pkg import sub` counts as importing
    `pkg.sub`, not `pkg` (that is how a submodule is imported, not a loop through pkg)."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            subs = [f"{base}.{a.name}" for a in node.names]
            found.update(s for s in subs if s in modules)
            if not all(s in modules for s in subs):
                found.add(base)
    return {m for m in found if m in modules and m != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
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


def test_the_checker_finds_a_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import x\n")
    (pkg / "c.py").write_text("from pkg import a\n")
    modules = module_files(pkg)
    graph = {m: imported_modules(m, p, modules) for m, p in modules.items()}
    assert circles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_no_import_circles_in_kafkalite() -> None:
    modules = module_files(PACKAGE)
    assert "kafkalite.bench.harness" in modules
    graph = {m: imported_modules(m, p, modules) for m, p in modules.items()}
    assert circles(graph) == []
