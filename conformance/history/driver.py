"""One history against the target: each request sent through the suite's own clients, recorded
as a numbered step, and judged by the model as its answer arrives.

The driver owns what the history made: its transactions, keys, customer numbers and token
pairs (a pair of its own per application, so a refresh spends nobody else's). The first answer
the model does not allow raises ``Violation`` with every step so far: the history as a person
reads it, and the request where model and target parted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.model.judge import judge
from conformance.model.records import (
    Act,
    Answer,
    Authorize,
    Create,
    Find,
    ListEvents,
    Problem,
    Refresh,
    Request,
    Spelling,
)
from conformance.model.state import State, World
from paysuite_core.driver.api import EVENTS, find_path, kind_path

if TYPE_CHECKING:
    from paysuite_core.driver.http import RecordingClient, Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.results.evidence import Recorded
    from paysuite_core.target_config import Application
    from paysuite_core.tokens import TokenPair

#: Pages of this size in the walks, so that paging is exercised on a few events.
WALK_LIMIT = 3
MAX_WALK_PAGES = 40


@dataclass
class Step:
    """One request of a history and its answer (what the report lists and the replay sends)."""

    index: int
    request: Request
    answer: Answer
    at: float
    done: float
    exchanges: list[Recorded] = field(default_factory=list)
    thread: int = 0

    def line(self) -> str:
        shown = describe(self.request)
        status = "no answer" if self.answer.status is None else str(self.answer.status)
        return f"{self.index}. {shown} -> {status}{_answer_gist(self.answer)}"


class Violation(AssertionError):
    """The model allows no state after a step: the history and where it parted."""

    def __init__(self, steps: list[Step], problem: Problem) -> None:
        super().__init__(problem.line())
        self.steps = list(steps)
        self.problem = problem


def describe(request: Request) -> str:
    """A request in a few words (the numbered list of a failure)."""
    if isinstance(request, Create):
        key = f", {request.channel} key {request.key}" if request.key is not None else ""
        slash = " (path with a trailing slash)" if request.spelling == "slash" else ""
        return (
            f"{request.app}: {request.kind.lower()} {request.amount} for {request.number}"
            f"{key}{slash}"
        )
    if isinstance(request, Find):
        spelled = "" if request.spelling == "canonical" else f" (spelled {request.spelling})"
        return f"{request.app}: find {request.ref}{spelled}"
    if isinstance(request, ListEvents):
        filters = ", ".join(f"{n}={v}" for n, v in request.filters) or "no filter"
        paging = f", limit {request.limit} offset {request.offset}" if request.limit else ""
        walk = "every page of " if request.walk else ""
        spelled = "" if request.spelling == "canonical" else f" (spelled {request.spelling})"
        return f"{request.app}: {walk}events list, {filters}{paging}{spelled}"
    if isinstance(request, Act):
        return f"customer: {request.outcome} {request.ref}"
    if isinstance(request, Refresh):
        return f"{request.app}: refresh pair {request.token} on {request.path} -> {request.label}"
    return f"{request.app}: authorize pair {request.label} (access lives {request.ttl_s:g} s)"


def _answer_gist(answer: Answer) -> str:
    body = answer.body
    if isinstance(body, list):
        counts = [len(p.get("transactions") or []) for p in body if isinstance(p, dict)]
        return f" ({len(counts)} pages, {sum(counts)} events)"
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("transactions"), list):
        return f" ({len(body['transactions'])} events, total {body.get('total')!r})"
    shown = {k: body[k] for k in ("ref", "kind", "status", "amount", "code") if k in body}
    return f" {shown}" if shown else ""


class Driver:
    """Sends a history's requests and judges each answer against the model."""

    def __init__(
        self,
        target: Target,
        client: RecordingClient,
        world: World,
        *,
        on_step: Callable[[Step], None] | None = None,
    ) -> None:
        self.target = target
        self.client = client
        self.world = world
        self.state = State()
        self.steps: list[Step] = []
        #: (first) reference-choice problem seen: judged apart (MODEL-008)
        self.reference_problem: tuple[list[Step], Problem] | None = None
        self.apps = {app.client_id: app for app in target.apps()}
        self.labels: dict[str, str] = {}
        self.pairs: dict[str, TokenPair] = {}
        self.numbers: list[str] = []
        self.keys: list[str] = []
        self.refs: list[str] = []
        self.acted: set[str] = set()
        #: refs the customer answered long enough ago: pending is no answer for them now
        self.acted_due: set[str] = set()
        self._serial = 0
        #: seconds this history spent in its wait rule
        self.waited = 0.0
        self._on_step = on_step

    # --- judging ------------------------------------------------------------------------
    def record(
        self, request: Request, answer: Answer, at: float, done: float, replies: list[Reply]
    ) -> None:
        step = Step(
            len(self.steps) + 1, request, answer, at, done, [reply.exchange for reply in replies]
        )
        self.steps.append(step)
        if self._on_step is not None:
            self._on_step(step)
        judged = judge(self.world, self.state, request, answer, at, done)
        problem = judged.problem
        if problem is not None and problem.reference:
            if self.reference_problem is None and self.world.narrowing == "reference":
                self.reference_problem = (list(self.steps), problem)
            problem = None
        if problem is not None or not judged.states:
            raise Violation(self.steps, problem or Problem("MODEL-004", "no state", "?"))
        self.state = judged.states[0]

    # --- tokens -------------------------------------------------------------------------
    def token_of(self, app: Application) -> tuple[str, str]:
        """(label, access token) of the history's current pair for ``app``; a pair past half
        its life (or within the clock slack of its end) is replaced by a new one, as a client
        would: on a target whose tokens live a second or two, a history kept on its first pair
        sends nothing but expired tokens after that, and the model excuses every refusal."""
        token = self.state.token(self.labels.get(app.client_id, ""))
        renew_s = min(self.ttl_s() / 2, self.world.skew_s)
        if token is not None and time.monotonic() > token.expires - renew_s:
            self.authorize(app)
        if app.client_id not in self.pairs:
            self.authorize(app)
        return self.labels[app.client_id], self.pairs[app.client_id].access

    def _label(self, app: Application) -> str:
        self._serial += 1
        return f"{app.client_id}#{self._serial}"

    def authorize(self, app: Application, ttl_s: float | None = None) -> str:
        label = self._label(app)
        at = time.monotonic()
        pair = self.target.own_pair(app) if ttl_s is None else self.target.short_lived_pair(app)
        done = time.monotonic()
        ttl = ttl_s if ttl_s is not None else self.ttl_s()
        self.record(
            Authorize(app.client_id, label, ttl), Answer(200, {"access": pair.access}), at, done, []
        )
        if ttl_s is None:
            self.labels[app.client_id] = label
            self.pairs[app.client_id] = pair
        else:
            self.pairs[label] = pair
        return label

    def ttl_s(self) -> float:
        config = self.target.config
        return float(config.access_token_ttl_s) if config is not None else 900.0

    def refresh(self, app: Application, path: str) -> None:
        label, _ = self.token_of(app)
        pair = self.pairs[app.client_id]
        if not pair.refresh:
            return
        new = self._label(app)
        at = time.monotonic()
        reply = self.target.refresh(pair.refresh, path)
        done = time.monotonic()
        answer = Answer(reply.status, reply.body)
        self.record(
            Refresh(app.client_id, label, new, path, self.ttl_s()), answer, at, done, [reply]
        )
        access, refresh = reply.get("access"), reply.get("refresh")
        if reply.ok and isinstance(access, str):
            from paysuite_core.tokens import TokenPair

            now = time.time()
            self.pairs[app.client_id] = TokenPair(
                access, refresh if isinstance(refresh, str) else None, None, now, now + self.ttl_s()
            )
            self.labels[app.client_id] = new

    # --- operations ------------------------------------------------------------------------
    def _send(self, request: Request, send: Callable[[], Reply]) -> Reply:
        """``send`` (a request through ``self.client``), recorded and judged as ``request``."""
        at = time.monotonic()
        reply = send()
        done = time.monotonic()
        self.record(request, Answer(reply.status, reply.body), at, done, [reply])
        return reply

    def create(
        self,
        app: Application,
        kind: str,
        number: str,
        key: str | None,
        channel: str,
        spelling: Spelling = "canonical",
        fraction: float = 0.0,
    ) -> Reply:
        """A creation; ``fraction`` is added to the drawn amount when the bounds allow it (the
        document's amount is a number: an amount as created, found and listed, fraction kept)."""
        label, token = self.token_of(app)
        amount: int | float = self.target.amount()
        if fraction and amount + fraction <= self.target.amounts.high:
            amount += fraction
        request = Create(
            app.client_id,
            label,
            "CASHIN" if kind == "CASHIN" else "CASHOUT",
            amount,
            number,
            key,
            "query" if channel == "query" else "header",
            spelling,
        )
        headers = {"Idempotency-Key": key} if key is not None and channel != "query" else {}
        params = {"Idempotency-Key": key} if key is not None and channel == "query" else None
        path = kind_path(kind) + ("/" if spelling == "slash" else "")
        body = {"amount": amount, "number": number}
        reply = self._send(
            request,
            lambda: self.client.post(
                path, token=token, json=body, headers=dict(headers), params=params
            ),
        )
        if key is not None and key not in self.keys:
            self.keys.append(key)
        ref = reply.get("ref")
        if reply.ok and isinstance(ref, str) and ref not in self.refs:
            self.refs.append(ref)
            self.target.note_generated_ref(ref)
        return reply

    def find(
        self,
        app: Application,
        ref: str,
        spelling: Spelling = "canonical",
        expect_processed: bool = False,
    ) -> Reply:
        label, token = self.token_of(app)
        written = ref.upper() if spelling == "upper" else ref
        path = find_path(written) + ("/" if spelling == "slash" else "")
        request = Find(app.client_id, label, ref, spelling, expect_processed)
        return self._send(request, lambda: self.client.get(path, token=token))

    def list_events(
        self,
        app: Application,
        filters: dict[str, str],
        *,
        limit: int | None = None,
        spelling: Spelling = "canonical",
        sent: dict[str, str] | None = None,
    ) -> Reply:
        """One page; ``sent``: the filters as written on the wire when spelled otherwise."""
        label, token = self.token_of(app)
        params: dict[str, str | int] = dict(sent or filters)
        if limit is not None:
            params.update(limit=limit, offset=0)
        request = ListEvents(
            app.client_id,
            label,
            tuple(sorted(filters.items())),
            limit,
            0 if limit is not None else None,
            spelling=spelling,
        )
        return self._send(request, lambda: self.client.get(EVENTS, token=token, params=params))

    def walk(self, app: Application, filters: dict[str, str]) -> None:
        """Every page of the list under ``filters``, judged as one answer."""
        label, token = self.token_of(app)
        pages: list[object] = []
        replies: list[Reply] = []
        at = time.monotonic()
        limit: int | None = WALK_LIMIT
        offset = 0
        status: int | None = None
        for _ in range(MAX_WALK_PAGES):
            params: dict[str, str | int] = dict(filters)
            if limit is not None:
                params.update(limit=limit, offset=offset)
            reply = self.client.request("GET", EVENTS, token=token, params=params)
            replies.append(reply)
            if limit is not None and reply.rejected and not pages:
                limit = None  # the target takes no paging: one page
                continue
            status = reply.status
            if not reply.ok:
                break
            pages.append(reply.body)
            items = reply.get("transactions")
            count = len(items) if isinstance(items, list) else 0
            total = reply.get("total")
            if limit is None or count == 0 or count > limit:
                break  # one page, or a target that ignores limit: everything came at once
            offset += count
            if isinstance(total, int) and offset >= total:
                break
        done = time.monotonic()
        request = ListEvents(
            app.client_id, label, tuple(sorted(filters.items())), limit, 0, walk=True
        )
        self.record(
            request,
            Answer(status, pages if status and 200 <= status < 300 else None),
            at,
            done,
            replies,
        )

    def act(self, ref: str, outcome: str) -> None:
        customer = self.target.customer
        assert customer is not None
        from paysuite_core.driver.customer import DriverFailed

        at = time.monotonic()
        try:
            customer.act(ref, "confirm" if outcome == "confirm" else "cancel")
            answer = Answer(200)
        except DriverFailed:
            answer = Answer(409)
        done = time.monotonic()
        self.acted.add(ref)
        self.record(Act(ref, "confirm" if outcome == "confirm" else "cancel"), answer, at, done, [])

    def find_with(self, app: Application, ref: str, label: str) -> Reply:
        """Find with the pair named ``label`` (a short-lived one)."""
        request = Find(app.client_id, label, ref)
        access = self.pairs[label].access
        return self._send(request, lambda: self.client.get(find_path(ref), token=access))

    def reader_of(self, merchant: str | None) -> Application:
        """An application of ``merchant`` that may read: read-write or read first."""
        apps = [a for a in self.apps.values() if a.merchant == merchant] or list(self.apps.values())
        return sorted(apps, key=lambda a: a.privilege not in ("read-write", "read"))[0]

    def await_customers(self, timeout_s: float, only: str | None = None) -> None:
        """Wait (polling find, unjudged) until each transaction the customer answered reads a
        terminal status; those then due (or waited for the driver's whole time-out) must."""
        deadline = time.monotonic() + timeout_s
        for ref in sorted(self.acted) if only is None else [only]:
            txn = self.state.txn(ref)
            if txn is None or not txn.asked:
                continue
            token = self.token_of(self.reader_of(txn.merchant))[1]
            while True:
                reply = self.client.request("GET", find_path(ref), token=token)
                if not reply.ok or reply.get("status") != "pending":
                    self.acted_due.add(ref)
                    break
                if time.monotonic() >= deadline:
                    if timeout_s >= self.target.driver_timeout():
                        self.acted_due.add(ref)
                    break
                time.sleep(0.2)

    def unknown_ref(self) -> str:
        return str(uuid.uuid4())
