"""Property tests: schemathesis 4.x over the patched spec, its failures mapped to PROP-00n.

One engine run (examples, coverage, fuzzing and the stateful phase over the spec's links) covers
every operation; its failures are sorted into the catalog's PROP checks by schemathesis check
name, or into PROP-009 when the stateful phase found them. Each failure keeps schemathesis's own
curl reproduction.

The bearer token comes from an auth provider that authorizes with a configured application
(choosing one allowed to perform the operation) and renews the pair through the refresh
endpoint before the declared access lifetime runs out. Positive creations get a fresh
Idempotency-Key on every send (a ``before_call`` hook), so a generated key that happens to repeat
does not turn a valid request into a legitimate 409.

A target that rate-limits is honoured through the run's throttle (``paysuite_core.throttle``):
the same ``before_call`` hook paces each request while the target asked to wait, and an
``after_call`` hook sends a ``429``'s request again after its ``Retry-After`` and puts the answer
that follows in its place, so the engine judges that one. A 429 the throttle no longer retries
(its budget spent) is never a PROP failure: those cases are not judged, and the PROP checks are
errors that say so.
"""

from __future__ import annotations

import io
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paysuite_core import guarded_json, http_clients, tokens
from paysuite_core.bounded_http import READ_CHUNK, BoundedBody, Limits, ResponseTooLarge
from paysuite_core.driver.http import RecordingClient, Reply, TargetUnreachable
from paysuite_core.driver.spec_patch import operations, patch_spec
from paysuite_core.driver.target import checking_flow
from paysuite_core.results.outcome import CouldNotCheck, EngineError, engine_error
from paysuite_core.throttle import THROTTLED, Throttle, retry_after_of
from paysuite_core.tls import TLSSettings

if TYPE_CHECKING:
    import requests
    from schemathesis import BaseSchema, Config

    from paysuite_core.driver.target import Target
    from paysuite_core.results.masking import Masker
    from paysuite_core.target_config import Application

CHAIN_CHECK = "paysuite_chain_holds"
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
#: The budget against the bundled stub (``paysuite conform`` with neither --target nor --config):
#: the deterministic examples and coverage phases run whole (every operation, every documented
#: boundary and negative part); fuzzing and the stateful chains get fewer examples, so a run of
#: the stub's self-check (and of each mutant of the mutation score) stays near 10 s. Nor are
#: failing examples shrunk there: shrinking finds nothing new, and one schemathesis error on a
#: generated events-list query (reference profile) cost 5-25 s of it.
BUNDLED_MAX_EXAMPLES = 10
FAILURES_KEPT_PER_CHECK = 5
CREATION_PATHS = ("/transactions/cashin", "/transactions/cashout")


@dataclass
class PropFailure:
    check_id: str
    check_name: str
    operation: str
    phase: str
    title: str
    message: str
    curl: str
    status: int | None = None
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None

    def evidence(self, masker: Masker) -> dict[str, Any]:
        """The failure as an evidence item: its curl with the credentials named by variable
        (schemathesis prints them in full: its sanitization would print ``[Filtered]``, which
        no shell can replay), and a reproduction with fresh keys."""
        from paysuite_core.results.evidence import tool_item

        data = {
            "request": self.request or {"operation": self.operation, "phase": self.phase},
            "response": self.response,
        }
        return tool_item(data, self.curl, masker)

    def line(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else self.title
        status = f" -> {self.status}" if self.status is not None else ""
        return f"{self.operation}{status} [{self.check_name}, {self.phase}]: {first}"


@dataclass
class PropRun:
    failures: dict[str, list[PropFailure]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    scenarios: int = 0
    #: (operation, phase, status) -> count of the responses seen: what the run exercised.
    responses: dict[tuple[str, str, int], int] = field(default_factory=dict)
    duration_s: float = 0.0
    skipped: str | None = None
    #: Requests that got no answer at all: the target stopped answering (a run-level error).
    unanswered: list[str] = field(default_factory=list)
    #: Why the run stopped before its end (its time budget), or "" when it ran to the end.
    stopped: str = ""
    #: Operations left out because no configured application may perform them (read-only
    #: credentials, a cashin-only application): nothing to judge there, nothing demanded.
    excluded: dict[str, str] = field(default_factory=dict)
    #: Answers that were still 429 once the throttle stopped retrying: cases not judged.
    throttled_out: int = 0
    #: Exceptions inside paysuite's hooks and checks or schemathesis's engine (not the
    #: target's answers): errors of the run, with their tracebacks, never a check's failure.
    engine_errors: list[EngineError] = field(default_factory=list)

    def add(self, failure: PropFailure) -> None:
        bucket = self.failures.setdefault(failure.check_id, [])
        key = (failure.check_name, failure.operation, failure.title, failure.status)
        if any((f.check_name, f.operation, f.title, f.status) == key for f in bucket):
            return
        if len(bucket) < FAILURES_KEPT_PER_CHECK:
            bucket.append(failure)


def unexercised(result: PropRun) -> list[str]:
    """Operations no positive request got through: a run that proves nothing about them.

    schemathesis accepts 401/403/404/409 as answers to valid data, so a broken token would
    otherwise leave every check green. Either refresh path may be the one a target serves.
    """
    accepted = {op for (op, _phase, status) in result.responses if 200 <= status < 300}
    accepted |= set(result.excluded)
    if all(f"POST {path}" in result.excluded for path in CREATION_PATHS):
        # Nothing this run may create: a generated ref is unknown, so find's 404 is right.
        accepted.add("GET /transactions/find/{ref}")
    problems = []
    for operation in (
        f"POST {tokens.AUTHORIZE_PATH}",
        "POST /transactions/cashin",
        "POST /transactions/cashout",
        "GET /transactions/find/{ref}",
        "GET /events/transactions",
    ):
        if operation not in accepted:
            seen = sorted({st for (op, _p, st) in result.responses if op == operation})
            problems.append(f"{operation}: no 2xx in the whole run (statuses {seen})")
    refresh = {"GET " + path.replace("{token}", "{refresh_token}") for path in tokens.REFRESH_PATHS}
    if not refresh & accepted:
        problems.append("neither refresh path answered a 2xx in the whole run")
    return problems


# --- the Idempotency-Key hook (global in schemathesis, so guarded by a flag) ----------------
_FRESH_KEYS = threading.Event()
_HOOK_REGISTERED = False
#: monotonic time after which the running property run sends nothing more (None: no budget).
_DEADLINE: list[float | None] = [None]
#: The running property run's throttle (the run's one ``Throttle``), None outside a run.
_THROTTLE: list[Throttle | None] = [None]


#: The session that sends a throttled request again (one per property run).
_RESENDER: list[requests.Session | None] = [None]
#: The running property run's TLS settings, for the resender (None outside a run).
_TLS: list[TLSSettings | None] = [None]
_RESENDER_LOCK = threading.Lock()


def _send_again(response: Any) -> None:
    """After a ``429``: wait as the run's throttle says and send the same request again, until
    the answer is not a 429 or the throttle gives up; the answer replaces the 429 in place.

    schemathesis 4.x's ``after_call`` hook is where a response may be changed ("you need to
    modify the response in-place"): the engine then judges and records the answer that came
    after the rate limit. The request is the very one sent (``response.request``, a prepared
    ``requests`` request: its auth header, body and Idempotency-Key unchanged).
    """
    from schemathesis import Response

    throttle, deadline = _THROTTLE[0], _DEADLINE[0]
    if throttle is None or response.status_code != THROTTLED:
        return
    with _RESENDER_LOCK:  # the workers' one session (requests pools connections per thread)
        session = _RESENDER[0] = _RESENDER[0] or http_clients.requests_session(_TLS[0])
    attempt = 0
    current = response
    while current.status_code == THROTTLED:
        asked = retry_after_of({k: ", ".join(v) for k, v in current.headers.items()})
        decision = throttle.throttled(asked, attempt, deadline=deadline)
        if not decision.retry:
            return  # left a 429: ``_collect`` keeps it out of every verdict
        time.sleep(decision.wait_s)
        attempt += 1
        sent = session.send(response.request, timeout=30, allow_redirects=False)
        current = Response.from_requests(sent, verify=response.verify)
    for name in Response.__slots__:
        try:
            value = getattr(current, name)
        except AttributeError:  # a lazily filled cache the fresh answer has not filled yet
            if hasattr(response, name):
                delattr(response, name)
            continue
        setattr(response, name, value)


#: The running property run's target (None outside a run): its creations' refs are noted.
_TARGET: list[Target | None] = [None]


def _note_created(case: Any, response: Any) -> None:
    """A generated creation's ref, noted in the target's refs: the scripted checks run beside
    the property run (``--concurrency``), and a ref both handed out is then known."""
    target = _TARGET[0]
    if target is None or case.operation.path not in CREATION_PATHS:
        return
    if not 200 <= response.status_code < 300:
        return
    body = _response_json(response)
    ref = body.get("ref") if isinstance(body, dict) else None
    if isinstance(ref, str):
        target.note_generated_ref(ref)


class BodyTooLarge(OSError):
    """An answer of a generated request passed the run's size cap: not read further. An
    ``OSError``, as a transport failure is: the case got no usable answer."""


def capped_body(max_bytes: int) -> Callable[..., Any]:
    """A requests response hook that reads the body now, chunk by chunk as it inflates, and
    stops one chunk past ``max_bytes`` (a declared length over it before a byte is read).

    schemathesis reads every answer whole (``response.content``); against a target that sends
    a 50 MB body or an endless one, eight workers at once took the run past 3 GB. The body read
    here is handed on as the response's ``raw`` stream, which requests then reads as usual."""

    def hook(response: Any, *_args: Any, **_kwargs: Any) -> Any:
        try:
            body = BoundedBody(response.headers, max_bytes)
            for chunk in response.raw.stream(READ_CHUNK, decode_content=True):
                body.add(chunk)
        except ResponseTooLarge as exc:
            response.close()
            raise BodyTooLarge(str(exc)) from None
        response.raw = _ReadBody(bytes(body.data), response.raw)
        return response

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


class PropertyBudgetExceeded(RuntimeError):
    """The property run used its time budget: the remaining cases are not sent."""


#: Set by ``stop``: the running property run sends nothing more (the run was interrupted).
_STOP = threading.Event()


def stop() -> None:
    """Stop the running property run at its next request: Ctrl-C reached another thread than
    the one it runs in (``--concurrency``), and schemathesis never hears of it."""
    _STOP.set()


def _pace() -> None:
    """Stop at the run's budget; wait while the target asked to (after another request's 429)."""
    deadline = _DEADLINE[0]
    if _STOP.is_set():
        raise KeyboardInterrupt
    if deadline is not None and time.monotonic() > deadline:
        raise PropertyBudgetExceeded("the property run used its time budget")
    throttle = _THROTTLE[0]
    pause = throttle.pause_s(deadline) if throttle is not None else 0.0
    if pause > 0:
        time.sleep(pause)


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


def _register_hook() -> None:
    global _HOOK_REGISTERED
    if _HOOK_REGISTERED:
        return
    import schemathesis

    @schemathesis.hook("before_call")
    def paysuite_fresh_idempotency_key(context: Any, case: Any, kwargs: Any) -> None:
        if not _FRESH_KEYS.is_set():
            return
        _pace()
        target = _TARGET[0]
        if target is not None:
            # requests' own per-request hooks, which schemathesis passes on: every answer of
            # the generated requests read under the run's size cap, as the checks' are
            hooks = kwargs.setdefault("hooks", {})
            hooks.setdefault("response", []).append(capped_body(target.limits.max_body_bytes))
        if case.operation.path in CREATION_PATHS:
            _fresh_key(case)

    @schemathesis.hook("after_call")
    def paysuite_honour_rate_limits(context: Any, case: Any, response: Any) -> None:
        if _FRESH_KEYS.is_set():
            _send_again(response)
            _note_created(case, response)

    @schemathesis.check
    class paysuite_chain_holds:  # noqa: N801 - schemathesis names failures after the class
        """What a creation created is found, by find and in the events list, with the values
        sent: the stateful chain judged on the document's own promise ("A transaction is
        identified by a unique reference key (ref) generated by the service")."""

        def __init__(self) -> None:
            self.created: dict[str, dict[str, Any]] = {}

        def after_response(self, ctx: Any, response: Any, case: Any) -> None:
            if not _FRESH_KEYS.is_set():
                return
            chain_step(self.created, case, response.status_code, _response_json(response))

    _HOOK_REGISTERED = True


def _response_json(response: Any) -> Any:
    try:
        return guarded_json.loads(response.content)
    except (ValueError, TypeError, AttributeError):
        return None


def _same(name: str, stored: Any, sent: Any) -> bool:
    from paysuite_core.request_data import same_number

    return same_number(stored, sent) if name == "client" else _close(stored, sent)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    return bool(a == b)


def chain_step(created: dict[str, dict[str, Any]], case: Any, status: int, body: Any) -> None:
    """Record a creation, or judge a find / ref-filtered listing of a recorded one.

    Raises ``AssertionError`` (schemathesis's custom-check failure) when a ref the target
    generated is not found, or found with other values than were sent.
    """
    path = case.operation.path
    if path in CREATION_PATHS:
        sent = case.body if isinstance(case.body, dict) else None
        if 200 <= status < 300 and isinstance(body, dict) and sent is not None:
            ref = body.get("ref")
            if isinstance(ref, str):
                created[ref] = {
                    "kind": "CASHIN" if path.endswith("cashin") else "CASHOUT",
                    "amount": sent.get("amount"),
                    "client": sent.get("number"),
                }
        return
    if path == "/transactions/find/{ref}":
        ref = (case.path_parameters or {}).get("ref")
        if not isinstance(ref, str) or ref not in created:
            return
        expected = created[ref]
        if status == 404:
            raise AssertionError(f"find of the ref {ref} that creation returned answered 404")
        if not (200 <= status < 300) or not isinstance(body, dict):
            return
        wrong = [
            f"{name} {body.get(name)!r}, sent {value!r}"
            for name, value in (("ref", ref), *expected.items())
            if not _same(name, body.get(name), value)
        ]
        if wrong:
            raise AssertionError(f"find of the created {ref} answered " + "; ".join(wrong))
        return
    if path == "/events/transactions":
        # A generated query may repeat ``ref`` (a list): not a ref a creation returned.
        ref = (case.query or {}).get("ref")
        if not isinstance(ref, str) or ref not in created:
            return
        if not (200 <= status < 300) or not isinstance(body, dict):
            return
        if set(case.query or {}) - {"ref"}:
            return  # another filter (even an empty one: its meaning is not shown) may exclude it
        expected = created[ref]
        records = [e for e in body.get("transactions") or [] if isinstance(e, dict)]
        mine = [
            e
            for e in records
            if isinstance(e.get("data"), dict)
            and e["data"].get("ref") == ref
            and e.get("event_kind") == "transaction:created"
        ]
        if not mine:
            # Not yet listed is no verdict: an implementation may record its events a moment
            # after it answers (EVT-003 and LIFE-001 wait for them); a listed one must match.
            return
        data = mine[0]["data"]
        wrong = [
            f"data.{name} {data.get(name)!r}, sent {value!r}"
            for name, value in expected.items()
            if not _same(name, data.get(name), value)
        ]
        if wrong:
            raise AssertionError(f"the created event of {ref} records " + "; ".join(wrong))


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
    from schemathesis.core.parameters import ParameterLocation

    negative_query = bool(meta and meta.is_negative_at(ParameterLocation.QUERY))
    negative_header = bool(meta and meta.is_negative_at(ParameterLocation.HEADER))
    drop_header = negative_query and not negative_header
    container = case.headers if drop_header else case.query
    for name in [n for n in container if n.lower() == "idempotency-key"]:
        del container[name]


# --- auth ------------------------------------------------------------------------------------
class _Tokens:
    """Token pairs per application for the generated requests (kept out of the evidence).

    Sent through a ``RecordingClient`` that records nowhere: the run's limits (an endless or
    huge answer to authorize is cut at the size cap, not read into memory), its throttle and
    its TLS settings, as every other request of the suite."""

    def __init__(
        self,
        base_url: str,
        ttl_s: float,
        throttle: Throttle | None = None,
        tls: TLSSettings | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.client = RecordingClient(base_url, lambda: None, limits, throttle, tls)
        self.ttl_s = ttl_s
        self.flows: dict[str, tokens.TokenFlow] = {}

    @contextmanager
    def send(self, request: tokens.Request) -> Iterator[Reply]:
        """The token module's transport."""
        yield self.client.request(
            request.method, request.path, json=request.json, headers=dict(request.headers)
        )

    def access(self, app: Application) -> str:
        with self.lock:
            flow = self.flows.get(app.client_id)
            if flow is None:
                flow = checking_flow(self.send, app, self.ttl_s)
                self.flows[app.client_id] = flow
            try:
                return flow.access()
            except (tokens.AuthError, TargetUnreachable, CouldNotCheck) as exc:
                raise RuntimeError(str(exc)) from None


def _app_for(target: Target, path: str) -> Application | None:
    if path == "/transactions/cashout":
        return target.writer("CASHOUT")
    if path == "/transactions/cashin":
        return target.writer("CASHIN")
    return target.app("read-write") or target.reader()


# --- the run -----------------------------------------------------------------------------------
#: schemathesis's phases, in the order one engine runs them.
PHASES = ("examples", "coverage", "fuzzing", "stateful")
#: With several workers (``--concurrency``), the phases run side by side in these groups, each
#: one engine of its own in a thread (``_side_by_side``). In one engine they run one after
#: another, and each lasts as long as its slowest operation (a worker takes one operation at a
#: time; the stateful phase has one thread): side by side, the run lasts its longest group.
PHASE_GROUPS = (("examples", "coverage"), ("fuzzing",), ("stateful",))


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
    import schemathesis

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


def run_properties(target: Target, spec: dict[str, Any], deadline: float | None = None) -> PropRun:
    """Run schemathesis against ``target`` with ``spec`` (already loaded, will be patched).

    ``deadline`` (monotonic): no case is sent after it, so a slow or hanging target costs at
    most the budget and one request timeout.
    """
    from schemathesis.engine import events

    started = time.monotonic()
    result = PropRun()
    assert target.config is not None
    patched = patch_spec(
        spec, base_url=target.base_url, config=target.config, profile=target.profile
    )
    _register_hook()  # before the config names the chain check
    schemas = [
        _schema(target, patched, phases, result)
        for phases in (PHASE_GROUPS if target.concurrency > 1 else (PHASES,))
    ]
    suite_tokens = _Tokens(
        target.base_url,
        float(target.config.access_token_ttl_s),
        target.throttle,
        target.tls,
        target.limits,
    )
    suite_tokens.client.masker = target.masker  # what it is issued, the failures' curls name
    secured = {
        path
        for path, _method, operation in operations(patched)
        if operation.get("security", patched.get("security")) not in ([], None)
    }

    class SuiteAuth:
        def get(self, case: Any, context: Any) -> str | None:
            path = context.operation.path
            if path not in secured:
                return None
            app = _app_for(target, path)
            return suite_tokens.access(app) if app is not None else None

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = dict(case.headers or {})
            case.headers["Authorization"] = f"Bearer {data}"

    for schema in schemas:
        schema.auth(refresh_interval=None)(SuiteAuth)
    _DEADLINE[0] = deadline
    _THROTTLE[0] = target.throttle
    _TARGET[0] = target
    _TLS[0] = target.tls
    _STOP.clear()
    _FRESH_KEYS.set()
    restore = _authorize_as_root()
    try:
        for event in _side_by_side(schemas):
            if isinstance(event, events.ScenarioFinished):
                result.scenarios += 1
                _collect(result, event, target.profile)
            elif isinstance(event, events.NonFatalError):
                text = f"{event.label}: {_error_text(event)}"
                if _is_unanswered(text):
                    result.errors.append(text)
                    result.unanswered.append(text)
                else:
                    _engine_error(result, f"the property run ({event.label})", event.value)
            elif isinstance(event, events.FatalError):
                _engine_error(result, "the property run", event.exception)
            elif isinstance(event, events.Interrupted):
                # schemathesis swallows Ctrl-C and ends its run early; a partial run must not
                # be judged as a whole one, so the interruption goes on to pytest.
                raise KeyboardInterrupt
    finally:
        restore()
        _FRESH_KEYS.clear()
        _DEADLINE[0] = None
        _THROTTLE[0] = None
        _TARGET[0] = None
        _TLS[0] = None
        if _RESENDER[0] is not None:
            _RESENDER[0].close()
            _RESENDER[0] = None
        suite_tokens.client.close()
    if deadline is not None and time.monotonic() > deadline:
        result.stopped = (
            f"the property run stopped at its time budget after {result.scenarios} scenarios: "
            "what it did not reach is not judged"
        )
    result.duration_s = round(time.monotonic() - started, 2)
    return result


def _schema(
    target: Target, patched: dict[str, Any], phases: tuple[str, ...], result: PropRun
) -> BaseSchema:
    """The schema one engine runs ``phases`` of, without the creations no configured
    application may make (noted in ``result.excluded``)."""
    import schemathesis

    bundled = target.started_stub
    config = build_config(
        target.seed,
        target.profile,
        target.base_url,
        BUNDLED_MAX_EXAMPLES if bundled else MAX_EXAMPLES,
        shrink=not bundled,
        tls=target.tls,
        workers=target.concurrency,
        phases=phases,
    )
    schema: BaseSchema = schemathesis.openapi.from_dict(patched, config=config)
    for path in CREATION_PATHS:
        if _app_for(target, path) is None:
            kind = path.rsplit("/", 1)[-1]
            result.excluded[f"POST {path}"] = f"no configured application may {kind}"
            schema = schema.exclude(path=path)
    return schema


def _side_by_side(schemas: list[BaseSchema]) -> Iterator[Any]:
    """The events of one schemathesis engine per schema, each run in a thread of its own,
    as they come; a single one runs here. Whatever ends the consumer early (an interruption,
    an error) stops the others at their next request (``_STOP``). Several workers or engines
    parse source at once: ``ast.parse`` is serialized meanwhile (``conformance.ast_guard``)."""
    from schemathesis.engine import from_schema

    from conformance.ast_guard import serialized

    if len(schemas) == 1:  # one engine, one worker (--concurrency 1)
        yield from from_schema(schemas[0]).execute()
        return
    with serialized():
        yield from _engines(schemas)


def _engines(schemas: list[BaseSchema]) -> Iterator[Any]:
    """``_side_by_side``'s threads, one engine each."""
    from schemathesis.engine import from_schema

    arrivals: queue.Queue[Any] = queue.Queue()
    done = object()

    def drive(schema: BaseSchema) -> None:
        try:
            for event in from_schema(schema).execute():
                arrivals.put(event)
        except BaseException as exc:  # noqa: BLE001 - raised again in the consumer's thread
            arrivals.put(exc)
        finally:
            arrivals.put(done)

    threads = [
        threading.Thread(target=drive, args=(schema,), name="paysuite-properties", daemon=True)
        for schema in schemas
    ]
    for thread in threads:
        thread.start()
    finished = 0
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
            _STOP.set()
        for thread in threads:
            thread.join()


def _is_unanswered(text: str) -> bool:
    """A transport failure (no HTTP answer), as schemathesis words its network errors."""
    lowered = text.lower()
    if "time budget" in lowered:
        return False  # our own stop, not the target's silence
    return any(
        marker in lowered
        for marker in ("network error", "timeout", "timed out", "connection", "refused")
    )


def _authorize_as_root() -> Callable[[], None]:
    """Let the stateful phase start from authorize, so authorize -> refresh links are followed.

    schemathesis's dependency analysis reads ``client_id`` as a reference to a resource nothing
    produces and so never starts a scenario from authorize. Our spec pins positive credentials
    to a configured application, so authorize does succeed; the override is scoped to this run.
    """
    from schemathesis.specs.openapi import stateful

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


def _engine_error(result: PropRun, where: str, exc: BaseException) -> None:
    """Keep an engine error once (the same exception of the same operation recurs per case)."""
    error = engine_error(where, exc)
    if all((e.where, e.message) != (error.where, error.message) for e in result.engine_errors):
        result.engine_errors.append(error)


def _error_text(event: Any) -> str:
    info = getattr(event, "info", None)
    if info is not None:
        return f"{getattr(info, 'title', '')}: {getattr(info, 'message', '')}".strip()
    return str(getattr(event, "value", event))


def _collect(result: PropRun, event: Any, profile: str) -> None:
    recorder = event.recorder
    phase = str(getattr(event.phase, "value", event.phase))
    for case_id, interaction in recorder.interactions.items():
        if interaction.response is None:
            continue
        node = recorder.cases.get(case_id)
        label = f"{node.value.method} {node.value.path}" if node is not None else recorder.label
        key = (label, phase, interaction.response.status_code)
        result.responses[key] = result.responses.get(key, 0) + 1
        if interaction.response.status_code == THROTTLED:
            result.throttled_out += 1
    for case_id, nodes in recorder.checks.items():
        for node in nodes:
            info = node.failure_info
            if info is None or str(getattr(node.status, "value", node.status)) != "failure":
                continue
            failure = _failure(recorder, case_id, node, phase, profile)
            if failure is not None:
                result.add(failure)


def _failure(
    recorder: Any, case_id: str, node: Any, phase: str, profile: str
) -> PropFailure | None:
    """A failed check of one case as a ``PropFailure``, or None when the document allows it."""
    case_node = recorder.cases.get(case_id)
    case = case_node.value if case_node is not None else None
    request, response = _interaction(recorder.interactions.get(case_id))
    status = response["status"] if response is not None else None
    check_id = CHECK_TO_ID.get(node.name)
    if check_id is None or _seed_tolerates(profile, node.name, status) or status == THROTTLED:
        return None  # a 429 is the target's rate limit, not an answer to the case: not judged
    message = str(getattr(node.failure_info.failure, "message", ""))
    if (
        node.name == "content_type_conformance"
        and profile != "reference"
        and (status in (404, 405) or (case is not None and _negative_path(case)))
    ):
        # No route of the implementation took the request (a refresh path it does not serve,
        # a mangled URL): the web framework answered, not the API. FMT-006 holds the API's own
        # errors to JSON.
        return None
    if node.name == "negative_data_rejection" and case is not None:
        broken = _document_violation(case)
        if broken is None and profile != "reference":
            return None  # only a reference choice forbids it: not judged in the seed view
        if broken is not None:
            message = f"{message}\nThe document makes it invalid: {broken}"
        else:
            message = f"{message}\nNegative in: {_negative_parts(case)} (RC constraints)"
    return PropFailure(
        check_id=check_id,
        check_name=node.name,
        operation=f"{case.method} {case.path}" if case is not None else recorder.label,
        phase=phase,
        title=str(getattr(node.failure_info.failure, "title", "")),
        message=message,
        curl=node.failure_info.code_sample,
        status=status,
        request=request,
        response=response,
    )


def _interaction(
    interaction: Any,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The request and response of a recorded interaction as evidence dicts, credentials
    shortened and masked as in the suite's own evidence."""
    from paysuite_core.results.masking import shown, shown_url

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


def _negative_path(case: Any) -> bool:
    """Whether the case's path parameters were generated invalid (a mangled URL)."""
    from schemathesis.core.parameters import ParameterLocation

    meta = getattr(case, "meta", None)
    return bool(meta is not None and meta.is_negative_at(ParameterLocation.PATH))


def _negative_parts(case: Any) -> str:
    """Which parts of a negative case were generated invalid, for the failure message."""
    meta = getattr(case, "meta", None)
    components = getattr(meta, "components", None) or {}
    parts = [
        str(getattr(location, "value", location))
        for location, component in components.items()
        if getattr(getattr(component, "mode", None), "is_negative", False)
    ]
    description = getattr(getattr(getattr(meta, "phase", None), "data", None), "description", "")
    text = ", ".join(parts) or "unknown"
    return f"{text} ({description})" if description else text


def _document_violation(case: Any) -> str | None:
    from schemathesis.core import NotSet

    from paysuite_core.driver.document_validity import violation

    body = case.body
    return violation(
        case.operation.path,
        None if isinstance(body, NotSet) else body,
        case.headers,
        case.query,
        case.path_parameters,
        has_body=not isinstance(body, NotSet),
    )


def _seed_tolerates(profile: str, check_name: str, status: int | None) -> bool:
    """The seed profile takes any 4xx as a rejection (schemathesis insists on 401 for auth)."""
    if profile == "reference" or status is None:
        return False
    return check_name in ("missing_required_header", "ignored_auth") and 400 <= status < 500


def _headers(headers: Any) -> dict[str, str]:
    """Flatten schemathesis's header lists; shorten the bearer token like our own evidence."""
    from paysuite_core.results.masking import shown_headers

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
    except Exception:  # noqa: BLE001 - evidence is best effort
        return None
    return _bytes_text(content) if isinstance(content, bytes) else str(content)[:2000]
