"""The events list judged against the model: filters, merchants, identities, snapshots, total.

What the model can know on a target shared with other clients is what the history owns: its
own customer numbers (drawn fresh) and refs. Under such a filter every listed event must be one
of the history's transactions (of the right merchant, with the right snapshot), each event
must keep its ``event_id`` and each ``event_id`` name one event, and every event due (its cause
answered more than the settle window ago) must be listed, with a ``total`` that counts them.
Under any filter nothing of another merchant is listed. The order of the list, the page size
and whether ``limit``/``offset``/``total`` are served are left open, as the document leaves them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from conformance.model.records import (
    EVENTS,
    IDEMPOTENCY,
    PRIVILEGES,
    SPELLINGS,
    Answer,
    ListEvents,
    Problem,
)
from conformance.model.state import State, Txn, World
from conformance.model.status_words import read_status
from conformance.model.verdicts import Judged, allow, forbid, note_reference
from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import data_of, same_amount, same_outcome
from paysuite_core.request_data import same_number

CREATED = "transaction:created"
PROCESSED = "transaction:processed"


@dataclass
class _Reading:
    """What one answer (a page, or every page of a walk) showed, as it is judged."""

    state: State
    items: list[JsonObject] = field(default_factory=list)
    seen: dict[tuple[str, str], str] = field(default_factory=dict)


def matches(filters: dict[str, str], data: JsonObject) -> str | None:
    """The filter an event's ``data`` does not match, or None."""
    for name, value in sorted(filters.items()):
        held = data.get(name)
        if name == "client" and not same_number(held, value):
            return name
        if name == "ref" and str(held).lower() != value.lower():
            return name
        if name == "kind" and held != value:
            return name
        if name == "status" and not same_outcome(held, value):
            return name
    return None


def owned(world: World, state: State, filters: dict[str, str]) -> bool:
    """Whether the filter selects only the history's own transactions (so the model knows every
    event it may list): a ref of the history, or a number drawn fresh for it."""
    if "ref" in filters:
        return state.txn(filters["ref"]) is not None
    if "client" in filters and world.unique_numbers:
        numbers = [t.number for t in state.txns] + [number for *_, number in state.landed]
        numbers += sorted(world.own_numbers)
        return any(same_number(number, filters["client"]) for number in numbers)
    return False


def list_events(
    world: World, state: State, request: ListEvents, answer: Answer, at: float, done: float
) -> Judged:
    app = world.app(request.app)
    family = EVENTS if request.spelling == "canonical" else SPELLINGS
    if not answer.ok:
        return _refused(world, state, request, answer)
    pages = answer.body if request.walk and isinstance(answer.body, list) else [answer.body]
    reading = _Reading(state)
    for page in pages:
        items = page.get("transactions") if isinstance(page, dict) else None
        if not isinstance(items, list):
            return forbid(
                family,
                "the events list answered without a transactions array",
                "the event list envelope",
            )
        reading.items.extend(item for item in items if isinstance(item, dict))
    filters = dict(request.filters)
    mine = owned(world, state, filters)
    for item in reading.items:
        problem = _judge_item(world, reading, item, filters, mine, app.merchant, done)
        if problem is not None:
            return Judged(
                (),
                replace(problem, family=SPELLINGS) if request.spelling != "canonical" else problem,
            )
    if mine and request.spelling == "canonical":
        problem = _complete(world, reading, request, pages, filters, app.merchant, at)
        if problem is not None:
            return Judged((), problem)
    if world.narrowing == "reference" and answer.status != 200:
        return note_reference(reading.state, f"the events list answered {answer.status}", "200")
    return allow(reading.state)


def _refused(world: World, state: State, request: ListEvents, answer: Answer) -> Judged:
    app = world.app(request.app)
    if request.spelling != "canonical" and answer.refused:
        return allow(state)
    if app.may_read("seed") is None and answer.refused:
        if world.narrowing == "reference":
            return note_reference(
                state,
                f"a {app.privilege} application's events list answered {answer.status}",
                "RC-12: any privilege reads",
            )
        return allow(state)
    return forbid(
        EVENTS,
        f"the events list filtered by {_shown(request.filters)} answered {answer.status}",
        "the list (2xx)",
    )


def _shown(filters: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"{name}={value}" for name, value in filters) or "nothing"


def _judge_item(
    world: World,
    reading: _Reading,
    item: JsonObject,
    filters: dict[str, str],
    mine: bool,
    merchant: str,
    done: float,
) -> Problem | None:
    data = data_of(item)
    ref, kind, event_id = data.get("ref"), item.get("event_kind"), item.get("event_id")
    missed = matches(filters, data)
    if missed is not None:
        return Problem(
            EVENTS,
            f"the list filtered by {missed}={filters[missed]} shows an "
            f"event whose {missed} is {data.get(missed)!r} (ref {ref})",
            f"only events whose {missed} matches",
        )
    txn = reading.state.txn(str(ref))
    if txn is None:
        if not mine:
            return None  # another client's event on a shared target: nothing to judge
        txn = _adopt_landed(reading, data, merchant, done)
        if txn is None:
            return _stranger(reading.state, data, filters)
    if txn.merchant != merchant:
        return Problem(
            PRIVILEGES,
            f"merchant {merchant}'s events list shows an event of "
            f"{txn.ref}, merchant {txn.merchant}'s",
            "only the merchant's own events",
        )
    if kind not in (CREATED, PROCESSED):
        return Problem(
            EVENTS,
            f"an event of {txn.ref} has event_kind {kind!r}",
            "transaction:created or transaction:processed",
        )
    problem = _identity(reading, txn, str(kind), event_id)
    if problem is not None:
        return problem
    return _snapshot(world, reading, txn, str(kind), data, done)


def _adopt_landed(reading: _Reading, data: JsonObject, merchant: str, done: float) -> Txn | None:
    """The unanswered creation of ``merchant`` that an event of an unknown ref shows landed
    (its kind, amount and customer), now a transaction of the history under that ref."""
    ref = data.get("ref")
    if not isinstance(ref, str) or not ref:
        return None
    for landing in sorted(reading.state.landed):
        owner, kind, amount, number = landing
        if (
            owner == merchant
            and data.get("kind") == kind
            and same_amount(data.get("amount"), amount)
            and same_number(data.get("client"), number)
        ):
            txn = Txn(ref, merchant, kind, amount, number, created=done)
            state = replace(reading.state, landed=reading.state.landed - {landing})
            reading.state = state.with_txn(txn)
            return txn
    return None


def _stranger(state: State, data: JsonObject, filters: dict[str, str]) -> Problem:
    """An event under the history's own filter that none of its creations made: a rejected
    creation executed after all (a reused key), or a transaction from nowhere."""
    sign = (str(data.get("kind")), data.get("amount"), str(data.get("client")))
    for _merchant, kind, amount, number in sorted(state.refused):
        if kind == sign[0] and same_amount(amount, sign[1]) and same_number(number, sign[2]):
            return Problem(
                IDEMPOTENCY,
                f"the list shows {data.get('ref')}, a {kind.lower()} "
                f"of {number} for {amount:g}: a creation the target refused was "
                "executed",
                "no transaction for a refused creation",
            )
    return Problem(
        EVENTS,
        f"the list filtered by {_shown(sorted(filters.items()))} shows "
        f"{data.get('ref')}, which no creation of the history answered",
        "the history's own transactions only",
    )


def _identity(reading: _Reading, txn: Txn, kind: str, event_id: object) -> Problem | None:
    if not isinstance(event_id, str) or not event_id:
        return Problem(EVENTS, f"an event of {txn.ref} has event_id {event_id!r}", "an identifier")
    where = (txn.ref, kind)
    if where in reading.seen and reading.seen[where] != event_id:
        return Problem(
            EVENTS,
            f"{txn.ref} has two {kind} events ({reading.seen[where]}, {event_id})",
            "one event per stage",
        )
    reading.seen[where] = event_id
    owner = reading.state.event_owner(event_id)
    if owner is not None and owner != where:
        return Problem(
            EVENTS,
            f"event_id {event_id} names the {kind} event of {txn.ref} and "
            f"the {owner[1]} event of {owner[0]}",
            "a unique event_id per event",
        )
    before = dict(txn.event_ids).get(kind)
    if before is not None and before != event_id:
        return Problem(
            EVENTS,
            f"the {kind} event of {txn.ref} was {before} and is now {event_id}",
            "an event keeps its identity",
        )
    if before is None:
        fresh = replace(txn, event_ids=tuple(sorted((*txn.event_ids, (kind, event_id)))))
        reading.state = reading.state.with_txn(fresh)
    return None


def _snapshot(
    world: World, reading: _Reading, txn: Txn, kind: str, data: JsonObject, done: float
) -> Problem | None:
    wrong = []
    if data.get("kind") != txn.kind:
        wrong.append(f"kind {data.get('kind')!r}")
    if not same_amount(data.get("amount"), txn.amount):
        wrong.append(f"amount {data.get('amount')!r}")
    if not same_number(data.get("client"), txn.number):
        wrong.append(f"client {data.get('client')!r}")
    if kind == CREATED and data.get("status") != "pending":
        wrong.append(f"status {data.get('status')!r}")
    if wrong:
        return Problem(
            EVENTS,
            f"the {kind} event of {txn.ref} records {', '.join(wrong)}",
            f"the transaction's snapshot: {txn.kind}, amount {txn.amount!r}, "
            f"client {txn.number}" + (", pending" if kind == CREATED else ""),
        )
    if kind != PROCESSED:
        return None
    current = reading.state.txn(txn.ref) or txn
    if data.get("status") == "pending":
        return Problem(
            EVENTS,
            f"the processed event of {txn.ref} records status pending",
            "the outcome the customer caused",
        )
    after, problem = read_status(
        world, current, data.get("status"), done, f"the processed event of {txn.ref}"
    )
    if problem is None:
        reading.state = reading.state.with_txn(after)
    return problem


def _due(world: World, txn: Txn, filters: dict[str, str], at: float) -> list[str]:
    """The events of ``txn`` under ``filters`` that must be listed at ``at``."""
    due = []
    base = {"client": txn.number, "ref": txn.ref, "kind": txn.kind}
    if (
        txn.created + world.settle_s < at
        and matches(filters, {**base, "status": "pending"}) is None
    ):
        due.append(CREATED)
    settled = txn.settled
    if settled is not None and settled + world.settle_s < at:
        if matches(filters, {**base, "status": txn.word}) is None:
            due.append(PROCESSED)
    return due


def _complete(
    world: World,
    reading: _Reading,
    request: ListEvents,
    pages: list[object],
    filters: dict[str, str],
    merchant: str,
    at: float,
) -> Problem | None:
    """Every event due is listed (when the answer is the whole list), and ``total`` agrees."""
    first = pages[0] if pages else {}
    total = first.get("total") if isinstance(first, dict) else None
    count = len(reading.items)
    offset = request.offset or 0
    if isinstance(total, int) and not isinstance(total, bool) and count and offset == 0:
        if total < count:
            return Problem(
                EVENTS, f"total is {total} with {count} events listed", f"at least {count}"
            )
    whole = request.walk or (
        offset == 0
        and (
            (isinstance(total, int) and total <= count)
            or (request.limit is not None and count < request.limit)
        )
    )
    due = [
        (txn.ref, kind)
        for txn in reading.state.txns
        if txn.merchant == merchant
        for kind in _due(world, txn, filters, at)
    ]
    if isinstance(total, int) and not isinstance(total, bool) and total < len(due):
        return Problem(
            EVENTS,
            f"total is {total} under {_shown(sorted(filters.items()))}, "
            f"which selects {len(due)} events recorded by now",
            f"a total of at least {len(due)}",
        )
    if not whole:
        return None
    missing = [f"{kind} of {ref}" for ref, kind in due if (ref, kind) not in reading.seen]
    if missing:
        return Problem(
            EVENTS,
            f"the list under {_shown(sorted(filters.items()))} lacks {', '.join(missing[:4])}",
            f"every event recorded by now (causes answered over {world.settle_s:g} s before)",
        )
    if isinstance(total, int) and not request.walk and total != count:
        return Problem(
            EVENTS, f"total is {total} on a page of all {count} matching events", f"{count}"
        )
    totals = {p.get("total") if isinstance(p, dict) else None for p in pages}
    last = pages[-1].get("transactions") if pages and isinstance(pages[-1], dict) else None
    ended = last == [] or (isinstance(total, int) and count >= total)
    if request.walk and ended and totals == {total} and isinstance(total, int) and total != count:
        # every page said the same total (nothing landed meanwhile) and the walk went to its
        # end (an empty page, or as many as the total): it listed what the total counts
        return Problem(
            EVENTS,
            f"total is {total} on every page of a walk that listed {count} events under "
            f"{_shown(sorted(filters.items()))}",
            f"{count}",
        )
    return None
