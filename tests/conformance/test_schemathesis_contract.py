"""What ``conformance.schemathesis_adapter`` relies on from schemathesis, asserted by name and
signature, then once end to end: an upgrade of schemathesis that changes any of it fails here
first, with the piece it changed named, rather than as a silently weaker property phase."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
import schemathesis
from schemathesis.checks import CHECKS, CheckContext
from schemathesis.core import NotSet
from schemathesis.core.parameters import ParameterLocation
from schemathesis.engine import events, from_schema
from schemathesis.hooks import GLOBAL_HOOK_DISPATCHER, HookContext, HookDispatcher, HookScope
from schemathesis.specs.openapi import stateful

from conformance import schemathesis_adapter as adapter
from paysuite_core.bounded_http import CONFORM_LIMITS
from paysuite_core.throttle import Throttle


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_hook_points_are_where_the_adapter_registers_them() -> None:
    specs = HookDispatcher._specs  # the registry schemathesis validates every hook against
    assert list(specs["before_call"].signature.parameters) == ["context", "case", "kwargs"]
    assert list(specs["after_call"].signature.parameters) == ["context", "case", "response"]
    # before_call runs from the global dispatcher only; after_call may be the schema's own
    assert HookScope.GLOBAL in specs["before_call"].scopes
    assert HookScope.SCHEMA in specs["after_call"].scopes
    registered = GLOBAL_HOOK_DISPATCHER.get_all_by_name("before_call")
    assert adapter.paysuite_before_call in registered, "the adapter's before_call is not global"
    assert _parameters(HookContext.__init__) == ["self", "operation"]


def test_the_checks_it_configures_exist_and_its_check_class_is_registered() -> None:
    schemathesis.openapi.from_dict(_spec())  # the Open API checks register as it loads
    names = set(CHECKS.get_all_names())
    missing = {*adapter.CHECK_TO_ID, *adapter.DISABLED_CHECKS} - names
    assert not missing, f"schemathesis no longer has the checks {sorted(missing)}"
    assert adapter.CHAIN_CHECK == adapter.paysuite_chain_holds.__name__
    assert _parameters(adapter.paysuite_chain_holds.after_response) == [
        "self", "ctx", "response", "case"
    ]  # fmt: skip
    assert {"config", "phase"} <= set(CheckContext.__slots__)


def test_the_config_keys_and_the_loader_are_accepted() -> None:
    config = adapter.build_config(1, "seed", "http://127.0.0.1:9/api", workers=2)
    project = config.projects.get_default()
    assert project.workers == 2 and project.seed == 1
    assert not config.output.sanitization.enabled
    assert {"config"} <= set(_parameters(schemathesis.openapi.from_dict))
    schema = schemathesis.openapi.from_dict(_spec(), config=config)
    assert {"path"} <= set(_parameters(schema.exclude))
    assert "refresh_interval" in _parameters(schema.auth)


def test_what_it_reads_of_cases_and_the_stateful_phase() -> None:
    assert {"PATH", "QUERY", "HEADER"} <= set(ParameterLocation.__members__)
    assert NotSet is not None
    # the override of the stateful phase's roots (``_authorize_as_root``): the function, its
    # signature, and its caller reading it through the module at each call
    assert _parameters(stateful.is_likely_root_transition) == [
        "operation", "node", "produced_anywhere"
    ]  # fmt: skip
    caller = inspect.getsource(stateful.classify_root_transitions)
    assert "is_likely_root_transition(" in caller
    for name in ("ScenarioFinished", "NonFatalError", "FatalError", "Interrupted"):
        assert isinstance(getattr(events, name), type), name
    assert _parameters(from_schema)[0] == "schema"


# --- end to end: one tiny engine run through the adapter -------------------------------------
def _spec(base_url: str = "http://127.0.0.1:9") -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "contract", "version": "1"},
        "servers": [{"url": base_url}],
        "paths": {
            "/transactions/cashin": {
                "post": {
                    "parameters": [
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": True,
                            "schema": {"type": "string", "enum": ["fixed"]},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["amount"],
                                    "properties": {"amount": {"type": "integer", "minimum": 1}},
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": {
                            "description": "created",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"ref": {"type": "string"}},
                                    }
                                }
                            },
                        }
                    },
                }
            }
        },
    }


class _Target:
    """A 201 with a fresh ref to every creation, after a 429 to every third request."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.count = 0
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with target.lock:
                    target.count += 1
                    count = target.count
                    target.keys.append(self.headers.get("Idempotency-Key", ""))
                if count % 3 == 1:
                    body, status, extra = b"{}", 429, {"Retry-After": "0"}
                else:
                    body, status, extra = json.dumps({"ref": f"r{count}"}).encode(), 201, {}
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **extra}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                return

        return Handler


@pytest.fixture
def served() -> Iterator[tuple[str, _Target]]:
    target = _Target()
    server = ThreadingHTTPServer(("127.0.0.1", 0), target.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", target
    finally:
        server.shutdown()
        server.server_close()


def test_a_run_through_the_adapter_uses_every_point_it_relies_on(
    served: tuple[str, _Target],
) -> None:
    base_url, server = served
    noted: list[str] = []
    judged: list[tuple[str, int]] = []
    fake = SimpleNamespace(
        client=SimpleNamespace(stopped=threading.Event()),
        throttle=Throttle(5.0),
        limits=CONFORM_LIMITS,
        tls=None,
        note_generated_ref=noted.append,
    )
    config = adapter.build_config(
        1, "seed", base_url, max_examples=3, shrink=False, phases=("examples", "fuzzing")
    )
    schema = adapter.open_schema(_spec(base_url), config, [], lambda _path: "tok")

    def chain(created: dict[str, Any], case: Any, status: int, body: Any) -> None:
        judged.append((case.operation.path, status))

    run = adapter.RunContext(fake, chain)  # type: ignore[arg-type]
    seen = list(adapter.outcomes(run, [schema]))
    assert not [o for o in seen if isinstance(o, adapter.Trouble)], seen
    scenarios = [o for o in seen if isinstance(o, adapter.Scenario)]
    answers = [answer for scenario in scenarios for answer in scenario.answers]
    assert answers and {a[0] for a in answers} == {"POST /transactions/cashin"}
    # each 429 was sent again by the answer hook: the engine saw only the 201 after it
    assert {status for _op, _phase, status in answers} == {201}
    assert server.count > len(answers)
    # before_call gave positive creations a fresh key in place of the generated one
    assert any(len(key) == 32 for key in server.keys), server.keys
    assert noted and all(ref.startswith("r") for ref in noted)  # the schema's after_call
    assert judged and all(j == ("/transactions/cashin", 201) for j in judged)  # the check
    assert not adapter._RUNS  # unbound at the end of the run
