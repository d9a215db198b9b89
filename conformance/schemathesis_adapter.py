"""Where paysuite meets schemathesis 4.x: every use of its API (and of the requests transport it
sends with) is here; ``conformance.property_phase`` keeps the phase's logic.

What is relied on is asserted by ``tests/conformance/test_schemathesis_contract.py``, so an
upgrade that changes it fails there first. The extension points are public ones: a global
``before_call`` hook (schemathesis runs only global ones before a call), a schema-scoped
``after_call`` hook, a custom check, an auth provider, requests' per-request response hooks
passed on through ``before_call``'s ``kwargs``, the engine's events. A hook finds its run's
``RunContext`` from the schema of the case it is handed (``HookContext.operation.schema``).

One override remains, scoped to a run: ``_authorize_as_root`` (see there).
"""

from __future__ import annotations

import io
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import schemathesis
from schemathesis.core import NotSet
from schemathesis.core.parameters import ParameterLocation
from schemathesis.engine import events, from_schema
from schemathesis.specs.openapi import stateful

from conformance.ast_guard import serialized
from paysuite_core import guarded_json, http_clients, tokens
from paysuite_core.bounded_http import READ_CHUNK, BoundedBody, ResponseTooLarge
from paysuite_core.results.masking import shown, shown_headers, shown_url
from paysuite_core.throttle import THROTTLED, retry_after_of
from paysuite_core.tls import TLSSettings

if TYPE_CHECKING:
    import requests
    from schemathesis import BaseSchema, Config

    from paysuite_core.driver.target import Target

CHAIN_CHECK = "paysuite_chain_holds"
#: schemathesis's check names -> the catalog's PROP checks.
CHECK_TO_ID = {
    "not_a_server_error": "PROP-001",
    "status_code_conformance": "PROP-002",
    "content_type_conformance": "PROP-003",
    "response_schema_conformance": "PROP-004",
    "negative_data_rejection": "PROP-005",
    "positive_data_acceptance": "PROP-006",
    "ignored_auth": "PROP-007",
    "missing_required_header": "PROP-008",
    "ensure_resource_availability": "PROP-009",
    "use_after_free": "PROP-009",
    CHAIN_CHECK: "PROP-009",
}
#: schemathesis checks the run turns off (``use_after_free`` stays mapped above: PROP-009).
DISABLED_CHECKS = (
    "use_after_free",
    "unsupported_method",
    "response_headers_conformance",
    "object_level_authorization",
    "allow_header_conformance",
)
MAX_EXAMPLES = 50
STATEFUL_MAX_STEPS = 6
#: schemathesis's phases, in the order one engine runs them.
PHASES = ("examples", "coverage", "fuzzing", "stateful")
CREATION_PATHS = ("/transactions/cashin", "/transactions/cashout")


class PropertyBudgetExceeded(RuntimeError):
    """The property run used its time budget: the remaining cases are not sent."""


class BodyTooLarge(OSError):
    """An answer of a generated request passed the run's size cap: not read further. An
    ``OSError``, as a transport failure is: the case got no usable answer."""


@dataclass
class RunContext:
    """What one property run's hooks and check share, made once per run (``run_properties``)
    and found by them from the schemas it is bound to (``outcomes``)."""

    target: Target
    #: the chain check's judgement of one answer (``property_phase.chain_step``)
    chain: Callable[[dict[str, dict[str, Any]], Any, int, Any], None]
    #: monotonic time after which nothing more is sent (None: no budget).
    deadline: float | None = None
    #: set when the run ends early (an error, another engine's end): the others stop.
    stop: threading.Event = field(default_factory=threading.Event)
    #: the session that sends a throttled request again (requests pools per thread)
    resender: requests.Session = field(init=False)

    def __post_init__(self) -> None:
        self.resender = http_clients.requests_session(self.target.tls)

    def pace(self) -> None:
        """Stop at the run's budget or an interruption; wait while the target asked to (after
        another request's 429)."""
        if self.stop.is_set() or self.target.client.stopped.is_set():
            raise KeyboardInterrupt  # Ctrl-C reached another thread than the engine's
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise PropertyBudgetExceeded("the property run used its time budget")
        throttle = self.target.throttle
        pause = throttle.pause_s(self.deadline) if throttle is not None else 0.0
        if pause > 0:
            time.sleep(pause)


#: id(schema) -> the run it belongs to, while that run lasts.
_RUNS: dict[int, RunContext] = {}


def _run_of(operation: Any) -> RunContext | None:
    return _RUNS.get(id(getattr(operation, "schema", None)))


def answer_hook(run: RunContext) -> Callable[..., Any]:
    """A requests response hook for one generated request: the body read now, chunk by chunk
    as it inflates, stopping one chunk past the size cap; a ``429`` sent again after the wait
    the run's throttle says, the answer after it in its place (requests takes a hook's return
    value as the response), so the engine judges that one.

    schemathesis reads every answer whole: against a target that sends a 50 MB body or an
    endless one, eight workers at once took the run past 3 GB. The resent request is the very
    one sent (its auth header, body and key) and carries this hook again: each answer is capped,
    each further 429 waited for, until the throttle gives up (a 429 left, kept out of verdicts).
    """
    attempt = 0

    def hook(response: Any, *_args: Any, **_kwargs: Any) -> Any:
        nonlocal attempt
        try:
            body = BoundedBody(response.headers, run.target.limits.max_body_bytes)
            for chunk in response.raw.stream(READ_CHUNK, decode_content=True):
                body.add(chunk)
        except ResponseTooLarge as exc:
            response.close()
            raise BodyTooLarge(str(exc)) from None
        response.raw = _ReadBody(bytes(body.data), response.raw)
        throttle = run.target.throttle
        if throttle is None or response.status_code != THROTTLED:
            return response
        asked = retry_after_of(response.headers)
        decision = throttle.throttled(asked, attempt, deadline=run.deadline)
        if not decision.retry:
            return response
        time.sleep(decision.wait_s)
        attempt += 1
        return run.resender.send(response.request, timeout=30, allow_redirects=False)

    return hook


class _ReadBody(io.BytesIO):
    """An answer's body already read, as the stream requests reads it from (``raw``); every
    other attribute (the headers, the HTTP version schemathesis records) is the original's."""

    def __init__(self, data: bytes, original: Any) -> None:
        super().__init__(data)
        self._original = original

    def stream(self, amt: int = READ_CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


# --- the hooks and the check (registered once, with this module; idle outside a run) ----------
@schemathesis.hook("before_call")
def paysuite_before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Pace the request, read its answer under the run's cap, and give a positive creation a
    fresh Idempotency-Key, so that a generated key that repeats does not turn a valid request
    into a legitimate 409."""
    run = _run_of(context.operation)
    if run is None:
        return
    run.pace()
    kwargs.setdefault("hooks", {}).setdefault("response", []).append(answer_hook(run))
    if case.operation.path in CREATION_PATHS:
        _fresh_key(case)


def response_json(response: Any) -> Any:
    try:
        return guarded_json.loads(response.content)
    except (ValueError, TypeError, AttributeError):
        return None


@schemathesis.check
class paysuite_chain_holds:  # schemathesis names failures after the class
    """What a creation created is found, by find and in the events list, with the values
    sent: the stateful chain judged on the document's own promise ("A transaction is
    identified by a unique reference key (ref) generated by the service")."""

    def __init__(self) -> None:
        self.created: dict[str, dict[str, Any]] = {}

    def after_response(self, ctx: Any, response: Any, case: Any) -> None:
        run = _run_of(case.operation)
        if run is not None:
            run.chain(self.created, case, response.status_code, response_json(response))


def _fresh_key(case: Any) -> None:
    """A new idempotency key for a positive creation case, so that it creates (IDEM rules)."""
    meta = getattr(case, "meta", None)
    _one_key_location(case, meta)
    mode = getattr(getattr(meta, "generation", None), "mode", None)
    if mode is not None and not mode.is_positive:
        return  # a negative case may mean its key (too long, empty)
    key = uuid.uuid4().hex
    for container in (case.headers, case.query):
        if isinstance(container, dict):
            for name in list(container):
                if name.lower() == "idempotency-key":
                    container[name] = key


def _one_key_location(case: Any, meta: Any) -> None:
    """Keep the key in one place: which of header and query wins is a reference choice (RC-6).

    A case carrying both keeps the one it was generated to test (the negative one), else the
    header, so the verdict never depends on the precedence the target chose.
    """
    header = isinstance(case.headers, dict) and any(
        n.lower() == "idempotency-key" for n in case.headers
    )
    query = isinstance(case.query, dict) and any(n.lower() == "idempotency-key" for n in case.query)
    if not (header and query):
        return
    negative_query = bool(meta and meta.is_negative_at(ParameterLocation.QUERY))
    negative_header = bool(meta and meta.is_negative_at(ParameterLocation.HEADER))
    container = case.headers if negative_query and not negative_header else case.query
    for name in [n for n in container if n.lower() == "idempotency-key"]:
        del container[name]


# --- the configuration and the schemas ---------------------------------------------------------
def build_config(
    seed: int,
    profile: str,
    base_url: str,
    max_examples: int = MAX_EXAMPLES,
    shrink: bool = True,
    tls: TLSSettings | None = None,
    workers: int = 1,
    phases: tuple[str, ...] = PHASES,
) -> Config:
    """schemathesis's configuration of the run. ``workers``: threads that run the examples,
    coverage and fuzzing phases, each taking the next operation (schemathesis's own pool, the
    same cases for the same seed: each operation's are generated by one thread from that seed);
    the stateful phase runs in one. ``phases``: the ones this engine runs."""
    checks: dict[str, Any] = {
        name: {"enabled": name not in DISABLED_CHECKS} for name in (*CHECK_TO_ID, *DISABLED_CHECKS)
    }
    if profile != "reference":
        checks["negative_data_rejection"]["expected-statuses"] = ["4xx"]
        checks["missing_required_header"]["expected-statuses"] = ["4xx"]
    return schemathesis.Config.from_dict(
        {
            "seed": seed,
            "base-url": base_url,
            "workers": workers,
            "generation": {
                "mode": "all",
                "max-examples": max_examples,
                "no-shrink": not shrink,
                "deterministic": True,
                "unique-inputs": True,
                "database": "none",
            },
            "phases": {
                "examples": {"enabled": "examples" in phases},
                "coverage": {"enabled": "coverage" in phases},
                "fuzzing": {"enabled": "fuzzing" in phases},
                "stateful": {"enabled": "stateful" in phases, "max-steps": STATEFUL_MAX_STEPS},
            },
            "checks": checks,
            "suppress-health-check": ["all"],
            "request-timeout": 30,
            **tls_config(tls),
            "warnings": False,
            # schemathesis's own masking would print ``[Filtered]`` in its curl, which no shell
            # replays: the suite names each credential by variable instead (``tool_item``), and
            # its evidence shortens tokens and masks secrets as everywhere else.
            "output": {"sanitization": {"enabled": False}},
        }
    )


def tls_config(tls: TLSSettings | None) -> dict[str, Any]:
    """schemathesis's own keys for the run's TLS settings: its generated requests go through
    requests, which reads ``REQUESTS_CA_BUNDLE`` only, so the bundle is given by path (or
    ``False`` under ``--insecure``) and the client certificate as schemathesis takes it."""
    settings = tls or http_clients.default_tls()
    config: dict[str, Any] = {"tls-verify": settings.requests_verify()}
    if settings.client_cert:
        config["request-cert"] = settings.client_cert
        if settings.client_key:
            config["request-cert-key"] = settings.client_key
    return config


def open_schema(
    spec: dict[str, Any],
    config: Config,
    excluded: Iterable[str],
    token: Callable[[str], str | None],
) -> BaseSchema:
    """The schema of ``spec`` without the ``excluded`` paths, its requests authorized with
    ``token(path)`` (no header where it answers None)."""

    class SuiteAuth:
        def get(self, case: Any, context: Any) -> str | None:
            return token(context.operation.path)

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = dict(case.headers or {})
            case.headers["Authorization"] = f"Bearer {data}"

    schema: BaseSchema = schemathesis.openapi.from_dict(spec, config=config)
    for path in excluded:
        schema = schema.exclude(path=path)
    schema.auth(refresh_interval=None)(SuiteAuth)
    return schema


# --- the run: the engines' events in schemathesis-free terms -----------------------------------
@dataclass
class Finding:
    """A failed schemathesis check of one case, with what the phase judges it by."""

    check_name: str
    operation: str
    phase: str
    title: str
    message: str
    curl: str
    status: int | None
    request: dict[str, Any] | None
    response: dict[str, Any] | None
    #: the case's path parameters were generated invalid (a mangled URL)
    negative_path: bool = False
    #: the case's parts, as ``paysuite_core.driver.document_validity.violation`` takes them
    parts: dict[str, Any] | None = None
    #: which parts of a negative case were generated invalid
    negative_parts: str = ""


@dataclass
class Scenario:
    """One finished scenario: (operation, phase, status) per answer, and its failed checks."""

    answers: list[tuple[str, str, int]]
    findings: list[Finding]


@dataclass
class Trouble:
    """An error of the engine or the transport; ``text`` only for a non-fatal one."""

    where: str
    exception: BaseException
    text: str = ""


def outcomes(run: RunContext, schemas: list[BaseSchema]) -> Iterator[Scenario | Trouble]:
    """What one schemathesis engine per schema reports, as it comes (each engine in a thread of
    its own when there are several), ``schemas`` bound to ``run`` meanwhile. A creation's ref is
    noted in the target's refs (the scripted checks run beside the property run with
    ``--concurrency``, and a ref both handed out is then known). Raises ``KeyboardInterrupt``
    when an engine was interrupted: schemathesis swallows Ctrl-C and ends its run early, and a
    partial run must not be judged as a whole one."""

    def paysuite_note_created(context: Any, case: Any, response: Any) -> None:
        if case.operation.path in CREATION_PATHS and 200 <= response.status_code < 300:
            body = response_json(response)
            ref = body.get("ref") if isinstance(body, dict) else None
            if isinstance(ref, str):
                run.target.note_generated_ref(ref)

    for schema in schemas:
        schema.hook("after_call")(paysuite_note_created)
        _RUNS[id(schema)] = run
    restore = _authorize_as_root()
    try:
        for event in _side_by_side(run, schemas):
            if isinstance(event, events.ScenarioFinished):
                yield _scenario(event)
            elif isinstance(event, events.NonFatalError):
                text = f"{event.label}: {_error_text(event)}"
                yield Trouble(f"the property run ({event.label})", event.value, text)
            elif isinstance(event, events.FatalError):
                yield Trouble("the property run", event.exception)
            elif isinstance(event, events.Interrupted):
                raise KeyboardInterrupt
    finally:
        restore()
        for schema in schemas:
            _RUNS.pop(id(schema), None)
        run.resender.close()


def _side_by_side(run: RunContext, schemas: list[BaseSchema]) -> Iterator[Any]:
    """The events of the engines, a single one run here. Whatever ends the consumer early (an
    interruption, an error) stops the others at their next request (``run.stop``). Several
    workers or engines parse source at once: ``ast.parse`` is serialized meanwhile."""
    if len(schemas) == 1:  # one engine, one worker (--concurrency 1)
        yield from from_schema(schemas[0]).execute()
        return
    arrivals: queue.Queue[Any] = queue.Queue()
    done = object()

    def drive(schema: BaseSchema) -> None:
        try:
            for event in from_schema(schema).execute():
                arrivals.put(event)
        except BaseException as exc:  # raised again in the consumer's thread
            arrivals.put(exc)
        finally:
            arrivals.put(done)

    threads = [
        threading.Thread(target=drive, args=(schema,), name="paysuite-properties", daemon=True)
        for schema in schemas
    ]
    finished = 0
    with serialized():
        for thread in threads:
            thread.start()
        try:
            while finished < len(threads):
                item = arrivals.get()
                if item is done:
                    finished += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            if finished < len(threads):
                run.stop.set()
            for thread in threads:
                thread.join()


def _authorize_as_root() -> Callable[[], None]:
    """Let the stateful phase start from authorize, so authorize -> refresh links are followed.

    schemathesis's dependency analysis reads ``client_id`` as a reference to a resource nothing
    produces and so never starts a scenario from authorize; no setting or hook reaches that
    choice. Our spec pins positive credentials to a configured application, so authorize does
    succeed; the override lasts as long as the run (``outcomes``).
    """
    original = getattr(stateful, "is_likely_root_transition", None)
    if original is None:  # another schemathesis 4.x: its own analysis decides, chains still run
        return lambda: None

    def likely_root(operation: Any, node: Any, produced_anywhere: set[str]) -> bool:
        if operation.method == "post" and operation.path == tokens.AUTHORIZE_PATH:
            return True
        return bool(original(operation, node, produced_anywhere))

    stateful.is_likely_root_transition = likely_root

    def restore() -> None:
        stateful.is_likely_root_transition = original

    return restore


def _error_text(event: Any) -> str:
    info = getattr(event, "info", None)
    if info is not None:
        return f"{getattr(info, 'title', '')}: {getattr(info, 'message', '')}".strip()
    return str(getattr(event, "value", event))


def _scenario(event: Any) -> Scenario:
    recorder = event.recorder
    phase = str(getattr(event.phase, "value", event.phase))
    answers = []
    for case_id, interaction in recorder.interactions.items():
        if interaction.response is not None:
            node = recorder.cases.get(case_id)
            label = f"{node.value.method} {node.value.path}" if node is not None else recorder.label
            answers.append((label, phase, interaction.response.status_code))
    findings = [
        _finding(recorder, case_id, node, phase)
        for case_id, nodes in recorder.checks.items()
        for node in nodes
        if node.failure_info is not None
        and str(getattr(node.status, "value", node.status)) == "failure"
    ]
    return Scenario(answers, findings)


def _finding(recorder: Any, case_id: str, node: Any, phase: str) -> Finding:
    case_node = recorder.cases.get(case_id)
    case = case_node.value if case_node is not None else None
    request, response = _interaction(recorder.interactions.get(case_id))
    failure = node.failure_info.failure
    finding = Finding(
        check_name=node.name,
        operation=f"{case.method} {case.path}" if case is not None else recorder.label,
        phase=phase,
        title=str(getattr(failure, "title", "")),
        message=str(getattr(failure, "message", "")),
        curl=node.failure_info.code_sample,
        status=response["status"] if response is not None else None,
        request=request,
        response=response,
    )
    if case is not None:
        meta = getattr(case, "meta", None)
        finding.negative_path = bool(
            meta is not None and meta.is_negative_at(ParameterLocation.PATH)
        )
        finding.negative_parts = _negative_parts(meta)
        body = case.body
        finding.parts = {
            "path": case.operation.path,
            "body": None if isinstance(body, NotSet) else body,
            "headers": case.headers,
            "query": case.query,
            "path_parameters": case.path_parameters,
            "has_body": not isinstance(body, NotSet),
        }
    return finding


def _negative_parts(meta: Any) -> str:
    """Which parts of a negative case were generated invalid, for the failure message."""
    components = getattr(meta, "components", None) or {}
    parts = [
        str(getattr(location, "value", location))
        for location, component in components.items()
        if getattr(getattr(component, "mode", None), "is_negative", False)
    ]
    description = getattr(getattr(getattr(meta, "phase", None), "data", None), "description", "")
    text = ", ".join(parts) or "unknown"
    return f"{text} ({description})" if description else text


def _interaction(
    interaction: Any,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The request and response of a recorded interaction as evidence dicts, credentials
    shortened and masked as in the suite's own evidence."""
    if interaction is None:
        return None, None
    response = None
    if interaction.response is not None:
        answer = _body_text(interaction.response)
        response = {
            "status": interaction.response.status_code,
            "headers": _headers(getattr(interaction.response, "headers", {}) or {}),
            "body": shown(answer, "access", "refresh") if answer is not None else None,
        }
    body = _bytes_text(interaction.request.body)
    request = {
        "method": interaction.request.method,
        "url": shown_url(str(interaction.request.uri)),
        "headers": _headers(interaction.request.headers),
        "body": shown(body, "secret") if body is not None else None,
    }
    return request, response


def _headers(headers: Any) -> dict[str, str]:
    """Flatten schemathesis's header lists; shorten the bearer token like our own evidence."""
    return shown_headers(
        {
            str(name): ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
            for name, v in dict(headers).items()
        }
    )


def _bytes_text(data: bytes | None) -> str | None:
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= 2000 else text[:2000] + "…"


def _body_text(response: Any) -> str | None:
    try:
        content = response.content
    except Exception:  # evidence is best effort
        return None
    return _bytes_text(content) if isinstance(content, bytes) else str(content)[:2000]
