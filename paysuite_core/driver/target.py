"""The target under test, as the checks see it: configuration, clients, tokens and helpers.

One ``Target`` lives for the whole run. Checks reach the implementation only through it, so they
use nothing but the configured base URL, applications and customer driver: the suite works the
same against the bundled stub and against any other implementation.
"""

from __future__ import annotations

import functools
import random
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar, cast

from paysuite_core import tokens
from paysuite_core.api_types import JsonObject
from paysuite_core.bounded_http import CONFORM_LIMITS, Limits
from paysuite_core.driver.api import EVENTS, data_of, find_path, kind_path, same_amount
from paysuite_core.driver.customer import Customer, Outcome
from paysuite_core.driver.http import RecordingClient, Reply
from paysuite_core.request_data import AmountSource, NumberSource, same_number
from paysuite_core.results.evidence import Evidence
from paysuite_core.results.masking import Masker
from paysuite_core.results.outcome import not_applicable, precondition
from paysuite_core.target_config import (
    RWANDA_MOBILE_PATTERN,
    Application,
    HttpAction,
    TargetConfig,
)
from paysuite_core.throttle import Throttle
from paysuite_core.tls import TLSSettings
from paysuite_core.tokens import Send, TokenFlow, TokenPair
from paysuite_core.webhooks.receiver import RunningReceiver

T = TypeVar("T")
#: How long a count waits for events an implementation records a moment after answering.
EVENTUAL_S = 5.0
#: How long after the awaited count it looks again, for a late second execution.
SETTLE_S = 0.2
#: The same for the bundled stub, which records every event in the transaction that answers
#: the request: nothing arrives late there, and the look again still catches a double write.
BUNDLED_SETTLE_S = 0.05
#: How long a check waits for a change that should not come (a processed status changing).
QUIET_S = 1.0
BUNDLED_QUIET_S = 0.25

__all__ = ["Target", "TokenPair", "checking_flow"]


def checking_flow(
    send: Send, app: Application, ttl_s: float, authorize_at: HttpAction | None = None
) -> TokenFlow:
    """The suite's token policy: authorize anew once a third of the configured lifetime has
    passed, whatever ``expires`` the target sent (a wrong ``expires`` is a check's finding; it
    must not break every other check)."""
    return TokenFlow(
        send, app, fallback_ttl_s=ttl_s, trust_expires=False, renew_fraction=1 / 3,
        clock=time.monotonic, authorize_at=authorize_at,
    )  # fmt: skip


M = TypeVar("M", bound=Callable[..., Any])


def _one_caller_at_a_time(method: M) -> M:
    """``method`` under the target's ``_tokens_lock``. Checks that run at once share the
    session's token flows: two ``pair`` calls that find a pair due would each authorize, and a
    ``pair(app, fresh=True)`` might return the pair the other call stored."""

    @functools.wraps(method)
    def locked(self: Target, *args: object, **kwargs: object) -> Any:
        with self._tokens_lock:
            return method(self, *args, **kwargs)

    return cast("M", locked)


class Target:
    """Everything a check needs to talk to the implementation under test."""

    def __init__(
        self,
        config: TargetConfig | None,
        base_url: str,
        *,
        profile: str = "seed",
        seed: int = 0,
        started_stub: bool = False,
        limits: Limits | None = None,
        throttle: Throttle | None = None,
        tls: TLSSettings | None = None,
        concurrency: int = 1,
        masker: Masker | None = None,
    ) -> None:
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.profile = profile
        self.seed = seed
        self.started_stub = started_stub
        #: How many checks run at once (``--concurrency``), and the property phase's workers.
        self.concurrency = concurrency
        #: Waits for what an implementation records late; the bundled stub records nothing late.
        self.settle_s = BUNDLED_SETTLE_S if started_stub else SETTLE_S
        self.quiet_s = BUNDLED_QUIET_S if started_stub else QUIET_S
        # The running check's evidence and notes, per thread: checks that run at once
        # (``--concurrency``) each keep their own.
        self._local = threading.local()
        #: Guards what the checks share: the fresh numbers, the refs seen, the receiver.
        self._shared = threading.RLock()
        #: Held by ``pair`` (``_one_caller_at_a_time``): the token flows are the checks' too.
        self._tokens_lock = threading.RLock()
        self.limits = limits or CONFORM_LIMITS
        #: The run's throttle (rate limits honoured, ``paysuite_core.throttle``): every request
        #: of the checks, the customer driver's and the proxy's look-ups go through it.
        self.throttle = throttle if throttle is not None else Throttle()
        #: What to trust and present over HTTPS (``paysuite_core.tls``), for every client of
        #: the run: the checks', the customer driver's, the property phase's.
        self.tls = tls
        self.client = RecordingClient(
            self.base_url, lambda: self.current, self.limits, self.throttle, tls, masker=masker
        )
        #: The run's secrets (``paysuite_core.results.masking``), made by whoever starts it.
        self.masker = self.client.masker
        # Fresh numbers on every run: a persistent target must not see a number twice.
        self.numbers = NumberSource(
            config.effective_number_pattern if config else RWANDA_MOBILE_PATTERN,
            config.numbers if config else (),
            seed=secrets.randbits(64),
        )
        self.amounts = AmountSource(
            config.amount.min if config else 100, config.amount.max if config else 100_000, seed
        )
        self.rng = random.Random(seed)
        self._flows: dict[str, TokenFlow] = {}
        #: Every ref a creation returned in this run, to tell a reused ref from a new one.
        self.refs_seen: set[str] = set()
        #: Each ref's first creation, and every later creation that answered a ref again: a
        #: reuse makes the other checks errors ("could not check"), and FMT-001 fails on it
        #: whichever check's creation drew it.
        self.ref_origins: dict[str, Reply] = {}
        self.ref_reuses: list[Reply] = []
        #: Refs of the checks' creations that a creation of the property run was answered too
        #: (it runs beside them with ``--concurrency``; ``note_generated_ref``).
        self.refs_reused_by_generated: set[str] = set()
        #: The exchanges of creations made through ``created`` (for checks about something
        #: else), by ``id``: a concurrent run excuses only those when their ref turns out shared.
        self.helper_creations: set[int] = set()
        self.customer = Customer(config.customer, self.client) if config else None
        self._receiver: RunningReceiver | None = None
        #: What the checks set up when the run starts, by check ID (``checks.EARLY_SETUPS``).
        self.early: dict[str, Any] = {}
        self._closing = ExitStack()

    @property
    def current(self) -> Evidence | None:
        """The running check's evidence, where every exchange of this thread is recorded."""
        evidence: Evidence | None = getattr(self._local, "current", None)
        return evidence

    @current.setter
    def current(self, evidence: Evidence | None) -> None:
        self._local.current = evidence

    @property
    def notes(self) -> list[str]:
        """Observations of the running check that are no failure (what the target chose)."""
        notes: list[str] | None = getattr(self._local, "notes", None)
        if notes is None:
            notes = self._local.notes = []
        return notes

    @notes.setter
    def notes(self, notes: list[str]) -> None:
        self._local.notes = notes

    def note(self, text: str) -> None:
        """Record what the target chose where the document leaves it open (shown, not judged)."""
        self.notes.append(text)

    # --- configuration ----------------------------------------------------------------
    @property
    def reference(self) -> bool:
        return self.profile == "reference"

    @property
    def max_wait_s(self) -> float:
        return float(self.config.max_wait_s) if self.config else 30.0

    def apps(self, *privileges: str) -> list[Application]:
        if self.config is None:
            return []
        if not privileges:
            return list(self.config.applications)
        return [app for app in self.config.applications if app.privilege in privileges]

    def app(self, *privileges: str, merchant: str | None = None) -> Application | None:
        for app in self.apps(*privileges):
            if merchant is None or app.merchant == merchant:
                return app
        return None

    def writer(self, kind: str = "CASHIN") -> Application | None:
        """An application allowed to create ``kind``: read-write first, then the specific one."""
        specific = "cashin" if kind.upper() == "CASHIN" else "cashout"
        return self.app("read-write") or self.app(specific)

    def reader(self) -> Application | None:
        """An application that may read: read-write or read first, whatever the config's order
        (whether a cashin or cashout application may read is RC-12, not the document)."""
        return (
            self.app("read-write") or self.app("read") or self.app("cashin") or self.app("cashout")
        )

    # --- what a check needs from the configuration -----------------------------------
    # Each returns what was asked for or skips the check as not applicable, with the reason:
    # a configuration that holds only what QA was given (often a read application) gets a
    # verdict on what it can reach, never a failure for what it cannot.
    def need_config(self) -> TargetConfig:
        if self.config is None:
            not_applicable(
                "no applications configured: pass --config with the target's applications"
            )
        return self.config

    def need_reader(self) -> Application:
        app = self.reader()
        if app is None:
            not_applicable("no application configured")
        return app

    def need_writer(self, kind: str = "CASHIN") -> Application:
        app = self.writer(kind)
        if app is None:
            not_applicable(f"no application may {kind.lower()} (read-write or {kind.lower()})")
        return app

    def need_customer(self) -> Customer:
        if self.customer is None:
            not_applicable("no customer driver configured")
        return self.customer

    def amount(self) -> int | float:
        """An amount the target accepts: an integer in [min, max], near the minimum."""
        return self.amounts.amount(self.rng)

    def number(self) -> str:
        """A number this run has not used (a configured list cycles)."""
        with self._shared:
            return self.numbers.fresh()

    # --- tokens -------------------------------------------------------------------------
    @contextmanager
    def _send(self, request: tokens.Request) -> Iterator[Reply]:
        """The token module's transport: the recording client, so exchanges are evidence."""
        yield self.client.request(
            request.method, request.path, json=request.json, headers=dict(request.headers)
        )

    def authorize(self, app: Application, *, secret: str | None = None) -> Reply:
        reply = tokens.authorize(self._send, app, secret=secret)
        assert isinstance(reply, Reply)
        return reply

    # The run's session: one pair per application (``_flows``), which every check's ordinary
    # request uses. A check never spends the session's refresh token: it refreshes a pair of its
    # own (``own_pair``), so a target that revokes the old access token on refresh, as it may,
    # breaks nothing else. Should a check refresh the session's pair anyway, ``refresh`` drops
    # it and the next use authorizes anew: a spent pair is never used again.
    def _new_flow(self, app: Application) -> TokenFlow:
        ttl_s = float(self.config.access_token_ttl_s) if self.config else 900.0
        return checking_flow(self._send, app, ttl_s)

    def _authorized(self, flow: TokenFlow) -> TokenPair:
        app = flow.app
        try:
            flow.authorize()
        except tokens.AuthError as exc:
            precondition(
                False,
                f"authorize failed for application {app.client_id} ({app.privilege}): "
                f"{getattr(exc.answer, 'status', 'no answer')}",
                exc.answer if isinstance(exc.answer, Reply) else None,
            )
        assert flow.pair is not None
        return flow.pair

    @_one_caller_at_a_time
    def pair(self, app: Application, *, fresh: bool = False) -> TokenPair:
        """The session's token pair for ``app``: authorized anew once a third of the configured
        lifetime has passed, never renewed by refresh (a refresh is what some checks judge).
        ``fresh``: authorized just now. Its refresh token is not the caller's to spend: a check
        that refreshes takes ``own_pair``."""
        if app.client_id not in self._flows:
            self._flows[app.client_id] = self._new_flow(app)
        flow = self._flows[app.client_id]
        pair = flow.pair
        if fresh or pair is None or flow.due():
            pair = self._authorized(flow)
        return pair

    def own_pair(self, app: Application) -> TokenPair:
        """A pair authorized just now for the caller alone: no other check is handed it, so the
        caller may spend its refresh token (and see its access token revoked) without breaking
        the session (checks running at the same time included)."""
        return self._authorized(self._new_flow(app))

    def short_lived_pair(self, app: Application) -> TokenPair:
        """Like ``own_pair``, from the configuration's ``short_lived_pair`` route when the
        ordinary lifetime is too long to wait out (AUTH-008)."""
        config = self.config
        short = config.short_lived_pair if config is not None else None
        if config is None or short is None or float(config.access_token_ttl_s) <= self.max_wait_s:
            return self.own_pair(app)
        flow = checking_flow(self._send, app, float(short.access_token_ttl_s), short.authorize)
        return self._authorized(flow)

    def token(self, app: Application) -> str:
        return self.pair(app).access

    def refresh(self, refresh_token: str, path_template: str) -> Reply:
        """GET a refresh path with the document's headers for it: Accept only. When
        ``refresh_token`` is a session pair's, that pair is dropped (``TokenFlow.spent``)."""
        reply = tokens.refresh(self._send, refresh_token, path_template)
        assert isinstance(reply, Reply)
        for flow in list(self._flows.values()):
            flow.spent(refresh_token)
        return reply

    # --- operations ---------------------------------------------------------------------
    def create(
        self,
        kind: str,
        app: Application,
        *,
        amount: object = None,
        number: str | None = None,
        key: str | None = None,
        key_in: str = "header",
        token: str | None = None,
        body: object = None,
        webhook_mode: str | None = None,
    ) -> Reply:
        """Send a cashin or cashout; ``key`` goes into the header or the query (``key_in``)."""
        payload = body
        if payload is None:
            payload = {
                "amount": self.amount() if amount is None else amount,
                "number": number or self.number(),
            }
        headers: dict[str, str] = {}
        if webhook_mode is not None:
            headers["X-Webhook-Mode"] = webhook_mode
        params: dict[str, str] = {}
        if key is not None:
            if key_in in ("header", "both"):
                headers["Idempotency-Key"] = key
            if key_in in ("query", "both"):
                params["Idempotency-Key"] = key
        reply = self.client.post(
            kind_path(kind),
            json=payload,
            headers=headers,
            params=params or None,
            token=token if token is not None else self.token(app),
        )
        ref = reply.get("ref") if reply.ok else None
        if isinstance(ref, str):
            with self._shared:
                reply.ref_reused = ref in self.refs_seen
                self.refs_seen.add(ref)
                if reply.ref_reused:
                    self.ref_reuses.append(reply)
                else:
                    self.ref_origins[ref] = reply
        return reply

    def note_generated_ref(self, ref: str) -> None:
        """A ref answered to a creation of the property run: a check's creation answered it
        too, before or after, names two transactions (``ref_reused``, as between two checks)."""
        with self._shared:
            if ref in self.refs_seen:
                self.refs_reused_by_generated.add(ref)
            self.refs_seen.add(ref)

    def created(self, kind: str, app: Application, **kwargs: Any) -> tuple[Reply, dict[str, Any]]:
        """Create and insist it worked: the helper for checks about something else."""
        reply = self.create(kind, app, **kwargs)
        with self._shared:
            self.helper_creations.add(id(reply.exchange))
        precondition(
            reply.ok and isinstance(reply.body, dict) and isinstance(reply.get("ref"), str),
            f"{kind.lower()} did not create a transaction to check with: {reply.status}",
            reply,
        )
        # A ref the target handed out before names two transactions: whatever a check then
        # sees of "its" transaction says nothing about its own rule (FMT-001 names this one).
        precondition(
            not reply.ref_reused,
            f"{kind.lower()} returned ref {reply.get('ref')}, already returned by an earlier "
            "creation (FMT-001)",
            reply,
        )
        return reply, reply.body

    def find(self, ref: str, app: Application, *, token: str | None = None) -> Reply:
        return self.client.get(find_path(ref), token=token or self.token(app))

    def list_events(self, app: Application, **params: object) -> Reply:
        clean = {k: v for k, v in params.items() if v is not None}
        return self.client.get(EVENTS, token=self.token(app), params=clean or None)

    def events_of(
        self, app: Application, *, max_pages: int = 20, **filters: object
    ) -> list[JsonObject]:
        """Every event record the list returns for ``filters``, following pages when paged."""
        collected: list[JsonObject] = []
        offset = 0
        use_paging = True
        for _ in range(max_pages):
            params = dict(filters)
            if use_paging:
                params.update(limit=100, offset=offset)
            reply = self.list_events(app, **params)
            if use_paging and reply.rejected:
                use_paging = False  # the target does not take limit/offset: one page only
                reply = self.list_events(app, **filters)
            precondition(
                reply.ok and isinstance(reply.get("transactions"), list),
                f"the events list, needed to count what was recorded, answered {reply.status} "
                "without a transactions array",
                reply,
            )
            page = [item for item in reply.get("transactions") if isinstance(item, dict)]
            collected.extend(page)
            total = reply.get("total")
            if not use_paging or not page or not isinstance(total, int):
                break
            offset += len(page)
            if offset >= total:
                break
        return collected

    def events_for_ref(self, app: Application, ref: str, *, wait: bool = False) -> list[JsonObject]:
        """Events of one transaction (filtered on our side too, in case the filter is ignored).

        ``wait``: poll (at most ``EVENTUAL_S``) until at least one is listed, for an
        implementation that records its events a moment after it answers.
        """

        def read() -> list[JsonObject]:
            return [e for e in self.events_of(app, ref=ref) if data_of(e).get("ref") == ref]

        return self.wait_until(read, bool, EVENTUAL_S) if wait else read()

    def eventually(self, probe: Callable[[], T], done: Callable[[T], bool]) -> T:
        """``probe`` until ``done`` (at most ``EVENTUAL_S``): for what the events list shows a
        moment after a creation was answered."""
        return self.wait_until(probe, done, EVENTUAL_S)

    def known_refs(self, app: Application, number: str) -> set[str]:
        """Refs that already exist for ``number``, so counts can exclude them.

        Numbers drawn from the pattern are fresh (nothing to exclude, no request); numbers from
        a configured list may carry transactions of earlier checks and runs.
        """
        if self.numbers.unique:
            return set()
        return {str(data_of(e).get("ref")) for e in self._created_on(app, number)}

    def _created_on(self, app: Application, number: str) -> list[JsonObject]:
        """Every ``transaction:created`` event the list shows for ``number``, whoever made it."""
        return [
            e
            for e in self.events_of(app, client=number)
            if same_number(data_of(e).get("client"), number)
            and e.get("event_kind") == "transaction:created"
        ]

    def created_events_for_number(
        self,
        app: Application,
        number: str,
        exclude: set[str] | None = None,
        *,
        expect: int | None = None,
        sent: Collection[tuple[str, object]] | None = None,
        own_refs: Collection[str] = (),
    ) -> list[JsonObject]:
        """``transaction:created`` events of ``number`` (minus the refs in ``exclude``).

        ``sent``: the (kind, amount) of each creation the check sent for ``number``; when given,
        only events that are the check's own count: one of the refs its creations were answered
        (``own_refs``), or a transaction of one of those requests' own kind and amount. Another
        client's payment to a shared number (a configured list cycles) is then not counted as
        an execution, and a reuse executed as its own kind (a cashin's key on a cashout) is.

        A number of the configured list (``numbers``, not drawn fresh) is shared with the
        target's other clients: there a creation that no answer of the check named
        (``own_refs``) cannot be told from another client's payment, so it is not counted and
        the check notes "unconfirmed" instead (a note, never a failure).

        ``expect``: how many the check awaits. An implementation may record its events a moment
        after it answers (an outbox, a queue): the count is polled until it reaches ``expect``
        (at most ``EVENTUAL_S``), then read once more after ``SETTLE_S`` so that a late second
        execution is seen too.
        """
        skip = exclude or set()
        shared = not self.numbers.unique
        strangers: list[str] = []

        def read() -> list[JsonObject]:
            found = [
                e
                for e in self._created_on(app, number)
                if str(data_of(e).get("ref")) not in skip
                and (sent is None or _own_event(data_of(e), sent, own_refs))
            ]
            if not shared:
                return found
            strangers[:] = [
                str(data_of(e).get("ref"))
                for e in found
                if str(data_of(e).get("ref")) not in own_refs
            ]
            return [e for e in found if str(data_of(e).get("ref")) in own_refs]

        if not expect:
            found = read()
        else:
            found = self.wait_until(read, lambda items: len(items) >= expect, EVENTUAL_S)
            if len(found) == expect:
                time.sleep(self.settle_s)
                found = read()
        if strangers:
            self.note(
                f"unconfirmed: {len(strangers)} transaction(s) on {number} that no answer of this "
                "check named were not counted as its executions: a number of the configured list, "
                "which other clients may pay too"
            )
        return found

    # --- webhooks -------------------------------------------------------------------------
    def webhook_receiver(self) -> RunningReceiver:
        """paysuite's receiver on the configured ``webhooks.listen``, started on first use and
        kept for the run (deliveries of one check may arrive during the next)."""
        hooks = self.config.webhooks if self.config else None
        assert hooks is not None, "webhook_receiver() needs the webhooks section"
        from paysuite_core.webhooks.receiver import ReceiverStartError, WebhookReceiver, running

        with self._shared:  # started by the first check that asks
            if self._receiver is None:
                receiver = WebhookReceiver(hooks.secret, tolerance_s=hooks.tolerance_s)
                try:
                    self._receiver = self._closing.enter_context(
                        running(receiver, hooks.listen_host, hooks.listen_port)
                    )
                except ReceiverStartError as exc:
                    precondition(False, f"paysuite's webhook receiver did not start: {exc}")
            assert self._receiver is not None
            return self._receiver

    def close(self) -> None:
        """Stop what the run started: the HTTP client and, if it ran, the webhook receiver."""
        self.client.close()
        self._closing.close()

    # --- lifecycle ------------------------------------------------------------------------
    def resolve(self, ref: str, outcome: Outcome) -> str:
        assert self.customer is not None
        return self.customer.act(ref, outcome)

    def wait_until(
        self, probe: Callable[[], T], done: Callable[[T], bool], timeout_s: float | None = None
    ) -> T:
        """Poll ``probe`` until ``done`` (or the timeout); returns the last value seen."""
        limit = timeout_s if timeout_s is not None else self.driver_timeout()
        deadline = time.monotonic() + limit
        delay = 0.05
        value = probe()
        while not done(value) and time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            value = probe()
        return value

    def driver_timeout(self) -> float:
        if self.config is None:
            return 30.0
        return float(min(self.config.customer.timeout_s, max(self.config.max_wait_s, 5)))

    def wait_processed(self, ref: str, app: Application) -> Reply:
        return self.wait_until(
            lambda: self.find(ref, app),
            lambda reply: reply.ok and reply.get("status") not in (None, "pending"),
        )

    def fresh_key(self) -> str:
        return uuid.uuid4().hex


def _own_event(
    data: JsonObject, sent: Collection[tuple[str, object]], own_refs: Collection[str]
) -> bool:
    """A created event that one of a check's own creations made: its ref was answered to the
    check, or it has the kind and amount of one of the requests the check sent."""
    if str(data.get("ref")) in own_refs:
        return True
    return any(data.get("kind") == kind and same_amount(data.get("amount"), amount)
               for kind, amount in sent)  # fmt: skip
