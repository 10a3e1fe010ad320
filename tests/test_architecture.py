"""The shape of the code: no import cycles, a pure domain, no test doubles in production, one
door for plug-ins, small files.

The imports are read from the source (the AST), not by importing: a module's imports at its top
level (inside ``if``/``try`` too, not inside functions: those run late, on purpose) make the
graph, except those under ``if TYPE_CHECKING:``, which never run. The purity rules read every
import of a module, wherever it is.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "adapters")
MAX_LINES = 600
DOMAIN = "bot.domain"
DOMAIN_MAY_IMPORT = ("matplotlib", "bot.errors")
"""Besides the standard library and itself: the chart figure draws with matplotlib, and every
error derives from the one exception root, which imports nothing of tallybot (checked below)."""
DOUBLES = ("bot.testing", "tests")
DOOR = "bot.platform"
"""All of ``bot`` a plug-in (``adapters/``) may import: the contract and what it re-exports."""


@dataclass(frozen=True)
class Import:
    target: str
    """The module imported (``from a.b import c``: ``a.b.c`` if that is a module, else ``a.b``)."""
    line: int
    top_level: bool
    """Runs when the module is imported (not in a function, not under TYPE_CHECKING)."""


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> Iterator[Import]:
    """What module ``name`` (at ``path``) imports, resolved against the ``known`` modules."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def resolve(node: ast.ImportFrom) -> list[str]:
        base = node.module or ""
        if node.level:
            up = package[: len(package) - (node.level - 1)]
            base = ".".join([*up, base] if base else up)
        return [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names
        ]

    def walk(nodes: list[ast.stmt], top: bool) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(alias.name, node.lineno, top)
            elif isinstance(node, ast.ImportFrom):
                for target in resolve(node):
                    yield Import(target, node.lineno, top)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from walk(node.body, False)
                yield from walk(node.orelse, top)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(node.body, False)  # runs when called, not when imported
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, top)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, None) or []:
                        if isinstance(child, ast.ExceptHandler):
                            yield from walk(child.body, top)
                        elif isinstance(child, ast.stmt):
                            yield from walk([child], top)

    yield from walk(ast.parse(path.read_text(), str(path)).body, True)


def _owner(target: str, known: Mapping[str, Path]) -> str | None:
    """The known module that ``target`` is or lies in (``a.b.X``: ``a.b``)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def graph(known: Mapping[str, Path], *, every: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports when it is imported (``every``: wherever it
    imports them, under TYPE_CHECKING and in functions too)."""
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        found = imports_of(name, path, known)
        targets = {_owner(i.target, known) for i in found if every or i.top_level}
        edges[name] = {t for t in targets if t is not None and t != name}
    return edges


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (``a -> b -> ... -> a``) in each strongly connected component larger than one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return [_a_cycle(component, edges) for component in components]


def _a_cycle(component: set[str], edges: Mapping[str, set[str]]) -> list[str]:
    """A shortest way around from the first module of ``component`` back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        step = []
        for v in frontier:
            for w in sorted(edges[v] & component):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    step.append(w)
        frontier = step
    raise AssertionError(f"{sorted(component)} is not strongly connected")


KNOWN = modules(ROOT)


def test_no_import_cycles() -> None:
    found = cycles(graph(KNOWN))
    assert not found, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_no_import_cycles_even_through_type_checking_or_late_imports() -> None:
    """A cycle that only TYPE_CHECKING or an import inside a function keeps from failing at
    import time still ties two modules into one (before issue 14: chart <-> chart_figure,
    admins <-> commands, app <-> ops.server)."""
    found = cycles(graph(KNOWN, every=True))
    assert not found, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_the_cycle_finder_finds_and_names_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "bot"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("import json\nfrom bot.sub.b import thing\n")
    (pkg / "sub" / "b.py").write_text("from ..c import other\nthing = 1\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bot.d import late\n"
        "def f():\n    from bot.d import late\n"
        "try:\n    from bot.sub import a\nexcept ImportError:\n    pass\n"
        "other = 2\n"
    )
    (pkg / "d.py").write_text("from bot.c import other\n")
    known = modules(tmp_path, ("bot",))
    edges = graph(known)
    assert edges["bot.sub.a"] == {"bot.sub.b"}
    assert edges["bot.c"] == {"bot.sub.a"}  # not bot.d: under TYPE_CHECKING, in a function
    assert edges["bot.sub"] == {"bot.sub.a"}
    assert cycles(edges) == [["bot.c", "bot.sub.a", "bot.sub.b", "bot.c"]]
    assert graph(known, every=True)["bot.c"] == {"bot.sub.a", "bot.d"}
    assert cycles(graph(known, every=True)) == [["bot.c", "bot.d", "bot.c"]]


def _outside(target: str, allowed: tuple[str, ...]) -> bool:
    top = target.partition(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        return False
    return not any(target == a or target.startswith(a + ".") for a in allowed)


def test_the_domain_imports_only_itself_the_stdlib_and_matplotlib() -> None:
    allowed = (DOMAIN, *DOMAIN_MAY_IMPORT)
    wrong = [
        f"{KNOWN[name].relative_to(ROOT)}:{i.line}: {i.target}"
        for name in KNOWN
        if name == DOMAIN or name.startswith(DOMAIN + ".")
        for i in imports_of(name, KNOWN[name], KNOWN)
        if _outside(i.target, allowed)
    ]
    assert not wrong, "bot/domain imports from outside:\n" + "\n".join(wrong)


def test_the_exception_root_imports_nothing_of_ours() -> None:
    ours = [i.target for i in imports_of("bot.errors", KNOWN["bot.errors"], KNOWN)]
    assert [t for t in ours if _outside(t, ())] == []


def test_production_code_imports_no_test_doubles() -> None:
    wrong = [
        f"{KNOWN[name].relative_to(ROOT)}:{i.line}: {i.target}"
        for name in KNOWN
        if not any(name == d or name.startswith(d + ".") for d in DOUBLES)
        for i in imports_of(name, KNOWN[name], KNOWN)
        if any(i.target == d or i.target.startswith(d + ".") for d in DOUBLES)
    ]
    assert not wrong, "production code imports test doubles:\n" + "\n".join(wrong)


def test_adapters_import_only_the_door_of_the_core() -> None:
    """A plug-in reaches the core through ``bot.platform`` alone (issue 29): what it may use is
    what the door re-exports, so the contract is written down in one place."""
    wrong = [
        f"{KNOWN[name].relative_to(ROOT)}:{i.line}: {i.target}"
        for name in KNOWN
        if name.startswith("adapters.")
        for i in imports_of(name, KNOWN[name], KNOWN)
        if _owner(i.target, KNOWN) is not None
        and i.target.partition(".")[0] == "bot"
        and _owner(i.target, KNOWN) != DOOR
    ]
    assert not wrong, "adapters import the core past bot.platform:\n" + "\n".join(wrong)


def test_the_core_imports_no_adapter() -> None:
    """Platforms are found through their plug-ins (entry points), never imported by the core:
    not even the console (the demo and replays reach it through ``Plugin.terminal``)."""
    wrong = [
        f"{KNOWN[name].relative_to(ROOT)}:{i.line}: {i.target}"
        for name in KNOWN
        if name == "bot" or name.startswith("bot.")
        for i in imports_of(name, KNOWN[name], KNOWN)
        if i.target == "adapters" or i.target.startswith("adapters.")
    ]
    assert not wrong, "the core imports adapters:\n" + "\n".join(wrong)


def test_the_product_holds_no_platform_fake() -> None:
    """The loopback fakes of the platforms are test code (``tests/fakes/``): the wheel and the
    image carry ``bot`` and ``adapters`` only, and neither holds a fake."""
    assert [name for name in KNOWN if "fake" in name] == []


@pytest.mark.parametrize("path", sorted(KNOWN.values()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_is_over_600_lines(path: Path) -> None:
    where = str(path.relative_to(ROOT))
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{where}: {lines} lines: does it hold more than one idea?"


def test_the_cores_schema_holds_no_platforms_table() -> None:
    """A plug-in's tables are its own (``Plugin.tables``, issue 29): none is declared in the
    core's schema, and none of the core's tables is named after a platform."""
    from bot.platform import Plugins
    from bot.store.schema import metadata

    plugins = Plugins.installed()
    theirs = {t for tables in plugins.tables().values() for t in tables.metadata.tables}
    assert theirs, "no plug-in declares tables: the check below checks nothing"
    assert sorted(theirs & set(metadata.tables)) == []
    named = [t for t in metadata.tables for p in plugins if t.startswith(f"{p}_")]
    assert named == []


def test_collection_imports_no_aiogram(request: pytest.FixtureRequest) -> None:
    """Collecting the tests imports no aiogram: every pytest-xdist worker collects every test
    module, and aiogram costs each process ~5.5 CPU-s to import. A test module (conftest, rig,
    helper) imports it, or an adapter module that does, inside the function that uses it or under
    ``if TYPE_CHECKING:``; the tests that use it run on one worker (``TELEGRAM_GROUP`` in
    tests/conftest.py)."""
    from tests.conftest import AIOGRAM_AT_COLLECTION

    assert request.config.stash[AIOGRAM_AT_COLLECTION] is False
