"""File-level import graphs of the project's Rust crates and Python package, and the circles
in them.

Rust: each crate's module tree is walked from its roots (`lib.rs`, `main.rs`, `bin/*.rs`)
through its `mod x;` declarations (`#[path]` too); an edge `a.rs -> b.rs` is a `use crate::…`,
`use super::…`, `use self::…` (or a path through a child module or a module imported by
`use`), or such a path written inline in code, resolved to the file that defines the longest
matching module path (`crate::a::B` is `a.rs` or `a/mod.rs`). A parent declaring `mod child;`
is not an import; a child naming its parent's items is. Test code is left out: items under
`#[cfg(test)]` (so the files only they declare), `tests.rs`, `*_tests.rs` and `tests/`.

Python: `import kafkalite.x`, `from kafkalite.x import y` and relative imports, inside
functions too (they hide a circle, not remove it); `from pkg import sub` counts as importing
`pkg.sub`, not `pkg`.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# An edge's names: (source, target) -> the names the source takes from the target.
Graph = dict[str, dict[str, set[str]]]


# ---------------------------------------------------------------------------------------------
# Rust
# ---------------------------------------------------------------------------------------------


_LEXEME = re.compile(
    r"(?P<line>//[^\n]*)"
    r"|(?P<block>/\*)"
    r"|(?<![\w])b?r(?P<hashes>#*)\"(?P<raw>[\s\S]*?)\"(?P=hashes)"
    r"|b?\"(?P<str>(?:\\[\s\S]|[^\"\\])*)\""
    r"|b?'(?P<chr>\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'"
)


def strip_rust(text: str) -> str:
    """`text` with comments and the insides of string and char literals blanked (same length,
    same line breaks), so a path in a doc comment or a string is not taken for code. A
    lifetime (`'a`) is left alone: only a quote closed one char later is a char literal."""
    out = list(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    pos = 0
    while m := _LEXEME.search(text, pos):
        if m.group("block") is not None:
            depth, j = 1, m.end()
            while j < len(text) and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(m.start(), j)
            pos = j
            continue
        kind = next(k for k in ("line", "raw", "str", "chr") if m.group(k) is not None)
        blank(*m.span(kind))
        pos = m.end()
    return "".join(out)


def _matching(text: str, open_at: int) -> int:
    """Index just past the bracket that closes the one at `open_at` (text already stripped)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[text[open_at]]]
    j = open_at + 1
    while j < len(text) and stack:
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        j += 1
    return j


def _item_end(text: str, start: int) -> int:
    """Index just past the item starting at `start`: its `;` or its `{...}` block."""
    j = start
    while j < len(text):
        c = text[j]
        if c in "([":
            j = _matching(text, j)
            continue
        if c == ";":
            return j + 1
        if c == "{":
            return _matching(text, j)
        j += 1
    return j


_CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
_ATTR = re.compile(r"\s*#\s*\[")


def strip_test_items(code: str) -> str:
    """Blank every item under `#[cfg(test)]` (a test module, its `mod x;`, a helper)."""
    out = list(code)
    pos = 0
    while m := _CFG_TEST.search(code, pos):
        j = m.end()
        while a := _ATTR.match(code, j):  # further attributes of the same item
            j = _matching(code, a.end() - 1)
        end = _item_end(code, j)
        for k in range(m.start(), end):
            if out[k] != "\n":
                out[k] = " "
        pos = end
    return "".join(out)


@dataclass
class RustFile:
    path: Path
    module: tuple[str, ...]
    code: str  # stripped of comments, literals and test items
    # Inline modules: (start, end, module path) of each `mod x { ... }` body.
    inline: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)

    def scope(self, at: int) -> tuple[str, ...]:
        """The module path in force at offset `at` (the innermost inline module around it)."""
        best = self.module
        for start, end, module in self.inline:
            if start <= at < end and len(module) > len(best):
                best = module
        return best


_MOD = re.compile(
    r"(?:#\s*\[\s*path\s*=\s*\"(?P<path>[^\"]*)\"\s*\]\s*)?"
    r"(?:\bpub\s*(?:\([^)]*\))?\s*)?\bmod\s+(?P<name>\w+)\s*(?P<kind>[;{])"
)


def is_test_file(path: Path) -> bool:
    return path.name == "tests.rs" or path.name.endswith("_tests.rs") or "tests" in path.parts


@dataclass
class RustCrate:
    name: str
    files: dict[Path, RustFile]
    modules: dict[tuple[str, ...], Path]  # module path -> the file defining it


def load_crate(name: str, root: Path, src: Path) -> RustCrate:
    """The module tree reachable from one crate root file (`src`: the crate's src folder)."""
    files: dict[Path, RustFile] = {}
    modules: dict[tuple[str, ...], Path] = {}
    pending = [(root, ())]
    while pending:
        path, module = pending.pop()
        raw = path.read_text()
        code = strip_test_items(strip_rust(raw))
        rf = RustFile(path, module, code)
        files[path] = rf
        modules[module] = path
        own_dir = (
            path.parent
            if path.name in ("lib.rs", "main.rs", "mod.rs") or path == root
            else (path.parent / path.stem)
        )
        decls = list(_MOD.finditer(code))
        # Inline modules first (in order, so an outer one is known before those inside it),
        # so scope() knows them when a declaration sits inside one.
        resolved: list[tuple[int, int, tuple[str, ...]]] = []
        for m in decls:
            if m.group("kind") != "{":
                continue
            body = m.end() - 1
            end = _matching(code, body)
            outer = module
            for start, stop, mod in resolved:
                if start <= body < stop and len(mod) > len(outer):
                    outer = mod
            resolved.append((body, end, (*outer, m.group("name"))))
            modules[(*outer, m.group("name"))] = path
        rf.inline = resolved
        for m in decls:
            if m.group("kind") != ";":
                continue
            scope = rf.scope(m.start())
            child = (*scope, m.group("name"))
            sub_dir = own_dir.joinpath(*scope[len(module) :])
            if m.group("path"):
                # The path attribute's text, read from the raw file (literals are blanked).
                literal = re.search(r"\"([^\"]*)\"", raw[m.start() : m.end()])
                assert literal is not None
                candidates = [path.parent / literal.group(1)]
            else:
                candidates = [sub_dir / f"{child[-1]}.rs", sub_dir / child[-1] / "mod.rs"]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise FileNotFoundError(f"{path}: `mod {child[-1]};` has no file {candidates}")
            if not is_test_file(found.relative_to(src)):
                pending.append((found, child))
    return RustCrate(name, files, modules)


def crate_roots(crate_dir: Path) -> list[tuple[str, Path]]:
    src = crate_dir / "src"
    roots = [(crate_dir.name, p) for p in (src / "lib.rs", src / "main.rs") if p.is_file()]
    for p in sorted((src / "bin").glob("*.rs")) if (src / "bin").is_dir() else []:
        roots.append((f"{crate_dir.name}/bin/{p.stem}", p))
    return roots


_USE = re.compile(r"\buse\s+([^;]*);")
_VIS_IN = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
_PATH = re.compile(r"(?<![\w$:.#])((?:[A-Za-z_]\w*)(?:\s*::\s*(?:[A-Za-z_]\w*))+)")


def _use_leaves(tree: str) -> list[tuple[list[str], str | None]]:
    """The leaves of a use tree: `a::{b, c::D as E, self}` -> ([a,b],None), ([a,c,D],E), ([a],None).
    A glob leaf ends in "*"."""
    tree = re.sub(r"\s+", " ", tree).strip()
    leaves: list[tuple[list[str], str | None]] = []

    def walk(text: str, prefix: list[str]) -> None:
        text = text.strip()
        if not text:
            return
        brace = text.find("{")
        if brace >= 0 and text.endswith("}"):
            head = [s.strip() for s in text[:brace].split("::") if s.strip()]
            inner = text[brace + 1 : -1]
            depth, start = 0, 0
            for k, c in enumerate(inner + ","):
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                elif c == "," and depth == 0:
                    walk(inner[start:k], [*prefix, *head])
                    start = k + 1
            return
        alias = None
        if " as " in text:
            text, alias = (s.strip() for s in text.split(" as ", 1))
        segs = [s.strip() for s in text.split("::") if s.strip()]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        leaves.append(([*prefix, *segs], alias))

    walk(tree, [])
    return leaves


@dataclass
class _Resolver:
    crate: RustCrate
    rf: RustFile
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # `use`d module names

    def absolute(self, segs: list[str], scope: tuple[str, ...]) -> tuple[str, ...] | None:
        """The crate-absolute path a path written in `scope` names, or None (another crate)."""
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            return tuple(segs[1:])
        if head in ("self", "super"):
            base = list(scope)
            rest = segs
            if rest[0] == "self":
                rest = rest[1:]
            while rest and rest[0] == "super":
                if not base:
                    return None
                base.pop()
                rest = rest[1:]
            return (*base, *rest)
        if (*scope, head) in self.crate.modules:
            return (*scope, *segs)
        if head in self.aliases:
            return (*self.aliases[head], *segs[1:])
        return None

    def target(self, path: tuple[str, ...]) -> tuple[Path, str]:
        """The file defining the longest module prefix of `path`, and the name taken from it."""
        for k in range(len(path), -1, -1):
            if path[:k] in self.crate.modules:
                rest = path[k:]
                name = "::".join(rest) if rest else "::".join(path) or "crate"
                return self.crate.modules[path[:k]], name
        raise AssertionError("the crate root is always a module")


def _file_edges(crate: RustCrate, rf: RustFile, rel: Path) -> dict[str, set[str]]:
    """The files one file imports (relative to `rel`), each with the names it takes."""
    edges: dict[str, set[str]] = defaultdict(set)
    res = _Resolver(crate, rf)
    code = _VIS_IN.sub(lambda m: " " * len(m.group()), rf.code)
    uses = list(_USE.finditer(code))

    def add(path: tuple[str, ...] | None) -> None:
        if path is None:
            return
        dst, name = res.target(path)
        if dst != rf.path:
            edges[str(dst.relative_to(rel))].add(name)

    # Module names brought in by `use` first (a later path may go through them).
    for m in uses:
        scope = rf.scope(m.start())
        for segs, alias in _use_leaves(m.group(1)):
            if segs and segs[-1] != "*":
                path = res.absolute(segs, scope)
                if path and path in crate.modules:
                    res.aliases[alias or path[-1]] = path
    for m in uses:
        scope = rf.scope(m.start())
        for segs, _alias in _use_leaves(m.group(1)):
            glob = bool(segs) and segs[-1] == "*"
            add(res.absolute(segs[:-1] if glob else segs, scope))
    body = _USE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), code)
    for m in _PATH.finditer(body):
        segs = [s.strip() for s in m.group(1).split("::")]
        # `Self::X`, `u32::MAX`, `std::...`: absolute() returns None for those.
        add(res.absolute(segs, rf.scope(m.start())))
    return edges


def rust_edges(crate: RustCrate, rel: Path) -> Graph:
    """File -> file -> names for one crate (paths relative to `rel`)."""
    return {
        str(rf.path.relative_to(rel)): dict(_file_edges(crate, rf, rel))
        for rf in crate.files.values()
    }


def rust_crates(repo: Path) -> list[RustCrate]:
    """Every crate under `repo/rust/*/src`: the library, a `main.rs` and each `bin/*.rs`."""
    return [
        load_crate(name, root, crate_dir / "src")
        for crate_dir in sorted(p.parent for p in (repo / "rust").glob("*/src"))
        for name, root in crate_roots(crate_dir)
    ]


def rust_graph(repo: Path, crates: list[RustCrate]) -> Graph:
    """The file-level import graph of `crates` (file names relative to `repo`)."""
    graph: Graph = {}
    for crate in crates:
        for src, edges in rust_edges(crate, repo).items():
            graph.setdefault(src, {}).update(edges)
    return graph


def unreached_rust_files(repo: Path, crates: list[RustCrate]) -> list[str]:
    """Non-test .rs files under rust/*/src that no crate's module tree reaches (the checker
    would not see their imports): a file only `#[cfg(test)]` declares is test code."""
    reached = {p.resolve() for crate in crates for p in crate.files}
    test_declared: set[Path] = set()
    for path in reached:
        raw = path.read_text()
        code = strip_rust(raw)
        for m in _CFG_TEST.finditer(code):
            end = _item_end(code, m.end())
            for lit in re.finditer(r"#\s*\[\s*path\s*=\s*\"([^\"]*)\"", raw[m.end() : end]):
                test_declared.add((path.parent / lit.group(1)).resolve())
            for decl in re.finditer(r"\bmod\s+(\w+)\s*;", code[m.end() : end]):
                own = (
                    path.parent
                    if path.name in ("lib.rs", "main.rs", "mod.rs")
                    else (path.parent / path.stem)
                )
                test_declared.add((own / f"{decl.group(1)}.rs").resolve())
                test_declared.add((own / decl.group(1) / "mod.rs").resolve())
    out = []
    for p in sorted((repo / "rust").glob("*/src/**/*.rs")):
        if p.resolve() in reached or p.resolve() in test_declared:
            continue
        if not is_test_file(p.relative_to(repo)):
            out.append(str(p.relative_to(repo)))
    return out


# ---------------------------------------------------------------------------------------------
# Python
# ---------------------------------------------------------------------------------------------


def python_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py and .pyi (the extension's stub) under root."""
    out = {}
    for path in [*root.rglob("*.py"), *root.rglob("*.pyi")]:
        if "tests" in path.relative_to(root).parts:
            continue
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def python_imports(name: str, path: Path, modules: dict[str, Path]) -> dict[str, set[str]]:
    """The package's modules that `name` imports, each with the names it takes."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.name].add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:
                    found[sub].add(a.name)
                else:
                    found[base].add(a.name)
    return {m: names for m, names in found.items() if m in modules and m != name}


def python_graph(root: Path) -> Graph:
    modules = python_modules(root)
    return {m: python_imports(m, p, modules) for m, p in modules.items()}


# ---------------------------------------------------------------------------------------------
# Circles
# ---------------------------------------------------------------------------------------------


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative), sorted."""
    nodes = set(graph) | {d for edges in graph.values() for d in edges}
    succ = {n: sorted(graph.get(n, {})) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(nodes):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(succ[start]))]
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ[nxt])))
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
    return sorted(found)


def describe(graph: Graph, circle: list[str]) -> str:
    """The arrows that tie one circle: `a -> b: names` for each edge inside it."""
    members = set(circle)
    lines = [f"circle of {len(circle)}:"]
    for src in circle:
        for dst in sorted(graph.get(src, {})):
            if dst in members:
                names = ", ".join(sorted(graph[src][dst]))
                lines.append(f"  {src} -> {dst}: {names}")
    return "\n".join(lines)


def module_graph(graph: Graph, module_of: dict[str, str]) -> Graph:
    """`graph` lifted to modules: an edge between two files of different modules (as
    `module_of` names them; files it leaves out are dropped) becomes one between the modules."""
    out: Graph = {}
    for src, edges in graph.items():
        a = module_of.get(src)
        if a is None:
            continue
        out.setdefault(a, {})
        for dst, names in edges.items():
            b = module_of.get(dst)
            if b is not None and b != a:
                out[a].setdefault(b, set()).update(f"{src} -> {dst}: {n}" for n in names)
    return out
