"""The judge: every exchange against the document, one at a time and across the session.

``Judge(config, profile=...)`` is what the proxy and the replay feed: ``observe(exchange)`` judges
one exchange (the request and the answer against the spec, then the stateful rules of
``proxy.stateful``) and returns the violations it revealed; ``finish()`` asks the target what
the traffic could not settle (``proxy.confirm``, only with a configuration that gives
credentials) and returns those. ``rule_states()`` says, per rule, whether it was judged and on
how many exchanges, or why not: the report shows a rule nothing exercised as skipped, never as
passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from paysuite_core.exchange import Exchange
from paysuite_core.results.masking import Masker
from paysuite_core.results.rule import Check
from paysuite_core.target_config import TargetConfig
from paysuite_core.tls import TLSSettings
from proxy.routes import Route, route_of
from proxy.rules import (
    CANCELLED,
    CONCURRENT_REUSE,
    CONFIRMED,
    CROSS_KIND_REUSE,
    EXPIRY,
    FINAL_ONCE_PROCESSED,
    IDEMPOTENCY,
    JUDGED_PARTIES,
    QUERY_KEY_REUSE,
    ROTATION,
    RULES,
    SCHEMA_REQUEST,
    SCHEMA_RESPONSE,
    Violation,
)
from proxy.spec_rules import SpecView
from proxy.stateful import ExpiryRule, IdempotencyRule, LifecycleRule, RotationRule
from proxy.traffic import TRAFFIC_RULES, TrafficRules

UNCONFIRMED = (
    "unconfirmed: no --config with credentials, so a rejected reuse was not confirmed by "
    "reproducing it on a number of the judge's own"
)


@dataclass(frozen=True)
class RuleState:
    """How far a rule was judged in this session."""

    check: Check
    exercised: int  # exchanges (or comparisons) the rule judged
    not_judged: str = ""  # why the rule could not be judged at all ("" when it could)
    notes: tuple[str, ...] = ()


@dataclass
class Observed:
    """One exchange as the report lists it: where it sits in the document, and its findings."""

    exchange: Exchange
    operation: str | None  # None: not an operation of the document (forwarded, not judged)
    violations: list[Violation] = field(default_factory=list)


class Judge:
    """Judges a session's exchanges in the order they are observed."""

    def __init__(
        self,
        config: TargetConfig | None,
        *,
        profile: str = "seed",
        base_url: str | None = None,
        confirm: bool = True,
        judge: str = "server",
        tls: TLSSettings | None = None,
    ) -> None:
        self.config = config
        #: the session's secrets: the HAR's placeholders, the curls of the reports
        self.masker = Masker.for_config(config)
        #: what the judge's own confirmations trust over HTTPS, as the forwarded traffic does;
        #: the reports say how the target's certificate was judged (``reports.tls_text``)
        self.tls = tls
        #: whose violations gate the exit status (``--judge``): "server", "client" or both
        self.gates = JUDGED_PARTIES[judge]
        #: what the end of the session left unsettled (a second Ctrl-C, a SIGTERM while settling)
        self.unsettled: list[str] = []
        self.profile = profile
        base = base_url or (config.base_url if config else "http://127.0.0.1/api")
        self.spec = SpecView(config, profile=profile, base_url=base)
        self.idempotency = IdempotencyRule()
        self.expiry = ExpiryRule()
        self.rotation = RotationRule(config.refresh_rotation if config else None)
        self.lifecycle = LifecycleRule()
        self.traffic = TrafficRules(
            customer=config.customer if config else None,
            wait_s=float(min(config.customer.timeout_s, max(config.max_wait_s, 5)))
            if config
            else 30.0,
        )
        self.confirm = confirm and config is not None
        self.observed: list[Observed] = []
        self.violations: list[Violation] = []
        self.unanswered = 0
        #: problems of the session itself (an exchange the judge could not judge): no verdict
        self.run_errors: list[str] = []
        self._request_judged = 0
        self._response_judged = 0
        self._confirm_notes: dict[str, list[str]] = {}  # check ID (or "*") -> notes
        self._stateful: tuple[Callable[[Exchange, Route], list[Violation]], ...] = (
            self.expiry.observe,
            self.rotation.observe,
            self.idempotency.observe,
            self.lifecycle.observe,
            self.traffic.observe,
        )

    def observe(self, exchange: Exchange) -> list[Violation]:
        """Judge one exchange; the violations it revealed (also kept in ``violations``)."""
        route = route_of(exchange)
        if exchange.status and (route is None or route.operation in ("authorize", "refresh")):
            # the session's tokens (a sandbox's short-lived authorize is no route of the
            # document): a curl then names one the target issued by its application's
            # variable, never as a forgery of the suite's; other answers issue none
            self.masker.learn_issued(exchange, exchange.request_body.decode("utf-8", "replace"))
        record = Observed(exchange, route.operation if route else None)
        self.observed.append(record)
        if exchange.status == 0:
            self.unanswered += 1
        if route is None:
            self.traffic.customer(exchange)  # the configured customer's confirm or cancel
            return []
        found: list[Violation] = []
        if route.creation or route.operation == "authorize":
            self._request_judged += 1
        found += self.spec.judge_request(exchange, route)
        if exchange.status:
            self._response_judged += 1
            found += self.spec.judge_response(exchange, route)
            for rule in self._stateful:
                found += rule(exchange, route)
        self._keep(found)
        return found

    def settlements(self) -> list[str]:
        """What ``finish`` would still ask the target, one line each (the report names those a
        Ctrl-C or a SIGTERM left unsettled)."""
        if not self.confirm:
            return []
        return (
            [f"reproduce the rejected reuse of key {u.key!r}" for u in self.idempotency.unsettled()]
            + [
                f"find {tx.ref} (its processed event against find)"
                for tx in self.lifecycle.unconfirmed()
            ]
            + [
                f"list the events of {ref} (its processed event listed)"
                for ref, _ in self.traffic.unsettled()
            ]
            + [
                f"find {ref} (the customer's {action.outcome} took effect)"
                for ref, action in self.traffic.unresolved()
            ]
        )

    def finish(self) -> list[Violation]:
        """Settle what the traffic could not, through the judge's own client; then nothing more
        is judged. Interrupted (KeyboardInterrupt), it keeps what it found so far and names the
        rest in ``unsettled`` before the interruption goes on."""
        if not self.confirm:
            return []
        # named before the import, which takes a while on a busy machine: a signal during it
        # must still leave the report saying what was not settled
        self.unsettled = self.settlements()
        from proxy.confirm import Confirmer

        assert self.config is not None
        confirmer = Confirmer(self.config, profile=self.profile, tls=self.tls)
        found: list[Violation] = []
        try:
            for use in self.idempotency.unsettled():
                found += confirmer.reproduce(use)
                self.unsettled.pop(0)
            for tx in self.lifecycle.unconfirmed():
                found += confirmer.find_agrees(self.lifecycle, tx)
                self.unsettled.pop(0)
            for ref, seen in self.traffic.unsettled():
                found += confirmer.processed_listed(self.traffic, ref, seen)
                self.unsettled.pop(0)
            for ref, action in self.traffic.unresolved():
                found += confirmer.outcome_after(self.traffic, ref, action)
                self.unsettled.pop(0)
        finally:
            confirmer.close()
            self._confirm_notes = dict(confirmer.notes)
            self._keep(found)
        return found

    def _keep(self, found: list[Violation]) -> None:
        self.violations += found
        by_seq = {record.exchange.seq: record for record in self.observed}
        for violation in found:
            for exchange in violation.exchanges:
                record = by_seq.get(exchange.seq)
                if record is not None and violation not in record.violations:
                    record.violations.append(violation)

    def rule_states(self) -> list[RuleState]:
        """Every rule of ``proxy.rules.RULES``: judged on how much, or why not."""
        # LIFE-002/003: event-find comparisons, processed events' data against their creation,
        # and listings judged for a processed event (not the traffic's count of the customer's
        # outcomes, which the entries below replace)
        lifecycle = self.lifecycle.exercised_event + self.traffic.listed_exercised
        counts: dict[str, int] = {
            **self.traffic.exercised,
            **self.idempotency.exercised,
            SCHEMA_REQUEST.id: self._request_judged,
            SCHEMA_RESPONSE.id: self._response_judged,
            EXPIRY.id: self.expiry.exercised,
            ROTATION.id: self.rotation.exercised,
            CONFIRMED.id: lifecycle,
            CANCELLED.id: lifecycle,
            FINAL_ONCE_PROCESSED.id: self.lifecycle.exercised_final,
        }
        reuses = {IDEMPOTENCY.id, CROSS_KIND_REUSE.id, QUERY_KEY_REUSE.id, CONCURRENT_REUSE.id}
        unconfirmed = not self.confirm and bool(self.idempotency.unsettled())
        every = tuple(self._confirm_notes.get("*", ()))
        return [
            RuleState(
                check,
                counts.get(check.id, 0),
                self.rotation.not_judged if check is ROTATION else "",
                ((UNCONFIRMED,) if unconfirmed and check.id in reuses else ())
                + tuple(self._confirm_notes.get(check.id, ()))
                + every,
            )
            for check in RULES + TRAFFIC_RULES
        ]
