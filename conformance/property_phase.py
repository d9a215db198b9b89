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
the same hook paces each request while the target asked to wait, and a ``429``'s request is sent
again after its ``Retry-After``, the answer that follows in its place, so the engine judges that
one. A 429 the throttle no longer retries (its budget spent) is never a PROP failure: those cases
are not judged, and the PROP checks are errors that say so. How all this meets schemathesis is
``conformance.schemathesis_adapter``; this module keeps the phase's logic.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance import schemathesis_adapter as adapter
from conformance.schemathesis_adapter import CHECK_TO_ID, CREATION_PATHS
from paysuite_core import tokens
from paysuite_core.bounded_http import Limits
from paysuite_core.driver.document_validity import violation
from paysuite_core.driver.http import RecordingClient, Reply, TargetUnreachable
from paysuite_core.driver.spec_patch import operations, patch_spec
from paysuite_core.driver.target import checking_flow
from paysuite_core.results.outcome import CouldNotCheck, EngineError, engine_error
from paysuite_core.throttle import THROTTLED, Throttle
from paysuite_core.tls import TLSSettings

if TYPE_CHECKING:
    from paysuite_core.driver.target import Target
    from paysuite_core.results.masking import Masker
    from paysuite_core.target_config import Application

#: The budget against the bundled stub (``paysuite conform`` with neither --target nor --config):
#: the deterministic examples and coverage phases run whole (every operation, every documented
#: boundary and negative part); fuzzing and the stateful chains get fewer examples, so a run of
#: the stub's self-check (and of each mutant of the mutation score) stays near 10 s. Nor are
#: failing examples shrunk there: shrinking finds nothing new, and one schemathesis error on a
#: generated events-list query (reference profile) cost 5-25 s of it.
BUNDLED_MAX_EXAMPLES = 10
FAILURES_KEPT_PER_CHECK = 5


@dataclass
class PropFailure(adapter.Finding):
    """A failed schemathesis check the phase judges a failure of its PROP check."""

    check_id: str = ""

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
        _expect(f"find of the created {ref} answered ", "", body, {"ref": ref, **expected})
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
        _expect(f"the created event of {ref} records ", "data.", mine[0]["data"], expected)


def _expect(what: str, prefix: str, got: dict[str, Any], sent: dict[str, Any]) -> None:
    """Raise (the chain check's failure) naming each of ``sent``'s values ``got`` differs in."""
    wrong = [
        f"{prefix}{name} {got.get(name)!r}, sent {value!r}"
        for name, value in sent.items()
        if not _same(name, got.get(name), value)
    ]
    if wrong:
        raise AssertionError(what + "; ".join(wrong))


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
#: With several workers (``--concurrency``), the phases run side by side in these groups, each
#: one engine of its own in a thread. In one engine they run one after another, and each lasts
#: as long as its slowest operation (a worker takes one operation at a time; the stateful phase
#: has one thread): side by side, the run lasts its longest group.
PHASE_GROUPS = (("examples", "coverage"), ("fuzzing",), ("stateful",))


def run_properties(target: Target, spec: dict[str, Any], deadline: float | None = None) -> PropRun:
    """Run schemathesis against ``target`` with ``spec`` (already loaded, will be patched).

    ``deadline`` (monotonic): no case is sent after it, so a slow or hanging target costs at
    most the budget and one request timeout.
    """
    started = time.monotonic()
    result = PropRun()
    assert target.config is not None
    patched = patch_spec(
        spec, base_url=target.base_url, config=target.config, profile=target.profile
    )
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

    def token(path: str) -> str | None:
        app = _app_for(target, path) if path in secured else None
        return suite_tokens.access(app) if app is not None else None

    for path in CREATION_PATHS:
        if _app_for(target, path) is None:
            kind = path.rsplit("/", 1)[-1]
            result.excluded[f"POST {path}"] = f"no configured application may {kind}"
    bundled = target.started_stub
    schemas = [
        adapter.open_schema(
            patched,
            adapter.build_config(
                target.seed,
                target.profile,
                target.base_url,
                BUNDLED_MAX_EXAMPLES if bundled else adapter.MAX_EXAMPLES,
                shrink=not bundled,
                tls=target.tls,
                workers=target.concurrency,
                phases=phases,
            ),
            [path for path in CREATION_PATHS if f"POST {path}" in result.excluded],
            token,
        )
        for phases in (PHASE_GROUPS if target.concurrency > 1 else (adapter.PHASES,))
    ]
    run = adapter.RunContext(target, chain_step, deadline)
    try:
        for outcome in adapter.outcomes(run, schemas):
            if isinstance(outcome, adapter.Scenario):
                result.scenarios += 1
                _collect(result, outcome, target.profile)
            elif _is_unanswered(outcome.text):
                result.errors.append(outcome.text)
                result.unanswered.append(outcome.text)
            else:
                _engine_error(result, outcome.where, outcome.exception)
    finally:
        suite_tokens.client.close()
    if deadline is not None and time.monotonic() > deadline:
        result.stopped = (
            f"the property run stopped at its time budget after {result.scenarios} scenarios: "
            "what it did not reach is not judged"
        )
    result.duration_s = round(time.monotonic() - started, 2)
    return result


def _is_unanswered(text: str) -> bool:
    """A transport failure (no HTTP answer), as schemathesis words its network errors."""
    lowered = text.lower()
    if "time budget" in lowered:
        return False  # our own stop, not the target's silence
    return any(
        marker in lowered
        for marker in ("network error", "timeout", "timed out", "connection", "refused")
    )


def _engine_error(result: PropRun, where: str, exc: BaseException) -> None:
    """Keep an engine error once (the same exception of the same operation recurs per case)."""
    error = engine_error(where, exc)
    if all((e.where, e.message) != (error.where, error.message) for e in result.engine_errors):
        result.engine_errors.append(error)


def _collect(result: PropRun, scenario: adapter.Scenario, profile: str) -> None:
    for key in scenario.answers:
        result.responses[key] = result.responses.get(key, 0) + 1
        if key[2] == THROTTLED:
            result.throttled_out += 1
    for finding in scenario.findings:
        failure = _failure(finding, profile)
        if failure is not None:
            result.add(failure)


def _failure(found: adapter.Finding, profile: str) -> PropFailure | None:
    """A failed check of one case as a ``PropFailure``, or None when the document allows it."""
    name, status, message = found.check_name, found.status, found.message
    check_id = CHECK_TO_ID.get(name)
    if check_id is None or _seed_tolerates(profile, name, status) or status == THROTTLED:
        return None  # a 429 is the target's rate limit, not an answer to the case: not judged
    if (
        name == "content_type_conformance"
        and profile != "reference"
        and (status in (404, 405) or found.negative_path)
    ):
        # No route of the implementation took the request (a refresh path it does not serve,
        # a mangled URL): the web framework answered, not the API. FMT-006 holds the API's own
        # errors to JSON.
        return None
    if name == "negative_data_rejection" and found.parts is not None:
        broken = violation(**found.parts)
        if broken is None and profile != "reference":
            return None  # only a reference choice forbids it: not judged in the seed view
        if broken is not None:
            message = f"{message}\nThe document makes it invalid: {broken}"
        else:
            message = f"{message}\nNegative in: {found.negative_parts} (RC constraints)"
    return PropFailure(**{**vars(found), "check_id": check_id, "message": message})


def _seed_tolerates(profile: str, check_name: str, status: int | None) -> bool:
    """The seed profile takes any 4xx as a rejection (schemathesis insists on 401 for auth)."""
    if profile == "reference" or status is None:
        return False
    return check_name in ("missing_required_header", "ignored_auth") and 400 <= status < 500
