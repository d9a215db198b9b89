"""Rules read straight from the traffic: what was created, and what find and the events list say
of it afterwards (TXN-001/002, FMT-001, FIND-001, LIFE-001/002/003, EVT-003..007; docs/proxy.md,
"Rules read from the traffic").

Events may be recorded a moment late (docs/conformance.md, *Events recorded a moment later*),
so a listing judges a missing processed event only when it began ``EVENTUAL_S`` after the
processed status was answered; one made sooner leaves the question to ``finish``, where the
judge lists the ref itself (``proxy.confirm``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeGuard
from urllib.parse import parse_qsl, urlsplit

from conformance import catalog
from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import created_values_differ, data_of, same_amount, same_outcome
from paysuite_core.driver.target import EVENTUAL_S
from paysuite_core.exchange import Exchange
from paysuite_core.request_data import same_number
from paysuite_core.results.rule import Check
from paysuite_core.target_config import CustomerDriver
from proxy.routes import (
    CREATED,
    PROCESSED,
    Route,
    answered_at,
    idempotency_key,
    merchant_of,
    ok,
)
from proxy.rules import CANCELLED, CONFIRMED, Violation, outcome_check

CASHIN_ANSWER = catalog.get("TXN-001")
CASHOUT_ANSWER = catalog.get("TXN-002")
UNIQUE_REFS = catalog.get("FMT-001")
FIND_VALUES = catalog.get("FIND-001")
CREATED_EVENT = catalog.get("LIFE-001")
REF_FILTER = catalog.get("EVT-003")
CLIENT_FILTER = catalog.get("EVT-004")
KIND_FILTER = catalog.get("EVT-005")
STATUS_FILTER = catalog.get("EVT-006")
TOTAL = catalog.get("EVT-007")

#: The events list's filters (EVT-003..006), by query name.
FILTERS: dict[str, Check] = {
    "ref": REF_FILTER,
    "client": CLIENT_FILTER,
    "kind": KIND_FILTER,
    "status": STATUS_FILTER,
}
#: The rules of this module, in the report's order.
TRAFFIC_RULES: tuple[Check, ...] = (
    CASHIN_ANSWER,
    CASHOUT_ANSWER,
    UNIQUE_REFS,
    FIND_VALUES,
    CREATED_EVENT,
    *FILTERS.values(),
    TOTAL,
)
#: Query names a listing may carry and still show every event of a ref that matches its filters.
_PAGING = frozenset({"limit", "offset"})


@dataclass
class Created:
    """A creation answered 2xx: what was asked, and the ref it got."""

    exchange: Exchange
    ref: str
    kind: str
    amount: object
    number: object
    merchant: str | None


@dataclass
class Processed:
    """A processed status find showed for a ref: when, and whether a listing showed its event."""

    status: str
    exchange: Exchange
    merchant: str | None
    listed: bool = False  # a listing showed the processed event
    soon: list[Exchange] = field(default_factory=list)  # complete listings made too soon
    reported: bool = False


@dataclass
class Resolved:
    """The customer confirmed or cancelled a ref through the configured driver."""

    outcome: str  # confirm | cancel
    exchange: Exchange
    pending: list[Exchange] = field(default_factory=list)  # finds still pending, made too soon
    settled: bool = False
    reported: bool = False

    @property
    def check(self) -> Check:
        return CONFIRMED if self.outcome == "confirm" else CANCELLED

    @property
    def expected(self) -> str:
        """The status find must show once the customer acted."""
        return "success" if self.outcome == "confirm" else "failed"


def _actions(customer: CustomerDriver | None) -> dict[str, tuple[str, re.Pattern[str]]]:
    """The sandbox driver's confirm and cancel as (method, path pattern with a ``ref`` group)."""
    found: dict[str, tuple[str, re.Pattern[str]]] = {}
    if customer is None or customer.driver != "sandbox":
        return found
    for outcome, action in (("confirm", customer.confirm), ("cancel", customer.cancel)):
        if action is None or "{ref}" not in action.url_template:
            continue
        before, _, after = urlsplit(
            action.url_template.replace("{ref}", "REFPLACEHOLDER")
        ).path.partition("REFPLACEHOLDER")
        pattern = re.compile(re.escape(before) + r"(?P<ref>[^/]+)" + re.escape(after))
        found[outcome] = (action.method.upper(), pattern)
    return found


@dataclass(frozen=True)
class Listing:
    """An events list's query, split into the document's filters and the rest."""

    filters: dict[str, str]
    others: frozenset[str]
    repeated: bool  # a name given twice: which one the target read is anybody's guess

    @classmethod
    def of(cls, exchange: Exchange) -> Listing:
        pairs = parse_qsl(urlsplit(exchange.url).query, keep_blank_values=True)
        names = Counter(name for name, _ in pairs)
        filters = {n: v for n, v in pairs if n in FILTERS and v != ""}
        others = frozenset(n for n, _ in pairs if n not in FILTERS and n not in _PAGING)
        return cls(filters, others, any(count > 1 for count in names.values()))


class TrafficRules:
    """Remembers every creation of the session and judges what later exchanges say of it."""

    def __init__(
        self, eventual_s: float = EVENTUAL_S, customer: CustomerDriver | None = None,
        wait_s: float = 30.0,
    ) -> None:  # fmt: skip
        self.eventual_s = eventual_s
        #: the configuration's customer driver: its confirm and cancel, seen through the proxy,
        #: say what outcome find must show (after at most ``wait_s``, the suite's wait)
        self.actions = _actions(customer)
        self.wait_s = wait_s
        self.resolved: dict[str, Resolved] = {}
        self.created: dict[str, Created] = {}
        self.keys: set[tuple[str | None, str]] = set()  # (merchant, key) of 2xx creations
        self.answered_twice: set[str] = set()  # refs two creations were answered (FMT-001)
        self.processed: dict[str, Processed] = {}
        self.exercised: Counter[str] = Counter()
        self.listed_exercised = 0  # LIFE-002/003: listings judged for a processed event
        self._reported: set[tuple[str, str]] = set()  # (check id, ref or seq) already reported

    # --- dispatch ---------------------------------------------------------------------------
    def observe(self, exchange: Exchange, route: Route) -> list[Violation]:
        if not ok(exchange):
            return []
        body = exchange.response_json()
        if not isinstance(body, dict):
            return []  # not JSON: PROXY-SCHEMA-RESP's finding
        if route.creation:
            return self._creation(exchange, route, body)
        if route.operation == "find":
            return self._find(exchange, route, body)
        if route.operation == "events":
            return self._events(exchange, body)
        return []

    # --- the customer's confirm and cancel (the configuration's sandbox driver) ---------------
    def customer(self, exchange: Exchange) -> None:
        """Remember a confirm or cancel of the configured customer driver answered 2xx."""
        if not ok(exchange):
            return
        path = urlsplit(exchange.url).path
        for outcome, (method, pattern) in self.actions.items():
            match = pattern.fullmatch(path)
            if match and exchange.method.upper() == method:
                ref = match.group("ref")
                if ref in self.resolved:  # acted on again: which outcome holds is LIFE-004's
                    self.resolved[ref].settled = True
                else:
                    self.resolved[ref] = Resolved(outcome, exchange)

    def _outcome(self, ref: str, status: object, exchange: Exchange) -> list[Violation]:
        """LIFE-002/003: after the customer confirmed (cancelled), find shows success (failed);
        a pending status is judged only ``wait_s`` after the customer acted."""
        action = self.resolved.get(ref)
        if action is None or action.reported or action.settled:
            return []  # judged once: what find says afterwards is LIFE-004's
        if exchange.started < answered_at(action.exchange):
            return []
        late = exchange.started - answered_at(action.exchange)
        if status == "pending" and late < self.wait_s:
            action.pending.append(exchange)
            return []
        action.settled = True
        self.exercised[action.check.id] += 1
        if same_outcome(status, action.expected):
            return []
        return [self.wrong_outcome(ref, action, status, exchange)]

    def wrong_outcome(
        self,
        ref: str,
        action: Resolved,
        status: object,
        exchange: Exchange | None,
        confirmations: tuple[dict[str, object], ...] = (),
    ) -> Violation:
        action.reported = True
        verb = "confirmed" if action.outcome == "confirm" else "cancelled"
        where = f"find #{exchange.seq}" if exchange else "the judge's find at the end"
        after = f"{self.wait_s:g} s later " if status == "pending" else ""
        return Violation(
            action.check,
            f"the customer {verb} {ref} (#{action.exchange.seq}), yet {where} {after}answered "
            f"{status!r}",
            (action.exchange, exchange) if exchange else (action.exchange, *action.pending),
            expected=f"status {action.expected} once the customer {verb}",
            actual=str(status),
            confirmations=confirmations,
        )

    def merchant_of(self, ref: str) -> str | None:
        """Whose transaction ``ref`` is, as the traffic showed (the customer's call carries no
        token): the creation's merchant, else the one whose find showed it processed."""
        if ref in self.created:
            return self.created[ref].merchant
        seen = self.processed.get(ref)
        return seen.merchant if seen else None

    def unresolved(self) -> list[tuple[str, Resolved]]:
        """Customer actions no find after them settled: the judge finds those refs itself."""
        return [(r, a) for r, a in self.resolved.items() if not a.settled and not a.reported]

    # --- creations: TXN-001/002, FMT-001 -------------------------------------------------------
    def _creation(self, exchange: Exchange, route: Route, body: JsonObject) -> list[Violation]:
        sent = exchange.request_json()
        sent = sent if isinstance(sent, dict) else {}
        key = idempotency_key(exchange, route)
        if key is not None:
            used = (merchant_of(exchange), key)
            if used in self.keys:
                return []  # a reuse answered 2xx: the idempotency rule owns what it answered
            self.keys.add(used)
        check = CASHIN_ANSWER if route.kind == "CASHIN" else CASHOUT_ANSWER
        self.exercised[check.id] += 1
        found: list[Violation] = []
        wrong = []
        if body.get("kind") != route.kind:
            wrong.append(f"kind is {body.get('kind')!r}, expected {route.kind!r}")
        if body.get("status") != "pending":
            wrong.append(f"status is {body.get('status')!r}, expected 'pending'")
        if "amount" in sent and not same_amount(body.get("amount"), sent.get("amount")):
            wrong.append(f"amount is {body.get('amount')!r}, expected {sent.get('amount')!r}")
        if wrong:
            found.append(
                Violation(
                    check,
                    f"{exchange.method} {route.template} answered {'; '.join(wrong)}",
                    (exchange,),
                    expected=f"kind {route.kind}, status pending, the amount sent",
                    actual="; ".join(wrong),
                )
            )
        ref = body.get("ref")
        if not isinstance(ref, str) or not ref:
            return found
        number, merchant = sent.get("number"), merchant_of(exchange)
        created = Created(exchange, ref, route.kind, sent.get("amount"), number, merchant)
        self.exercised[UNIQUE_REFS.id] += 1
        earlier = self.created.get(ref)
        if earlier is None:
            self.created[ref] = created
            return found
        self.answered_twice.add(ref)
        found.append(
            Violation(
                UNIQUE_REFS,
                f"two creations were answered one ref {ref}: #{earlier.exchange.seq} "
                f"({earlier.kind.lower()}) and #{exchange.seq} ({route.kind.lower()})",
                (earlier.exchange, exchange),
                expected="a ref of its own for every creation",
                actual=f"ref {ref} answered twice",
            )
        )
        return found

    # --- find: FIND-001, and the processed status it shows ------------------------------------
    def _find(self, exchange: Exchange, route: Route, body: JsonObject) -> list[Violation]:
        ref = body.get("ref") or route.path_params.get("ref")
        if not isinstance(ref, str):
            return []
        status = body.get("status")
        if isinstance(status, str) and status != "pending" and ref not in self.processed:
            self.processed[ref] = Processed(status, exchange, merchant_of(exchange))
        found = self._outcome(ref, status, exchange)
        created = self._created(ref)
        if created is None:
            return found
        self.exercised[FIND_VALUES.id] += 1
        wrong = _differs(body, created)
        if not wrong or (FIND_VALUES.id, ref) in self._reported:
            return found
        self._reported.add((FIND_VALUES.id, ref))
        return found + [
            Violation(
                FIND_VALUES,
                f"find {ref} answered {'; '.join(wrong)} (created by #{created.exchange.seq})",
                (created.exchange, exchange),
                expected="find answers the kind, amount and customer that were created",
                actual="; ".join(wrong),
            )
        ]

    def _created(self, ref: str) -> Created | None:
        """The creation of ``ref``, unless two creations were answered it (which one find or an
        event describes is then anybody's guess: FMT-001 has already named the defect)."""
        return None if ref in self.answered_twice else self.created.get(ref)

    # --- the events list ----------------------------------------------------------------------
    def _events(self, exchange: Exchange, body: JsonObject) -> list[Violation]:
        items = body.get("transactions")
        if not isinstance(items, list):
            return []
        events = [e for e in items if isinstance(e, dict)]
        listing = Listing.of(exchange)
        found = self._records(exchange, events)
        found += self._filters(exchange, listing, events)
        found += self._total(exchange, listing, body, events)
        found += self._processed_listed(exchange, listing, body, events)
        return found

    def _records(self, exchange: Exchange, events: list[JsonObject]) -> list[Violation]:
        """LIFE-001 for created events, LIFE-002/003 for processed ones: the creation's data."""
        found = []
        for event in events:
            data = data_of(event)
            ref = data.get("ref")
            created = self._created(ref) if isinstance(ref, str) else None
            if created is None:
                continue
            kind = event.get("event_kind")
            if kind == CREATED:
                check = CREATED_EVENT
                wrong = created_values_differ(
                    data, created.ref, created.kind, created.amount, str(created.number),
                    prefix="data.",
                )  # fmt: skip
            elif kind == PROCESSED:
                if {(FIND_VALUES.id, ref), (CREATED_EVENT.id, f"record:{ref}")} & self._reported:
                    continue  # the same wrong data, already named where it was first seen
                check = outcome_check(data.get("status"))
                wrong = [f"data.{w}" for w in _differs(data, created)]
            else:
                continue
            self.exercised[CREATED_EVENT.id] += kind == CREATED
            if not wrong or (check.id, f"record:{created.ref}") in self._reported:
                continue
            self._reported.add((check.id, f"record:{created.ref}"))
            found.append(
                Violation(
                    check,
                    f"the {kind} event of {created.ref} says {'; '.join(wrong)} "
                    f"(created by #{created.exchange.seq})",
                    (created.exchange, exchange),
                    expected="the event carries the created transaction's data",
                    actual="; ".join(wrong),
                )
            )
        return found

    def _filters(
        self, exchange: Exchange, listing: Listing, events: list[JsonObject]
    ) -> list[Violation]:
        """EVT-003..006: every event listed matches every filter of the request."""
        if listing.repeated:
            return []  # status=a&status=b: no single filter to judge against
        found = []
        for name, wanted in listing.filters.items():
            check = FILTERS[name]
            self.exercised[check.id] += 1
            strays = [e for e in events if not _matches(name, data_of(e).get(name), wanted)]
            if not strays:
                continue
            shown = ", ".join(
                f"{data_of(e).get('ref')} {e.get('event_kind')} {name}={data_of(e).get(name)!r}"
                for e in strays[:3]
            )
            found.append(
                Violation(
                    check,
                    f"the events list filtered by {name}={wanted!r} listed {len(strays)} of "
                    f"{len(events)} event(s) that do not match it: {shown}",
                    (exchange,),
                    expected=f"only events whose {name} is {wanted!r}",
                    actual=shown,
                )
            )
        return found

    def _total(
        self, exchange: Exchange, listing: Listing, body: JsonObject, events: list[JsonObject]
    ) -> list[Violation]:
        """EVT-007: "total (total number of matching events)". Never fewer than shown; on a first
        page with room left, all of them."""
        total, limit, offset = body.get("total"), body.get("limit"), body.get("offset", 0)
        if not _integer(total) or listing.repeated:
            return []
        self.exercised[TOTAL.id] += 1
        shown = len(events)
        problem = ""
        if total < shown:
            problem = f"total is {total}, yet the page lists {shown} event(s)"
        elif _integer(limit) and offset in (0, None) and shown < limit and total != shown:
            problem = (
                f"total is {total}, yet the first page (limit {limit}) lists all {shown} "
                "matching event(s)"
            )
        if not problem:
            return []
        return [
            Violation(
                TOTAL,
                f"the events list {problem}",
                (exchange,),
                expected="total counts the matching events the listing shows",
                actual=problem,
            )
        ]

    # --- LIFE-002/003: the processed event listed ---------------------------------------------
    def _processed_listed(
        self, exchange: Exchange, listing: Listing, body: JsonObject, events: list[JsonObject]
    ) -> list[Violation]:
        found = []
        for ref, seen in self.processed.items():
            if seen.listed or seen.reported or not self._complete_for(ref, listing, body, events):
                continue
            if seen.merchant != merchant_of(exchange):
                continue  # another merchant's listing need not show it
            if lists_processed(ref, events):
                seen.listed = True
                self.listed_exercised += 1
                continue
            if exchange.started - answered_at(seen.exchange) < self.eventual_s:
                seen.soon.append(exchange)  # may be recorded a moment late: settled at the end
                continue
            self.listed_exercised += 1
            seen.reported = True
            found.append(self.missing(ref, seen, exchange))
        return found

    def missing(
        self,
        ref: str,
        seen: Processed,
        listing: Exchange | None,
        confirmations: tuple[dict[str, object], ...] = (),
    ) -> Violation:
        """LIFE-002 (success) or LIFE-003 (failed): find showed the outcome, no event lists it."""
        check = outcome_check(seen.status)
        proof = (seen.exchange, listing) if listing is not None else (seen.exchange, *seen.soon)
        where = f"listed by #{listing.seq}" if listing else "listed by the judge at the end"
        return Violation(
            check,
            f"find #{seen.exchange.seq} answered {ref} {seen.status!r}, yet its events "
            f"({where}, {self.eventual_s:g} s or more later) hold no transaction:processed event",
            proof,
            expected="a transaction:processed event once the customer confirmed or cancelled",
            actual="only the created event listed",
            confirmations=confirmations,
        )

    def _complete_for(
        self, ref: str, listing: Listing, body: JsonObject, events: list[JsonObject]
    ) -> bool:
        """Whether this listing shows every event of ``ref`` the filters let through, the
        processed one included: its filters all admit the ref's processed event, and the page is
        the whole of the result."""
        if listing.repeated or listing.others:
            return False  # from/to, event-kind, anything else: not the ref's whole history
        created = self._created(ref)
        seen = self.processed[ref]
        for name, wanted in listing.filters.items():
            value: object = {
                "ref": ref,
                "status": seen.status,
                "client": created.number if created else None,
                "kind": created.kind if created else None,
            }[name]
            if value is None or not _matches(name, value, wanted):
                return False
        if "ref" not in listing.filters and created is None:
            return False
        total, limit, offset = body.get("total"), body.get("limit"), body.get("offset", 0)
        if offset not in (0, None):
            return False
        whole = _integer(total) and len(events) >= total
        room = _integer(limit) and len(events) < limit
        return bool(whole or room)

    def unsettled(self) -> list[tuple[str, Processed]]:
        """Processed refs whose complete listings all came too soon: the judge lists them."""
        return [
            (ref, seen)
            for ref, seen in self.processed.items()
            if seen.soon and not seen.listed and not seen.reported
        ]


def lists_processed(ref: str, events: list[JsonObject]) -> bool:
    """Whether ``events`` hold the transaction:processed event of ``ref``."""
    return any(data_of(e).get("ref") == ref and e.get("event_kind") == PROCESSED for e in events)


def _integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _matches(name: str, value: object, wanted: str) -> bool:
    """An event's field against a filter value: a number in any notation, one outcome for
    ``success``/``successful``, a kind in any case."""
    if name == "client":
        return same_number(value, wanted)
    if name == "status":
        return isinstance(value, str) and same_outcome(value, wanted)
    if name == "kind":
        return isinstance(value, str) and value.upper() == wanted.upper()
    return bool(value == wanted)


def _differs(record: JsonObject, created: Created) -> list[str]:
    """How a lookup (or a processed event's data) differs from its creation: kind, amount,
    customer. The status is not compared: the customer may have confirmed or cancelled since."""
    wrong = []
    if record.get("kind") != created.kind:
        wrong.append(f"kind is {record.get('kind')!r}, expected {created.kind!r}")
    if created.amount is not None and not same_amount(record.get("amount"), created.amount):
        wrong.append(f"amount is {record.get('amount')!r}, expected {created.amount!r}")
    if isinstance(created.number, str) and not same_number(record.get("client"), created.number):
        wrong.append(f"client is {record.get('client')!r}, expected {created.number!r}")
    return wrong
