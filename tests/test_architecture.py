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


# --- one client factory ----------------------------------------------------------------------
#: The one module that builds HTTP clients (``paysuite_core/http_clients.py``): every client of
#: every command carries the run's TLS settings, because none can be made anywhere else.
FACTORY_MODULE = ROOT / "paysuite_core" / "http_clients.py"
#: The six packages (the checkout's benchmarks measure the stacks and are not a command).
PRODUCT = tuple(part for part in PARTS if part != "benchmarks")
_VERBS = ("get", "post", "put", "patch", "delete", "head", "options", "request", "stream")
#: What builds a client, or sends without one, by its qualified name.
CLIENT_CONSTRUCTORS = frozenset(
    {"httpx.Client", "httpx.AsyncClient", *(f"httpx.{verb}" for verb in _VERBS)}
    | {"requests.Session", "requests.session", *(f"requests.{verb}" for verb in _VERBS)}
    | {"aiohttp.ClientSession", "aiohttp.TCPConnector", "aiohttp.request"}
    | {
        f"{module}.HTTPClient{suffix}"
        for module in ("geventhttpclient", "geventhttpclient.client")
        for suffix in ("", ".from_url")
    }
)
#: Files another change moves onto the factory, allowed until it lands (none left: conform's
#: property phase took its token client and 429 resender from it). An entry whose file builds
#: no client any more fails below, so the exception goes when its reason does.
AWAITING_THE_FACTORY: set[str] = set()


def client_constructions(source: str, filename: str = "<sample>") -> list[tuple[int, str]]:
    """Where ``source`` builds an HTTP client (line, qualified name), aliases resolved:
    ``import httpx as h; h.Client()``, ``from requests import Session; Session()``..."""
    tree = ast.parse(source, filename=filename)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".", 1)[0]] = (
                    alias.name if alias.asname else alias.name.split(".", 1)[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts: list[str] = []
        func = node.func
        while isinstance(func, ast.Attribute):
            parts.insert(0, func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            continue
        qualified = ".".join([names.get(func.id, func.id), *parts])
        if qualified in CLIENT_CONSTRUCTORS:
            found.append((node.lineno, qualified))
    return found


def test_only_the_factory_builds_http_clients() -> None:
    """Every client toward a target comes from ``paysuite_core.http_clients`` (``httpx_client``,
    ``requests_session``, ``aiohttp_session``, ``gevent_client``): a client built anywhere else
    would verify certificates its library's way, not the run's (--ca-bundle, --insecure...)."""
    offenders, awaited = [], set()
    for path in python_files(*PRODUCT):
        relative = path.relative_to(ROOT).as_posix()
        if path == FACTORY_MODULE:
            continue
        found = client_constructions(path.read_text(encoding="utf-8"), relative)
        if relative in AWAITING_THE_FACTORY:
            awaited |= {relative} if found else set()
            continue
        offenders += [f"{relative}:{line}: {name}(...)" for line, name in found]
    assert not offenders, (
        "HTTP clients built outside paysuite_core/http_clients.py (use its httpx_client, "
        "requests_session, aiohttp_session or gevent_client):\n" + "\n".join(offenders)
    )
    stale = AWAITING_THE_FACTORY - awaited
    assert not stale, f"no client built any more, remove from AWAITING_THE_FACTORY: {stale}"


def test_the_factory_rule_finds_every_way_to_build_a_client() -> None:
    sample = """
import httpx
import httpx as h
import requests
import aiohttp
import geventhttpclient
from requests import Session as S
from geventhttpclient import HTTPClient
from geventhttpclient.url import URL
httpx.Client(timeout=1)
h.AsyncClient()
httpx.post("https://x")
requests.Session()
S()
requests.get("https://x")
aiohttp.ClientSession(trust_env=False)
aiohttp.TCPConnector(limit=0)
HTTPClient("h", 443)
HTTPClient.from_url(URL("https://x"))
geventhttpclient.HTTPClient("h")
httpx.Timeout(3)
requests.exceptions.RequestException("not a client")
client = factory.httpx_client(None)
client.post("/a")
"""
    found = client_constructions(sample)
    assert [name for _, name in found] == [
        "httpx.Client", "httpx.AsyncClient", "httpx.post", "requests.Session",
        "requests.Session", "requests.get", "aiohttp.ClientSession", "aiohttp.TCPConnector",
        "geventhttpclient.HTTPClient", "geventhttpclient.HTTPClient.from_url",
        "geventhttpclient.HTTPClient",
    ]  # fmt: skip
    assert [line for line, _ in found] == list(range(10, 21))
    # and the factory itself is where they are: the rule would see them
    assert client_constructions(FACTORY_MODULE.read_text(encoding="utf-8"))


# --- one bounded reader, one guarded JSON decoder -----------------------------------------------
#: The factory functions of ``paysuite_core/http_clients.py``.
FACTORIES = frozenset(
    {"httpx_client", "requests_session", "aiohttp_session", "gevent_client", "raw_connection"}
)
#: The modules that may open a client, each with how it bounds what it reads (issue 32): every
#: other module sends through ``BoundedClient`` or the load side's ``Connection``.
BOUNDED_READERS: dict[str, str] = {
    "paysuite_core/bounded_http.py": "BoundedClient: every body under Limits, inflated step by "
    "step (Inflater); h11 caps a head at 100 KiB",
    "load/connection.py": "read_capped under Limits; BoundedHeaders counts the head's lines",
    "conformance/schemathesis_adapter.py": "the 429 resender: the request carries capped_body, "
    "requests' response hook; http.client takes at most 100 header lines",
    "paysuite_core/driver/preflight.py": "check_reachable reads a status line and headers, no body",
    "conformance/stalled_body.py": "ERR-007's bare socket: h11 caps the head at 16 KiB, the body "
    "under Limits.max_body_bytes, the whole watch within the check's bound",
    "proxy/cli.py": "_check_target sends a HEAD: a status line and headers, no body",
    "paysuite_core/webhooks/receiver.py": "the forwarder: content.read(MAX_BODY_BYTES) of the "
    "handler's answer; aiohttp's client takes 128 header lines of 8190 bytes",
    "proxy/server.py": "the upstream answer streamed under the proxy's cap; aiohttp's client "
    "takes 128 header lines of 8190 bytes",
    "stub_server/webhook_delivery/dispatcher.py": "the stub's one delivery session, handed to "
    "endpoints.deliver; aiohttp's client caps the head",
    "stub_server/webhook_delivery/endpoints.py": "the stub's endpoint check; a delivery keeps "
    "ERROR_BODY_CHARS of a failed answer, under the delivery's total time-out",
}
#: The one JSON decoder for what comes from a target or a file.
GUARDED_DECODER = "paysuite_core/guarded_json.py"
_JSON_DECODES = frozenset(
    {"json.loads", "json.load", "json.JSONDecoder", "json.decoder.JSONDecoder"}
)
#: ``path::function`` where a bare ``json.loads`` reads what paysuite itself wrote, and why.
TRUSTED_JSON: dict[str, str] = {
    "paysuite_core/config_schema.py::schema": "the project's own JSON Schema files",
    "paysuite_core/webhooks/ledger.py::from_journal": "the receiver's own journal lines",
    "paysuite_core/results/masking.py::learn_issued": "the request body the suite itself sent",
    "load/runner.py::outcome": "the run's own load.json, written by paysuite",
    "paysuite_core/results/masking.py::_masked_member": (
        "one JSON string literal the masker's pattern matched"
    ),
    "paysuite/clients/report.py::_masked_value": "paysuite's own json.dumps of a parsed value",
    "paysuite/clients/paypack_py_driver.py::main": "the job the parent wrote to its stdin",
}


def factory_calls(source: str, filename: str = "<sample>") -> list[tuple[int, str]]:
    """Where ``source`` uses a client factory: calls it (``httpx_client(...)``,
    ``http_clients.requests_session(...)``) or hands it on (``partial(httpx_client, ...)``),
    as (line, name)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Name) and node.id in FACTORIES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in FACTORIES:
            found.append((node.lineno, node.attr))
    return found


def json_decodes(source: str, filename: str = "<sample>") -> list[tuple[int, str, str]]:
    """Where ``source`` decodes JSON with the standard library, aliases resolved (``import json
    as j``, ``from json import loads``): (line, enclosing function or ``<module>``, name)."""
    tree = ast.parse(source, filename=filename)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".", 1)[0]] = (
                    alias.name if alias.asname else alias.name.split(".", 1)[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = child.name
            elif isinstance(child, ast.Call):
                parts: list[str] = []
                func = child.func
                while isinstance(func, ast.Attribute):
                    parts.insert(0, func.attr)
                    func = func.value
                if isinstance(func, ast.Name):
                    qualified = ".".join([names.get(func.id, func.id), *parts])
                    if qualified in _JSON_DECODES:
                        found.append((child.lineno, function, qualified))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_only_the_bounded_readers_open_clients() -> None:
    """A client factory is called only by a module that bounds what the client reads (body
    size as decoded, head size, time): a new command cannot read a target's answer whole with
    ``httpx_client(...).post(url)``, as ``webhooks resend`` did (3 GB in 11 s)."""
    offenders, used = [], set()
    for path in python_files(*PRODUCT):
        relative = path.relative_to(ROOT).as_posix()
        if path == FACTORY_MODULE:
            continue
        found = factory_calls(path.read_text(encoding="utf-8"), relative)
        if relative in BOUNDED_READERS:
            used |= {relative} if found else set()
            continue
        offenders += [f"{relative}:{line}: {name}(...)" for line, name in found]
    assert not offenders, (
        "a client opened outside the bounded readers (send through "
        "paysuite_core.bounded_http.BoundedClient):\n" + "\n".join(offenders)
    )
    stale = set(BOUNDED_READERS) - used
    assert not stale, f"no client opened any more, remove from BOUNDED_READERS: {stale}"


def test_untrusted_json_goes_through_the_guarded_decoder() -> None:
    """``json.loads`` of a target's answer or a file is a traceback waiting (RecursionError on
    a deep body) and reads any size: outside ``paysuite_core/guarded_json.py`` it appears only
    where paysuite reads what it wrote itself (``TRUSTED_JSON``, a reason each). The stub is the
    target side: it parses requests with its own rules (duplicate keys, RC-42)."""
    offenders, used = [], set()
    for path in python_files(*(part for part in PRODUCT if part != "stub_server")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == GUARDED_DECODER:
            continue
        for line, function, name in json_decodes(path.read_text(encoding="utf-8"), relative):
            key = f"{relative}::{function}"
            if key in TRUSTED_JSON:
                used.add(key)
            else:
                offenders.append(f"{relative}:{line} in {function}: {name}(...)")
    assert not offenders, (
        "JSON decoded outside paysuite_core.guarded_json (use guarded_json.loads, or name a "
        "read of paysuite's own output in TRUSTED_JSON with why):\n" + "\n".join(offenders)
    )
    stale = set(TRUSTED_JSON) - used
    assert not stale, f"no JSON decoded there any more, remove from TRUSTED_JSON: {stale}"
    assert json_decodes((ROOT / GUARDED_DECODER).read_text(encoding="utf-8"))


def test_the_reader_rules_find_every_way_around_them() -> None:
    sample = """
import json
import json as j
from json import loads
from json import load as read_json
from paysuite_core import http_clients
from paysuite_core.http_clients import httpx_client

def answer(body, handle):
    json.loads(body)
    j.loads(body)
    loads(body)
    read_json(handle)
    json.JSONDecoder().decode(body)
    json.dumps(body)
    guarded_json.loads(body)

class Command:
    def run(self, url):
        httpx_client(None).post(url)
        http_clients.gevent_client("http://x")
        other.factory(url)
        functools.partial(httpx_client, None)

json.load(open("x"))
"""
    assert json_decodes(sample) == [
        (10, "answer", "json.loads"), (11, "answer", "json.loads"), (12, "answer", "json.loads"),
        (13, "answer", "json.load"), (14, "answer", "json.JSONDecoder"),
        (25, "<module>", "json.load"),
    ]  # fmt: skip
    assert sorted(factory_calls(sample)) == [
        (20, "httpx_client"), (21, "gevent_client"), (23, "httpx_client"),
    ]  # fmt: skip


#: The commands that are not a pytest run: each reaches the results model, never the plugin
#: (loading pytest for ``paysuite webhooks listen`` or a proxy session is the cost the results
#: model exists to avoid).
NOT_PYTEST = ("proxy", "load", "paysuite.clients", "paysuite.webhooks")


def test_no_other_command_loads_the_pytest_plugin() -> None:
    paths = {module_name(path): path for path in python_files(*PARTS)}
    graph = {name: runtime_imports(path, set(paths)) for name, path in paths.items()}
    offenders = []
    for start in sorted(n for n in graph if n.startswith(NOT_PYTEST)):
        seen, stack = {start}, [[start]]
        while stack:
            trail = stack.pop()
            for imported in graph[trail[-1]] - seen:
                seen.add(imported)
                if imported == "conformance.plugin":
                    offenders.append(" -> ".join([*trail, imported]))
                stack.append([*trail, imported])
    assert not offenders, "a command outside pytest loads the plugin:\n" + "\n".join(offenders)


#: The front-ends that judge with the suite's rules but are not the suite: of ``conformance``
#: they may name only the catalog (a rule's ID and words); what they share with the suite
#: (the results, the driver, the report engine) is in ``paysuite_core``.
CATALOG_ONLY = ("proxy", "paysuite/clients", "paysuite/webhooks")


def test_front_ends_take_only_the_catalog_from_the_suite() -> None:
    offenders = []
    for path in python_files(*CATALOG_ONLY):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "conformance":
                names = [f"conformance.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] == "conformance" and name != "conformance.catalog"
            ]
    assert not offenders, "only conformance.catalog:\n" + "\n".join(offenders)
