"""The architecture of docs/architecture.md, enforced: who may import whom, and one token client.

Both rules are searches over the source tree (Python's own parser, no import of the packages),
so a shortcut that breaks them fails here with the file and line, whatever else still works.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("paysuite_core", "stub_server", "conformance", "load", "proxy", "paysuite", "benchmarks")

#: Which top-level packages each part may import (besides itself and third-party libraries).
#: paysuite_core is the base and imports no part; the stub, the suite and the load side stand on
#: it and never on each other (they meet only over HTTP); ``paysuite`` is the command and may
#: import every part. ``benchmarks`` (the checkout's, not installed) measures the product and may
#: import all of it; no part of the product imports it.
ALLOWED_IMPORTS: dict[str, frozenset[str]] = {
    "paysuite_core": frozenset(),
    "stub_server": frozenset({"paysuite_core"}),
    "conformance": frozenset({"paysuite_core"}),
    "load": frozenset({"paysuite_core"}),
    "proxy": frozenset({"paysuite_core", "conformance"}),
    "paysuite": frozenset({"paysuite_core", "stub_server", "conformance", "load", "proxy"}),
    "benchmarks": frozenset({"paysuite_core", "stub_server", "conformance", "load", "proxy"}),
}

#: The one module that performs authorize and refresh.
TOKEN_MODULE = ROOT / "paysuite_core" / "tokens.py"
#: The token endpoints' paths, as a client would write them.
TOKEN_PATH = re.compile(r"/auth/(agents/authorize|agents/refresh/|refresh/)")
#: Files that may name those paths, and why: they serve the API rather than call it, or (the
#: spec's own test) check that the OpenAPI document describes them.
NOT_CLIENTS = ("stub_server/", "tests/foreign/", "tests/hostile.py", "tests/test_spec.py")


def python_files(*roots: str) -> Iterator[Path]:
    for root in roots:
        base = ROOT / root
        if base.is_file():
            yield base
            continue
        for path in sorted(base.rglob("*.py")):
            if ".venv" not in path.parts and "build" not in path.parts:
                yield path


def imported_parts(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            if top in PARTS:
                yield node.lineno, top


@pytest.mark.parametrize("part", PARTS)
def test_each_part_imports_only_what_it_stands_on(part: str) -> None:
    allowed = ALLOWED_IMPORTS[part] | {part}
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {top}"
        for path in python_files(part)
        for line, top in imported_parts(path)
        if top not in allowed
    ]
    assert not wrong, f"{part} may import only {sorted(allowed)}:\n" + "\n".join(wrong)


def test_only_the_stub_opens_its_database() -> None:
    """The stub's SQLite tables are its own: every other part, the benchmarks included, reaches
    them through HTTP or ``stub_server.store``'s functions, never with ``sqlite3`` (a dependency
    on the tables that the import rule above could not see)."""
    offenders = []
    for path in python_files(*(part for part in PARTS if part != "stub_server")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if "sqlite3" in names:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "sqlite3 outside stub_server:\n" + "\n".join(offenders)


def token_path_literals(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if TOKEN_PATH.search(node.value) and "{base_url}" not in node.value:
                yield node.lineno, node.value


def test_one_module_performs_authorize_and_refresh() -> None:
    """Nothing but ``paysuite_core/tokens.py`` writes the token endpoints' paths (quotes of the
    document, which name ``{base_url}``, are text, not requests), so every authorize and refresh
    of the project, the tests' included, goes through it."""
    offenders = []
    for path in python_files(*PARTS, "tests"):
        relative = path.relative_to(ROOT).as_posix()
        if path == TOKEN_MODULE or relative.startswith(NOT_CLIENTS):
            continue
        offenders += [f"{relative}:{line}: {text!r}" for line, text in token_path_literals(path)]
    assert not offenders, (
        "authorize/refresh outside paysuite_core/tokens.py (use TokenFlow, tokens.authorize, "
        "tokens.refresh, or AUTHORIZE_PATH/REFRESH_PATHS):\n" + "\n".join(offenders)
    )


def test_the_token_module_is_where_the_paths_live() -> None:
    literals = [text for _line, text in token_path_literals(TOKEN_MODULE)]
    assert any("authorize" in text for text in literals)
    assert any("refresh" in text for text in literals)


def test_the_rule_table_names_files_that_exist() -> None:
    """docs/architecture.md's rule table stays true as files move: each stub file it names is in
    ``stub_server/`` and each suite file in ``conformance/suite/``."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("## Where each rule of the document lives", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and ".py" in line]
    assert len(rows) >= 15
    missing = []
    for row in rows:
        _rule, stub_cell, suite_cell = (cell.strip() for cell in row.strip("|").split("|")[:3])
        for name in re.findall(r"`([\w/]+\.py)`", stub_cell):
            if not (ROOT / "stub_server" / name).is_file():
                missing.append(f"stub_server/{name}")
        for name in re.findall(r"`([\w/]+\.py)`", suite_cell):
            if not (ROOT / "conformance" / "suite" / name).is_file() and name != "catalog.py":
                missing.append(f"conformance/suite/{name}")
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """The product modules ``path`` imports when it runs: function-level imports count (they are
    how a cycle hides), imports under ``if TYPE_CHECKING:`` do not (they never run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
        for statement in branch.body
        for node in ast.walk(statement)
    }
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return (found & modules) - {own}


def test_no_module_imports_itself_back() -> None:
    """No import circle between modules: a circle hidden inside a function still runs, and a
    reader can no longer say which module stands on which."""
    paths = {module_name(path): path for path in python_files(*PARTS)}
    graph = {name: runtime_imports(path, set(paths)) for name, path in paths.items()}
    circles: list[str] = []
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            name, trail = stack.pop()
            for imported in sorted(graph[name]):
                if imported == start:
                    circles.append(" -> ".join([*trail, start]))
                elif imported not in seen and imported > start:
                    seen.add(imported)
                    stack.append((imported, [*trail, imported]))
    assert not circles, "import circles:\n" + "\n".join(circles)
