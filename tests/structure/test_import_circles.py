"""No import circles, in the Rust crates nor in the Python package (issue 34): no two files
(nor any longer loop) import each other. The graphs and what counts as an import are in
`import_graph`; the self-tests below show on made-up trees that a circle is caught."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tests.structure.import_graph import (
    Graph,
    circles,
    describe,
    module_graph,
    python_graph,
    rust_crates,
    rust_graph,
    unreached_rust_files,
)

REPO = Path(__file__).resolve().parents[2]


@cache
def repo_rust_graph() -> Graph:
    return rust_graph(REPO, rust_crates(REPO))


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def rust_circles(repo: Path) -> list[list[str]]:
    graph = rust_graph(repo, rust_crates(repo))
    return [[Path(f).name for f in c] for c in circles(graph)]


def test_the_checker_finds_a_rust_circle(tmp_path: Path) -> None:
    write(
        tmp_path / "rust/demo/src",
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "use crate::b::Thing;\npub struct Other;\n",
            # Inline, not through `use`: still an import.
            "b.rs": "pub struct Thing;\npub fn f() -> crate::a::Other { todo!() }\n",
        },
    )
    assert rust_circles(tmp_path) == [["a.rs", "b.rs"]]


def test_the_checker_finds_circles_through_super_and_child_modules(tmp_path: Path) -> None:
    write(
        tmp_path / "rust/demo/src",
        {
            "lib.rs": "pub mod net;\npub mod x;\n",
            # A parent naming a child's item, and the child its parent's: a circle.
            "net/mod.rs": "mod conn;\npub use conn::Conn;\npub struct Limits;\n",
            "net/conn.rs": "use super::Limits;\npub struct Conn;\n",
            # A module brought in by `use` and then named inline; a string and a comment
            # naming the other side are not imports.
            "x.rs": (
                "use crate::net;\nfn f() { net::Limits; }\n"
                '// crate::y::Y\nconst S: &str = "crate::y";\n'
            ),
            "y.rs": "",
        },
    )
    assert rust_circles(tmp_path) == [["conn.rs", "mod.rs"]]


def test_the_checker_leaves_out_test_code_and_finds_no_circle_in_a_tree(tmp_path: Path) -> None:
    write(
        tmp_path / "rust/demo/src",
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "use crate::b::Thing;\npub struct Other;\n#[cfg(test)]\nmod tests;\n"
            "#[cfg(test)]\nmod more {\n    use crate::b::Thing;\n}\n",
            # Only a test of a.rs names b.rs's way back: no circle.
            "a/tests.rs": "use crate::b::Thing;\n",
            "b.rs": "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::Other;\n}\n",
        },
    )
    assert rust_circles(tmp_path) == []
    graph = rust_graph(tmp_path, rust_crates(tmp_path))
    assert graph["rust/demo/src/a.rs"] == {"rust/demo/src/b.rs": {"Thing"}}
    assert graph["rust/demo/src/b.rs"] == {}


def test_the_checker_finds_a_python_circle(tmp_path: Path) -> None:
    write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "sub/__init__.py": "",
            "a.py": "from pkg.sub import b\n",
            # Inside a function, relative: still an import.
            "sub/b.py": "def f():\n    from ..a import x\n",
            "c.py": "from pkg import a\n",
        },
    )
    graph = python_graph(tmp_path / "pkg")
    assert circles(graph) == [["pkg.a", "pkg.sub.b"]]
    assert "pkg.a -> pkg.sub.b: b" in describe(graph, circles(graph)[0])
    (tmp_path / "pkg/sub/b.py").write_text("def f():\n    pass\n")
    assert circles(python_graph(tmp_path / "pkg")) == []


def test_every_rust_file_is_seen() -> None:
    assert unreached_rust_files(REPO, rust_crates(REPO)) == []
    graph = repo_rust_graph()
    assert "rust/broker/src/state.rs" in graph
    assert "rust/core/src/records/mod.rs" in graph


def test_no_import_circles_in_rust() -> None:
    graph = repo_rust_graph()
    found = circles(graph)
    assert not found, "import circles in Rust:\n" + "\n".join(describe(graph, c) for c in found)


def test_no_import_circles_in_python() -> None:
    graph = python_graph(REPO / "python" / "kafkalite")
    assert "kafkalite.bench.harness" in graph
    found = circles(graph)
    assert not found, "import circles in Python:\n" + "\n".join(describe(graph, c) for c in found)


# The coordinators (issue 34): the runtime under them knows none of them, and they share it
# instead of copying it. Modules are the broker crate's top-level ones (`groups` is
# groups/**, `state` is state.rs and state/**).
BROKER = "rust/broker/src/"
COORDINATORS = ("groups", "transactions")


def broker_modules() -> Graph:
    graph = repo_rust_graph()
    module_of = {
        f: f.removeprefix(BROKER).split("/")[0].removesuffix(".rs")
        for f in graph
        if f.startswith(BROKER)
    }
    return module_graph(graph, module_of)


def reachable(graph: Graph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), {}):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_coordinator_runtime_reaches_no_coordinator_nor_the_broker() -> None:
    modules = broker_modules()
    assert "coordinator" in modules
    reached = reachable(modules, "coordinator")
    own = sorted(a for arrows in modules["coordinator"].values() for a in arrows)
    for above in (*COORDINATORS, "state", "handlers"):
        assert above not in reached, (
            f"coordinator reaches {above} through {sorted(reached)}; its imports: {own}"
        )


def test_the_coordinators_share_the_runtime_and_do_not_import_each_other_both_ways() -> None:
    modules = broker_modules()
    for coordinator in COORDINATORS:
        assert "coordinator" in modules[coordinator], f"{coordinator} does not use the runtime"
    among = ("coordinator", *COORDINATORS)
    sub = {m: {d: n for d, n in modules[m].items() if d in among} for m in among}
    found = circles(sub)
    assert not found, "module circles:\n" + "\n".join(describe(sub, c) for c in found)
