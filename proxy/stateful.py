"""The rules no single exchange can break: what the proxy remembers across a session.

A rule never guesses: a key reused after a rejected first attempt is not "used"; a token is
"expired" only ``EXPIRY_GRACE_S`` after its ``exp``; two observations of one transaction are
compared only when the second began after the first was answered. What the traffic alone cannot
settle is left to ``finish`` (``proxy.confirm``). The rules and their IDs: docs/proxy.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import (
    data_of,
    event_disagrees_with_find,
    reuse_problems,
    same_outcome,
    status_changed,
)
from paysuite_core.driver.document_validity import MAX_KEY_LENGTH
from paysuite_core.exchange import Exchange
from paysuite_core.results.rule import Check
from paysuite_core.tokens import parse_expires, token_exp
from proxy.routes import (
    PROCESSED,
    Route,
    answered_at,
    bearer_token,
    idempotency_key,
    merchant_of,
    ok,
    route_of,
)
from proxy.rules import (
    CONCURRENT_REUSE,
    CROSS_KIND_REUSE,
    EXPIRY,
    FINAL_ONCE_PROCESSED,
    IDEMPOTENCY,
    KEY_LENGTH,
    QUERY_KEY_REUSE,
    ROTATION,
    Violation,
    outcome_check,
)

#: How long after a token's ``exp`` an accepted request counts as a violation: the proxy and
#: the target read different clocks, and ``exp`` is whole seconds.
EXPIRY_GRACE_S = 1.0


# --- IDEM-001 -----------------------------------------------------------------------------------
@dataclass
class KeyUse:
    """A key's first accepted creation and every later creation that reused it."""

    first: Exchange
    merchant: str
    key: str
    reuses: list[Exchange] = field(default_factory=list)
    judged: bool = False  # a violation was already reported from the traffic alone


def key_location(exchange: Exchange) -> str:
    return "header" if exchange.request_header("Idempotency-Key") is not None else "query"


def overlap(one: Exchange, other: Exchange) -> bool:
    """Both were in flight at once: neither was answered before the other began."""
    return one.started < answered_at(other) and other.started < answered_at(one)


def reuse_check(first: Exchange, reuse: Exchange) -> Check:
    """The suite's check for this kind of reuse: across cashin and cashout IDEM-002, concurrent
    IDEM-005, by the query parameter IDEM-004, else IDEM-001."""
    first_route, reuse_route = route_of(first), route_of(reuse)
    if first_route and reuse_route and first_route.operation != reuse_route.operation:
        return CROSS_KIND_REUSE
    if overlap(first, reuse):
        return CONCURRENT_REUSE
    if key_location(reuse) == "query":
        return QUERY_KEY_REUSE
    return IDEMPOTENCY


class IdempotencyRule:
    def __init__(self) -> None:
        self.uses: dict[tuple[str, str], KeyUse] = {}
        #: check ID -> the creations it judged (a keyed creation for IDEM-001, a reuse for the
        #: others, a too-long key for IDEM-003)
        self.exercised: Counter[str] = Counter()

    def observe(self, exchange: Exchange, route: Route) -> list[Violation]:
        if not route.creation:
            return []
        answer = exchange.response_json()
        ref = answer.get("ref") if ok(exchange) and isinstance(answer, dict) else None
        key = idempotency_key(exchange, route)
        merchant = merchant_of(exchange)
        if key is None or merchant is None:
            return []
        self.exercised[IDEMPOTENCY.id] += 1
        if len(key) > MAX_KEY_LENGTH:
            return self._too_long(exchange, key)
        use = self.uses.get((merchant, key))
        if use is None:
            if ok(exchange):  # a rejected first attempt did not use the key
                self.uses[(merchant, key)] = KeyUse(exchange, merchant, key)
            return []
        use.reuses.append(exchange)
        check = reuse_check(use.first, exchange)
        if check is not IDEMPOTENCY:  # IDEM-001 counted every keyed creation already
            self.exercised[check.id] += 1
        if not ok(exchange):
            return []  # rejected: the rule held, unless it executed anyway (``finish``)
        use.judged = True
        first = use.first.response_json()
        first_ref = str(first.get("ref") if isinstance(first, dict) else None)
        refs = list(dict.fromkeys([first_ref, *([ref] if isinstance(ref, str) else [])]))
        body = exchange.request_json()
        number = body.get("number") if isinstance(body, dict) else None
        problems = reuse_problems(
            route.operation, key_location(exchange), exchange.status, refs, number
        )
        return [
            Violation(
                check,
                "; ".join(problems),
                (use.first, exchange),
                expected="the reuse rejected (4xx) and one transaction for the key",
                actual=f"{exchange.status}, ref {ref}" if ref else str(exchange.status),
            )
        ]

    def _too_long(self, exchange: Exchange, key: str) -> list[Violation]:
        """IDEM-003: "Idempotency-Key length: at most 32 characters"; accepting more is the
        target's violation (sending more is the client's, PROXY-SCHEMA-REQ)."""
        self.exercised[KEY_LENGTH.id] += 1
        if not ok(exchange):
            return []
        return [
            Violation(
                KEY_LENGTH,
                f"a {len(key)}-character key answered {exchange.status}, expected 4xx",
                (exchange,),
                expected=f"a key over {MAX_KEY_LENGTH} characters rejected (4xx)",
                actual=str(exchange.status),
            )
        ]

    def unsettled(self) -> list[KeyUse]:
        """Reuses the traffic showed rejected (or unanswered): executed anyway or not?"""
        return [use for use in self.uses.values() if use.reuses and not use.judged]


# --- AUTH-008 -----------------------------------------------------------------------------------
class ExpiryRule:
    check = EXPIRY

    def __init__(self, grace_s: float = EXPIRY_GRACE_S) -> None:
        self.grace_s = grace_s
        #: token -> (Unix time it expires, the exchange that issued it, if seen)
        self.expiry: dict[str, tuple[float, Exchange | None]] = {}
        self.reported: set[str] = set()
        self.exercised = 0  # accepted requests whose token's expiry was known

    def _learn(self, exchange: Exchange) -> None:
        pair = exchange.response_json()
        if not ok(exchange) or not isinstance(pair, dict):
            return
        access, refresh = pair.get("access"), pair.get("refresh")
        if isinstance(access, str) and access:
            if (exp := token_exp(access)) is not None:
                self.expiry[access] = (exp, exchange)
            elif pair.get("expires") is not None:
                # parse_expires falls back to a lifetime when nothing is usable: no lifetime
                # (inf) means an opaque token without expires stays unjudged.
                at = parse_expires(pair["expires"], access, exchange.started, float("inf"))
                self.expiry[access] = (at, exchange)
        if isinstance(refresh, str) and refresh and (exp := token_exp(refresh)) is not None:
            self.expiry[refresh] = (exp, exchange)

    def observe(self, exchange: Exchange, route: Route) -> list[Violation]:
        if route.operation in ("authorize", "refresh"):
            violations = self._judge(exchange, route.path_params.get("refresh_token"), "refresh")
            self._learn(exchange)
            return violations
        if route.protected:
            return self._judge(exchange, bearer_token(exchange), "access")
        return []

    def _judge(self, exchange: Exchange, token: str | None, what: str) -> list[Violation]:
        if not token or not ok(exchange) or token in self.reported:
            return []
        # a token the session did not see issued is judged by its own exp, if it has one
        expires_at, issued_by = self.expiry.get(token) or (token_exp(token), None)
        if expires_at is None:
            return []
        self.exercised += 1
        late = exchange.started - expires_at
        if late <= self.grace_s:
            return []
        self.reported.add(token)
        proof = (issued_by, exchange) if issued_by is not None else (exchange,)
        return [
            Violation(
                self.check,
                f"an {what} token that expired {late:.1f} s earlier was accepted "
                f"({exchange.method} answered {exchange.status})",
                proof,
                expected=f"the {what} token rejected after its exp (401)",
                actual=f"{exchange.status} {late:.1f} s after exp",
            )
        ]


# --- AUTH-012 -----------------------------------------------------------------------------------
class RotationRule:
    check = ROTATION

    def __init__(self, declared: bool | None) -> None:
        self.declared = declared
        self.used: dict[str, Exchange] = {}
        self.exercised = 0

    @property
    def not_judged(self) -> str:
        if self.declared is None:
            return "the target configuration does not declare refresh_rotation"
        if self.declared is False:
            return "the target configuration declares refresh_rotation: false"
        return ""

    def observe(self, exchange: Exchange, route: Route) -> list[Violation]:
        if route.operation != "refresh" or not self.declared or not ok(exchange):
            return []
        self.exercised += 1
        token = route.path_params.get("refresh_token", "")
        first = self.used.get(token)
        if first is None:
            self.used[token] = exchange
            return []
        return [
            Violation(
                self.check,
                f"a refresh token already used by #{first.seq} was accepted again "
                f"({exchange.status}), though the target declares rotation",
                (first, exchange),
                expected="the second use of a refresh token rejected (rotation declared)",
                actual=str(exchange.status),
            )
        ]


# --- LIFE-004, LIFE-002/003 ---------------------------------------------------------------------
@dataclass
class Seen:
    """One observation of a transaction's status: from find, or a processed event."""

    status: str
    exchange: Exchange


@dataclass
class Transaction:
    ref: str
    processed: Seen | None = None  # the first processed status find answered
    event: Seen | None = None  # the first processed event seen
    event_ids: dict[str, Exchange] = field(default_factory=dict)
    finds: list[Seen] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)  # check ids already reported for it
    merchant: str | None = None


class LifecycleRule:
    def __init__(self) -> None:
        self.transactions: dict[str, Transaction] = {}
        #: processed observations (LIFE-004) and event-find comparisons (LIFE-002/003) made
        self.exercised_final = 0
        self.exercised_event = 0

    def _tx(self, ref: str, exchange: Exchange) -> Transaction:
        tx = self.transactions.setdefault(ref, Transaction(ref))
        tx.merchant = tx.merchant or merchant_of(exchange)
        return tx

    def observe(self, exchange: Exchange, route: Route) -> list[Violation]:
        if not ok(exchange):
            return []
        body = exchange.response_json()
        if route.operation == "find" and isinstance(body, dict):
            ref = body.get("ref") or route.path_params.get("ref")
            if isinstance(ref, str) and isinstance(body.get("status"), str):
                return self._status(self._tx(ref, exchange), Seen(body["status"], exchange))
        if route.operation == "events" and isinstance(body, dict):
            violations: list[Violation] = []
            for event in body.get("transactions") or []:
                if not isinstance(event, dict) or event.get("event_kind") != PROCESSED:
                    continue
                data = data_of(event)
                ref, status = data.get("ref"), data.get("status")
                if isinstance(ref, str) and isinstance(status, str):
                    tx = self._tx(ref, exchange)
                    violations += self._event(tx, event, Seen(status, exchange))
            return violations
        return []

    def _status(self, tx: Transaction, seen: Seen) -> list[Violation]:
        violations: list[Violation] = []
        tx.finds.append(seen)
        if seen.status != "pending" or tx.processed is not None:
            self.exercised_final += 1
        first = tx.processed
        if first is not None and seen.exchange.started >= answered_at(first.exchange):
            if not same_outcome(seen.status, first.status):
                violations += self._changed(tx, first, seen)
        if seen.status != "pending" and first is None:
            tx.processed = seen
        if seen.status != "pending" and tx.event is not None:
            violations += self._disagree(tx, tx.event, seen)
        return violations

    def _event(self, tx: Transaction, event: JsonObject, seen: Seen) -> list[Violation]:
        violations: list[Violation] = []
        event_id = str(event.get("event_id"))
        self.exercised_final += 1
        if event_id not in tx.event_ids:
            tx.event_ids[event_id] = seen.exchange
        if len(tx.event_ids) > 1 and FINAL_ONCE_PROCESSED.id not in tx.reported:
            tx.reported.add(FINAL_ONCE_PROCESSED.id)
            proof = tuple(dict.fromkeys(tx.event_ids.values()))
            violations.append(
                Violation(
                    FINAL_ONCE_PROCESSED,
                    f"{len(tx.event_ids)} transaction:processed events for {tx.ref}",
                    proof,
                    expected="at most one processed event per transaction",
                    actual=f"{len(tx.event_ids)} processed events",
                )
            )
        if tx.event is None:
            tx.event = seen
            for found in tx.finds:
                if found.status != "pending":
                    violations += self._disagree(tx, seen, found)
        return violations

    def _changed(self, tx: Transaction, first: Seen, later: Seen) -> list[Violation]:
        key = FINAL_ONCE_PROCESSED.id + ":status"
        if key in tx.reported:
            return []
        tx.reported.add(key)
        return [
            Violation(
                FINAL_ONCE_PROCESSED,
                f"{status_changed(first.status, later.status)} ({tx.ref}: find "
                f"#{first.exchange.seq}, then #{later.exchange.seq})",
                (first.exchange, later.exchange),
                expected=f"status stays {first.status!r} once processed",
                actual=later.status,
            )
        ]

    def _disagree(self, tx: Transaction, event: Seen, found: Seen) -> list[Violation]:
        self.exercised_event += 1
        if same_outcome(event.status, found.status):
            return []
        check = outcome_check(event.status)
        if check.id in tx.reported:
            return []
        tx.reported.add(check.id)
        return [disagreement(tx.ref, event, found.status, (event.exchange, found.exchange))]

    def unconfirmed(self) -> list[Transaction]:
        """Transactions with a processed event that no find through the proxy compared."""
        return [
            tx
            for tx in self.transactions.values()
            if tx.event is not None and not any(f.status != "pending" for f in tx.finds)
        ]


def disagreement(
    ref: str,
    event: Seen,
    found_status: object,
    proof: tuple[Exchange, ...],
    confirmations: tuple[dict[str, object], ...] = (),
) -> Violation:
    """The processed event says one outcome, find another."""
    return Violation(
        outcome_check(event.status),
        f"{event_disagrees_with_find(event.status, found_status)} ({ref})",
        proof,
        expected=f"find's status matches the processed event ({event.status!r})",
        actual=str(found_status),
        confirmations=confirmations,
    )
