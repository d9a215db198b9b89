"""The document's "Endpoints: 4. List transaction events" and "Events", with the event record
and envelope of "Resources and their fields" (EVT-001..014).

The envelope and the spelling of its keys, the records, every filter (each kind, each status;
the ``from``/``to`` window of RC-24), totals that count events and paging, the order, the sum
of the amounts (fractions too), and reads that record nothing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Context, Decimal
from functools import partial
from typing import TYPE_CHECKING, NamedTuple, get_args

from conformance.checks import Findings, check
from conformance.event_window import bound_text, event_ids, inside, js_date_text, outside, stamp_of
from conformance.suite.states_and_transitions import usable_customer
from paysuite_core.api_types import EventData, EventKind, EventsPage, JsonObject, field_types
from paysuite_core.driver import timestamps
from paysuite_core.driver.api import SUCCESS_STATUSES, data_of
from paysuite_core.request_data import same_number
from paysuite_core.results.outcome import expect, fail, not_applicable, precondition
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application

EVENT_KINDS = get_args(EventKind)
PROCESSED = "transaction:processed"
CREATED = "transaction:created"
ENVELOPE_INTS = ("limit", "offset", "total")
#: The envelope's keys the document does not name, and the record's data, with their types.
ENVELOPE_OPTIONAL = {k: t for k, t in field_types(EventsPage).items() if k not in ENVELOPE_INTS}
del ENVELOPE_OPTIONAL["transactions"]
DATA_TYPES = {k: t for k, t in field_types(EventData).items() if k != "processed_at"}


def _typed(value: object, types: tuple[type, ...]) -> bool:
    return not isinstance(value, bool) and isinstance(value, types)


def record_problems(event: object) -> list[str]:
    if not isinstance(event, dict):
        return [f"an event record is {type(event).__name__}, not an object"]
    problems = []
    if not isinstance(event.get("event_id"), str):
        problems.append(f"event_id {event.get('event_id')!r} is not a string")
    if event.get("event_kind") not in EVENT_KINDS:
        problems.append(f"event_kind {event.get('event_kind')!r} is not one of {EVENT_KINDS}")
    if not isinstance(event.get("created_at"), str):
        problems.append("created_at is not a string")
    data = event.get("data")
    if not isinstance(data, dict):
        return problems + ["data is not an object"]
    for name, types in DATA_TYPES.items():
        if not _typed(data.get(name), types):
            problems.append(f"data.{name} is {data.get(name)!r}")
    if data.get("kind") not in ("CASHIN", "CASHOUT"):
        problems.append(f"data.kind {data.get('kind')!r}")
    processed_at = data.get("processed_at")
    if event.get("event_kind") == "transaction:processed" and not isinstance(processed_at, str):
        problems.append(f"data.processed_at of a processed event is {processed_at!r}")
    elif processed_at is not None and not isinstance(processed_at, str):
        problems.append(f"data.processed_at is {processed_at!r}")
    return problems


@check(
    "EVT-001",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the list answers the envelope: limit, offset, total, transactions",
    "The list response holds limit, offset, total and the transactions array of event records.",
)
def the_list_answers_the_envelope(target: Target) -> None:
    app = target.need_writer()
    target.created("CASHIN", app)
    reply = target.list_events(app)
    expect(reply.ok, f"the events list answered {reply.status}", reply)
    body = reply.body
    expect(isinstance(body, dict), "the events list is not a JSON object", reply)
    problems = [
        f"{name} is {body.get(name)!r}, not an integer"
        for name in ENVELOPE_INTS
        if not _typed(body.get(name), (int,))
    ]
    if not isinstance(body.get("transactions"), list):
        problems.append("transactions is not an array")
    for name, types in ENVELOPE_OPTIONAL.items():
        if name in body and body[name] is not None and not _typed(body[name], types):
            problems.append(f"{name} is {body[name]!r}, expected {types[0].__name__}")
    found = Findings(problems, reply)
    found.verdict("limit, offset, total integers and a transactions array", prefix="envelope: ")


@check(
    "EVT-002",
    "MUST",
    Section.RESOURCES,
    "event records carry the documented fields and types",
    "Event record: event_id, event_kind, created_at, data (ref, kind, fee, merchant, client, "
    "amount, status, created_at, processed_at).",
)
def event_records_carry_the_documented_fields(target: Target) -> None:
    app = target.need_writer()
    _, created = target.created("CASHIN", app)
    reply = target.eventually(
        lambda: target.list_events(app, ref=created["ref"]),
        partial(_refused_or_lists, ref=created["ref"]),
    )
    expect(
        reply.ok and isinstance(reply.get("transactions"), list),
        f"the events list answered {reply.status}",
        reply,
    )
    reply_all = target.list_events(app)
    records = list(reply.get("transactions")) + list(reply_all.get("transactions") or [])
    precondition(
        any(data_of(e).get("ref") == created["ref"] for e in records if isinstance(e, dict)),
        f"no event of the new transaction {created['ref']} is listed (LIFE-001)",
        reply,
    )
    problems = {problem for event in records for problem in record_problems(event)}
    found = Findings(sorted(problems), reply, reply_all)
    found.verdict(prefix="event records: ", limit=10, actual="none")


def _lists(reply: Reply, ref: str | None, kind: str | None = CREATED) -> bool:
    """Whether the page shows an event of ``ref`` (of ``kind``, or of any kind with None)."""
    return any(
        data_of(e).get("ref") == ref and kind in (None, e.get("event_kind"))
        for e in reply.get("transactions") or []
    )


def _refused_or_lists(reply: Reply, ref: str | None, kind: str | None = CREATED) -> bool:
    """Done waiting: the list refused (the check says so), or it shows what was awaited."""
    return not reply.ok or ref is None or _lists(reply, ref, kind)


class _Made(NamedTuple):
    """Customers ``a`` and ``b`` and the refs made for them (``a_in``, ``b_in``, ``a_out``)."""

    a: str
    b: str
    refs: dict[str, str]


def _setup_filters(target: Target, app: Application) -> _Made:
    """Two customers: A with a cashin and a cashout, B with a cashin (+ a processed one)."""
    a, b = target.number(), target.number()
    made = _Made(a, b, {"a_in": target.created("CASHIN", app, number=a)[1]["ref"]})
    made.refs["b_in"] = target.created("CASHIN", app, number=b)[1]["ref"]
    if target.writer("CASHOUT") is not None and (app.can_cashout()):
        made.refs["a_out"] = target.created("CASHOUT", app, number=a)[1]["ref"]
    return made


@check(
    "EVT-003",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the ref filter returns exactly the events of that transaction",
    "Query parameters, all optional filters: ref (string), transaction reference key.",
)
def the_ref_filter_returns_exactly_that_transaction(target: Target) -> None:
    """Two cashins and a cashout (when the application may cash out): each ref filter returns
    that transaction's events and nothing else."""
    app = target.need_writer()
    made = _setup_filters(target, app)
    cases = [(made.refs["a_in"], made.a), (made.refs["b_in"], made.b)]
    if "a_out" in made.refs:
        cases.append((made.refs["a_out"], made.a))
    for ref, number in cases:
        reply = target.eventually(
            partial(target.list_events, app, ref=ref),
            partial(_refused_or_lists, ref=ref),
        )
        precondition(reply.ok, f"the events list with ref={ref} answered {reply.status}", reply)
        items = reply.get("transactions") or []
        others = [data_of(e).get("ref") for e in items if data_of(e).get("ref") != ref]
        expect(
            not others,
            f"ref={ref} also returned events of {sorted(set(map(str, others)))[:3]}",
            reply,
            expected=f"only events whose data.ref is {ref}",
            actual=f"{len(others)} event(s) of other refs",
        )
        if not any(e.get("event_kind") == "transaction:created" for e in items):
            recorded = [
                e for e in target.events_of(app, client=number) if data_of(e).get("ref") == ref
            ]
            precondition(recorded, f"no event was recorded for {ref} at all (LIFE-001)", reply)
            fail(
                f"ref={ref} missed the transaction's created event, which the client filter lists",
                reply,
                expected=f"the transaction:created event of {ref}",
                actual=f"{len(items)} event(s), none of them its created event",
            )


@check(
    "EVT-004",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the client filter returns only that customer's events",
    "Query parameters, all optional filters: client (string), customer phone number.",
)
def the_client_filter_returns_only_that_customer(target: Target) -> None:
    app = target.need_writer()
    made = _setup_filters(target, app)
    wanted = {made.refs[k] for k in ("a_in", "a_out") if k in made.refs}

    def listing() -> Reply:
        reply = target.list_events(app, client=made.a, limit=100)
        return target.list_events(app, client=made.a) if reply.rejected else reply

    reply = target.eventually(
        listing,
        lambda r: (
            not r.ok or wanted <= {data_of(e).get("ref") for e in r.get("transactions") or []}
        ),
    )
    items = reply.get("transactions") or []
    expect(reply.ok, f"client filter answered {reply.status}", reply)
    others = {
        data_of(e).get("client") for e in items if not same_number(data_of(e).get("client"), made.a)
    }
    expect(not others, f"client={made.a} also returned events of {sorted(map(str, others))}", reply)
    refs = {data_of(e).get("ref") for e in items}
    for ref in sorted(wanted - refs):
        # A transaction that recorded no event at all is LIFE-001's defect, not the filter's.
        precondition(
            target.events_for_ref(app, ref), f"no event was recorded for {ref} at all (LIFE-001)"
        )
    expect(
        wanted <= refs,
        f"client={made.a} missed {sorted(wanted - refs)}",
        reply,
        expected=f"the events of {sorted(wanted)}",
        actual=f"not listed: {sorted(wanted - refs)}",
    )


@check(
    "EVT-005",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the kind filter returns only events of that kind",
    "Query parameters, all optional filters: kind (string), CASHIN or CASHOUT.",
)
def the_kind_filter_returns_only_that_kind(target: Target) -> None:
    app = target.need_writer()
    made = _setup_filters(target, app)
    for kind, key in (("CASHIN", "a_in"), ("CASHOUT", "a_out")):
        wanted = made.refs.get(key)
        reply = target.eventually(
            partial(target.list_events, app, kind=kind, client=made.a),
            partial(_refused_or_lists, ref=wanted, kind=None),
        )
        items = reply.get("transactions") or []
        expect(reply.ok, f"kind={kind} answered {reply.status}", reply)
        wrong = [data_of(e).get("kind") for e in items if data_of(e).get("kind") != kind]
        expect(
            not wrong, f"kind={kind} returned events of kind {sorted(set(map(str, wrong)))}", reply
        )
        if wanted is not None:
            ref = wanted
            if ref in {data_of(e).get("ref") for e in items}:
                continue
            recorded = {data_of(e).get("kind") for e in target.events_for_ref(app, ref, wait=True)}
            # A transaction recorded under the other kind is TXN's defect, not the filter's.
            precondition(
                kind in recorded, f"{ref} is recorded with kind {sorted(map(str, recorded))}"
            )
            fail(
                f"kind={kind} missed {ref}, whose events record kind {kind}",
                reply,
                expected=f"the events of {ref} listed under kind={kind}",
                actual="not listed",
            )


@check(
    "EVT-006",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the status filter finds each status (pending, success, failed) and returns only it",
    "Query parameters, all optional filters: status (string), transaction status.",
)
def the_status_filter_returns_only_that_status(target: Target) -> None:
    """Each status the document names: a pending cashin, and with a customer driver a
    confirmed cashin (success or successful) and a cancelled cashout (failed), each found under
    its status and nothing of another status listed. Either reading of the filter is accepted:
    the event's snapshot status or the transaction's current one."""
    app = target.need_writer()
    number = target.number()
    _, pending = target.created("CASHIN", app, number=number)
    current: dict[str, object] = {pending["ref"]: "pending"}
    confirmed = cancelled = None
    customer = target.need_customer()
    if customer.unavailable_reason() is None and customer.driver != "magic-numbers":
        _, confirmed = target.created("CASHIN", app, number=number)
        _, cancelled = target.created(
            "CASHOUT" if app.can_cashout() else "CASHIN", app, number=number
        )
        target.resolve(confirmed["ref"], "confirm")
        target.resolve(cancelled["ref"], "cancel")
        for made, outcome in ((confirmed, "confirm"), (cancelled, "cancel")):
            current[made["ref"]] = _settled(target, app, made["ref"], outcome)
        precondition(
            current[cancelled["ref"]] == "failed",
            f"the cancelled {cancelled['ref']} reads {current[cancelled['ref']]!r} (LIFE-003)",
        )

    def allowed(event: JsonObject, wanted: tuple[str, ...]) -> bool:
        data = data_of(event)
        return data.get("status") in wanted or current.get(str(data.get("ref"))) in wanted

    reply = target.eventually(
        lambda: target.list_events(app, status="pending", client=number),
        lambda r: (
            not r.ok
            or pending["ref"] in {data_of(e).get("ref") for e in r.get("transactions") or []}
        ),
    )
    items = reply.get("transactions") or []
    expect(reply.ok, f"status=pending answered {reply.status}", reply)
    wrong = [e for e in items if not allowed(e, ("pending",))]
    expect(
        not wrong,
        f"status=pending returned {len(wrong)} event(s) of another status "
        f"({data_of(wrong[0]).get('status') if wrong else ''})",
        reply,
    )
    refs = {data_of(e).get("ref") for e in items}
    expect(pending["ref"] in refs, f"status=pending missed the pending {pending['ref']}", reply)
    failed = target.list_events(app, status="failed", client=number)
    wrong = [e for e in failed.get("transactions") or [] if not allowed(e, ("failed",))]
    expect(not wrong, f"status=failed returned {len(wrong)} event(s) of another status", failed)
    if cancelled is not None:
        listed = {data_of(e).get("ref") for e in failed.get("transactions") or []}
        expect(
            failed.ok and cancelled["ref"] in listed,
            f"status=failed missed the cancelled {cancelled['ref']}",
            failed,
            expected=f"the events of {cancelled['ref']}, which find reads failed",
            actual=f"{len(listed)} transaction(s) listed, not that one",
        )
    if confirmed is not None:
        found = False
        proof = []
        for value in SUCCESS_STATUSES:
            ok = target.list_events(app, status=value, client=number)
            proof.append(ok)
            items = ok.get("transactions") or []
            wrong = [e for e in items if not allowed(e, SUCCESS_STATUSES)]
            expect(not wrong, f"status={value} returned events of another status", ok)
            found |= confirmed["ref"] in {data_of(e).get("ref") for e in items}
        expect(
            found, f"neither status=success nor status=successful found {confirmed['ref']}", *proof
        )


def _settled(target: Target, app: Application, ref: str, outcome: str) -> object:
    """The status find reads once the customer's ``outcome`` took effect, its processed event
    listed (a precondition: leaving pending and recording it are LIFE-002/003's rules)."""
    status = target.wait_processed(ref, app).get("status")
    precondition(
        status not in (None, "pending"),
        f"{ref} never left pending after the customer's {outcome} (LIFE-002/003)",
    )
    events = target.eventually(
        lambda: target.events_for_ref(app, ref),
        lambda items: any(e.get("event_kind") == "transaction:processed" for e in items),
    )
    precondition(
        any(e.get("event_kind") == "transaction:processed" for e in events),
        f"no transaction:processed event was recorded for {ref} (LIFE-002/003)",
    )
    return status


@check(
    "EVT-007",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "total counts the matching events (a processed transaction's two); limit and offset "
    "page consistently",
    "total: integer (total number of matching events); limit: integer (page size).",
)
def total_matches_and_limit_offset_page_consistently(target: Target) -> None:
    """Three cashins of one customer, the first confirmed when a customer driver can: total
    counts events, not transactions, so the confirmed one counts twice (its created and its
    processed event), under the client filter, under its ref and on every page; the list without
    a filter, and under kind=CASHIN, count at least as many."""
    app = target.need_writer()
    number = target.number()
    before = 0
    if not target.numbers.unique:  # a configured number may carry earlier events
        before = target.list_events(app, client=number).get("total") or 0
    refs = [target.created("CASHIN", app, number=number)[1]["ref"] for _ in range(3)]
    processed = 0
    customer = usable_customer(target)
    if customer is not None and customer.driver != "magic-numbers":
        target.resolve(refs[0], "confirm")
        _settled(target, app, refs[0], "confirm")
        processed = 1
    expected_total = before + 3 + processed
    reply = target.eventually(
        lambda: target.list_events(app, client=number),
        lambda r: (
            not r.ok or not isinstance(r.get("total"), int) or r.get("total") >= expected_total
        ),
    )
    precondition(reply.ok, f"the events list answered {reply.status}", reply)
    items = reply.get("transactions") or []
    precondition(
        all(same_number(data_of(e).get("client"), number) for e in items),
        "the client filter, which scopes this count, listed other customers' events (EVT-004)",
        reply,
    )
    total = reply.get("total")
    expect(
        isinstance(total, int) and total >= len(items),
        f"total {total!r} is below the {len(items)} events on the page",
        reply,
    )
    if len(items) >= total:  # one page holds them all: it must hold exactly total
        expect(total == len(items), f"total {total} but {len(items)} events listed", reply)
    expect(
        total == expected_total,
        f"total is {total} for a customer with {before} events before 3 new transactions"
        + (", one of them processed (a created and a processed event)" if processed else ""),
        reply,
        expected=f"{expected_total}: the matching events, a processed transaction's two counted",
        actual=str(total),
    )
    _wider_totals_hold(target, app, total)
    if processed:
        one = target.list_events(app, ref=refs[0])
        listed = [e for e in one.get("transactions") or [] if data_of(e).get("ref") == refs[0]]
        precondition(
            one.ok and len(listed) == 2, f"ref={refs[0]} lists {len(listed)} events (EVT-003)", one
        )
        expect(
            one.get("total") == 2,
            f"total is {one.get('total')!r} under ref={refs[0]}, which lists its created and "
            "processed events",
            one,
            expected="2: the transaction's created and processed events",
            actual=repr(one.get("total")),
        )
    page = target.list_events(app, client=number, limit=1, offset=0)
    if not page.ok or page.get("limit") != 1 or len(page.get("transactions") or []) != 1:
        return  # the target does not honour limit: nothing more to check
    seen = []
    proof = [page]
    pages = min(total, 10)
    for offset in range(pages):
        step = target.list_events(app, client=number, limit=1, offset=offset)
        proof.append(step)
        step_items = step.get("transactions") or []
        expect(len(step_items) == 1, f"limit=1&offset={offset} returned {len(step_items)}", step)
        expect(step.get("total") == total, f"total changed to {step.get('total')} on a page", step)
        expect(step.get("offset") == offset, f"offset echoed as {step.get('offset')!r}", step)
        seen.append(step_items[0].get("event_id"))
    expect(
        len(set(seen)) == pages,
        f"{pages} pages of one returned {len(set(seen))} distinct events",
        *proof[-3:],
    )
    beyond = target.list_events(app, client=number, limit=1, offset=total)
    expect(
        beyond.ok and not (beyond.get("transactions") or []),
        f"offset={total} (past the end) did not return an empty page",
        beyond,
    )


def _wider_totals_hold(target: Target, app: Application, customer_total: int) -> None:
    """The customer's events are among the merchant's, and all of them are cashins: the list
    without a filter, and under ``kind=CASHIN``, counts at least as many (other clients' events
    only add to it). An implementation that counts a wider list from running totals it never
    kept answers less."""
    for filters in ({}, {"kind": "CASHIN"}):
        wider = target.list_events(app, **filters)
        shown = "&".join(f"{k}={v}" for k, v in filters.items()) or "no filter"
        if not wider.ok:
            continue  # a refused filter is EVT-005's
        total = wider.get("total")
        expect(
            isinstance(total, int) and total >= customer_total,
            f"{shown}: total is {total!r}, below the {customer_total} events of one of its "
            "customers",
            wider,
            expected=f"at least {customer_total}: every event of the merchant matches",
            actual=repr(total),
        )
        expect(
            bool(wider.get("transactions")),
            f"{shown}: an empty page, though the merchant's customer has {customer_total} events",
            wider,
        )


@check(
    "EVT-008",
    "SHOULD",
    Section.EVENTS,
    "events are listed newest first (RC-22)",
    "Ordering of the events in the list: not shown.",
    "reference",
)
def events_are_listed_newest_first(target: Target) -> None:
    app = target.need_writer()
    number = target.number()
    refs = [target.created("CASHIN", app, number=number)[1]["ref"] for _ in range(3)]
    reply = target.list_events(app, client=number)
    listed = [data_of(e).get("ref") for e in reply.get("transactions") or []][:3]
    expect(
        listed == list(reversed(refs)),
        f"order {listed}, RC-22 lists newest first ({list(reversed(refs))})",
        reply,
    )
    stamps = [timestamps.parse(e.get("created_at")) for e in reply.get("transactions") or []]
    moments = [s.moment for s in stamps if s]
    expect(moments == sorted(moments, reverse=True), "created_at is not descending", reply)


@check(
    "EVT-009",
    "SHOULD",
    Section.RESOURCES,
    "the envelope echoes the filters and sums the amounts (RC-26, RC-27)",
    "Meaning of the top-level fields amount, client, event-kind, kind, ref and status in the "
    "list response: not shown.",
    "reference",
)
def the_envelope_echoes_the_filters_and_sums_amounts(target: Target) -> None:
    app = target.need_writer()
    number = target.number()
    before = 0
    if not target.numbers.unique:  # a configured number may carry earlier events
        before = target.list_events(app, client=number, kind="CASHIN").get("amount") or 0
    amounts = [target.amount() for _ in range(2)]
    for amount in amounts:
        target.created("CASHIN", app, number=number, amount=amount)
    reply = target.list_events(app, client=number, kind="CASHIN", limit=1)
    body = reply.body if isinstance(reply.body, dict) else {}
    expected = {"client": number, "kind": "CASHIN", "ref": "", "status": "", "event-kind": ""}
    wrong = [
        f"{k} is {body.get(k)!r}, expected {v!r}" for k, v in expected.items() if body.get(k) != v
    ]
    if body.get("amount") != before + sum(amounts):
        wrong.append(
            f"amount is {body.get('amount')!r}, expected the sum {before + sum(amounts)} "
            "over all matching events (RC-27)"
        )
    expect(not wrong, "envelope (RC-26/27): " + "; ".join(wrong), reply)


@check(
    "EVT-010",
    "SHOULD",
    Section.ENDPOINT_EVENTS,
    "without limit the page holds up to 20 events (RC-23)",
    "Query parameters that set limit and offset: not shown. [The live service's default "
    "page size is 20.]",
    "reference",
)
def the_default_page_holds_up_to_20_events(target: Target) -> None:
    app = target.need_writer()
    number = target.number()
    for _ in range(11):  # 22 events would be needed for 20; 11 creations give 11 + a margin
        target.created("CASHIN", app, number=number)
    reply = target.list_events(app)
    precondition(reply.ok, f"the events list answered {reply.status}", reply)
    items = reply.get("transactions") or []
    total = reply.get("total")
    expect(
        reply.get("limit") == 20 and len(items) == min(20, total if isinstance(total, int) else 0),
        f"without limit the page holds {len(items)} of {total} events "
        f"(limit {reply.get('limit')!r}); RC-23 pages 20 by default",
        reply,
        expected="limit 20 and min(20, total) events",
        actual=f"limit {reply.get('limit')!r}, {len(items)} events of {total}",
    )
    if isinstance(total, int) and total > FAR_OFFSET:
        _far_offsets_reach_far(target, app)
    else:
        target.note(f"EVT-010: {total} events, too few to page past offset {FAR_OFFSET}")


#: EVT-010 pages this far: past the first few pages, where an offset clamped or wrapped shows.
FAR_OFFSET = 90


def _far_offsets_reach_far(target: Target, app: Application) -> None:
    """RC-23: ``offset`` skips that many events, however many: one event at each of a few far
    offsets must be the event a complete listing shows there (an offset clamped to a smaller
    one answers an earlier event). Judged on pages of 100 read right before (at most
    ``FAR_PAGES``), so that an event recorded meanwhile shifts both alike; events recorded between
    the reads (other clients', the history phase's) push the far ones down by as many as the
    ``total`` grew, so the window reaches back that far, plus three positions (newest first)."""
    before = target.list_events(app, limit=1)
    precondition(before.ok, f"the events list answered {before.status}", before)
    items = target.events_of(app, max_pages=FAR_PAGES)
    # Past the first pages, where a clamp (to 64, to 124) or a wrap would show; the last one.
    offsets = [o for o in sorted({65, FAR_OFFSET, 130, len(items) - 1}) if 65 <= o < len(items)]
    for offset in offsets:
        one = target.list_events(app, limit=1, offset=offset)
        precondition(one.ok, f"the events list with offset {offset} answered {one.status}", one)
        got = (one.get("transactions") or [{}])[0].get("event_id")
        grew = _grew(before.get("total"), one.get("total"))
        window = [item.get("event_id") for item in items[max(0, offset - grew - 3) : offset + 1]]
        expect(
            got in window,
            f"offset {offset} answered event {got}, not the one the pages of 100 show at "
            f"{offset} ({items[offset].get('event_id')})",
            one,
            expected=f"the event at position {offset} of the complete listing (RC-23)",
            actual=f"event {got}",
        )


def _grew(before: object, after: object) -> int:
    """How many events were recorded between two reads, by their ``total`` (0 when either is
    not a count)."""
    if isinstance(before, int) and isinstance(after, int):
        return max(0, after - before)
    return 0


#: How many pages of 100 EVT-010 reads to find the far offsets' events.
FAR_PAGES = 3


#: The keys as the document spells them: the envelope's, an event record's and its data's.
ENVELOPE_KEYS = (*ENVELOPE_OPTIONAL, *ENVELOPE_INTS, "transactions")
RECORD_KEYS = ("event_id", "event_kind", "created_at", "data")
DATA_KEYS = (*DATA_TYPES, "processed_at")


def _folded(key: str) -> str:
    """A key without case and separators: ``event-kind``, ``event_kind`` and ``eventKind``
    fold alike."""
    return "".join(ch for ch in key.lower() if ch.isalnum())


def misspelt_keys(body: object, documented: tuple[str, ...], where: str) -> list[str]:
    """Keys of ``body`` that carry a documented field under another spelling (``event_kind``
    for the envelope's ``event-kind``) while the document's spelling is absent. A key of the
    document's spelling beside it, or none at all, is no finding: the envelope's optional keys
    may be omitted (the live Go client reads them omitempty)."""
    if not isinstance(body, dict):
        return []
    spelt = {_folded(name): name for name in documented}
    return [
        f"{where} has {key!r} where the document spells {spelt[_folded(key)]!r}"
        for key in body
        if isinstance(key, str)
        and key not in documented
        and _folded(key) in spelt
        and spelt[_folded(key)] not in body
    ]


@check(
    "EVT-011",
    "MUST",
    Section.RESOURCES,
    "the list's keys are spelled as the document spells them (event-kind with a hyphen)",
    "Event list envelope: event-kind: string (the key is spelled with a hyphen). Event record: "
    "event_id, event_kind, created_at, data.",
)
def the_keys_are_spelled_as_documented(target: Target) -> None:
    """The envelope without filters and with every filter (the documented four, and the
    event-kind filter the live service takes, dropped if refused): a key the document names,
    present under another spelling, is that field misspelt; absent is fine."""
    app = target.need_writer()
    number = target.number()
    _, created = target.created("CASHIN", app, number=number)
    filters = {"ref": created["ref"], "client": number, "kind": "CASHIN", "status": "pending"}
    filtered = target.list_events(app, **filters, **{"event-kind": "transaction:created"})
    if filtered.rejected:  # the event-kind filter is not the document's: may be refused
        filtered = target.list_events(app, **filters)
    plain = target.list_events(app)
    precondition(plain.ok, f"the events list answered {plain.status} (EVT-001)", plain)
    problems: list[str] = []
    for reply in (plain, filtered):
        if not reply.ok:
            continue
        problems += misspelt_keys(reply.body, ENVELOPE_KEYS, "the envelope")
        for event in reply.get("transactions") or []:
            problems += misspelt_keys(event, RECORD_KEYS, "an event record")
            problems += misspelt_keys(data_of(event), DATA_KEYS, "an event's data")
    expect(
        not problems,
        "; ".join(sorted(set(problems))[:4]),
        filtered,
        plain,
        expected="event-kind (hyphen) in the envelope, event_kind (underscore) in records",
        actual=problems[0] if problems else "",
    )


@check(
    "EVT-012",
    "MUST",
    Section.EVENTS,
    "reading records nothing: finding and listing add no event and change no total",
    "Each stage of a transaction is recorded as an event. Each transaction passes through two "
    "event kinds. It stays there [pending] until the customer confirms or cancels. total: "
    "total number of matching events.",
)
def reading_records_nothing(target: Target) -> None:
    """A pending cashin and cashout of one customer, found twice each and listed: only a
    stage is an event, so the customer's events and their total read the same after the reads
    as before (RFC 9110 §9.2.1: GET is safe). A status that moved meanwhile with its processed
    event is a stage (time-outs are not shown), excluded from the count."""
    app = target.need_writer()
    number = target.number()
    kinds = ["CASHIN", "CASHOUT"] if app.can_cashout() else ["CASHIN"]
    refs = [target.created(kind, app, number=number)[1]["ref"] for kind in kinds]

    paging: dict[str, int] = {"limit": 100}

    def listing() -> Reply:
        return target.list_events(app, client=number, **paging)

    def lists_all(reply: Reply) -> bool:
        return not reply.ok or all(_lists(reply, ref) for ref in refs)

    before = target.eventually(listing, lists_all)
    if before.rejected:  # the target does not take limit: its default page
        paging.clear()
        before = target.eventually(listing, lists_all)
    precondition(
        before.ok and all(_lists(before, ref) for ref in refs),
        f"the created events of {refs} are not listed under their client (LIFE-001, EVT-004)",
        before,
    )
    reads = [target.find(ref, app) for ref in refs for _ in range(2)]
    reads.append(target.list_events(app, ref=refs[0]))
    again = {ref: target.find(ref, app).get("status") for ref in refs}
    after = listing()
    # A transaction that left pending meanwhile went through a stage (a time-out, "not
    # shown"): its processed event is no read's doing. Leaving pending without one is
    # LIFE's concern, not a verdict of this rule.
    moved = {ref for ref, status in again.items() if status != "pending"}
    precondition(
        not moved or all(_lists(after, ref, PROCESSED) for ref in moved),
        f"{sorted(moved)} left pending without a processed event while only being read",
        after,
    )

    def ids(reply: Reply) -> set[str]:
        return {
            str(e.get("event_id"))
            for e in reply.get("transactions") or []
            if not (data_of(e).get("ref") in moved and e.get("event_kind") == PROCESSED)
        }

    changed = []
    added = sorted(ids(after) - ids(before))
    if added or ids(before) - ids(after):
        changed.append(
            f"the customer's events went from {len(ids(before))} to {len(ids(after))}"
            + (f" (new: {', '.join(added[:3])})" if added else "")
        )
    if not moved and after.get("total") != before.get("total"):
        changed.append(f"total went from {before.get('total')!r} to {after.get('total')!r}")
    expect(
        not changed,
        "reading changed the record: " + "; ".join(changed),
        before,
        *reads[:2],
        after,
        expected="the same events and total after finds and listings",
        actual=changed[0] if changed else "",
    )


#: Wide enough that no sum of doubles (or of integers of a few hundred digits) is rounded.
_EXACT = Context(prec=1000, Emax=999_999, Emin=-999_999)
#: EVT-013's pause between its two creations, so that a ``from`` bound can fall between them.
APART_S = 1.0
#: How many pages of 100 EVT-013 reads of one window before it stops counting (a busy target).
WINDOW_PAGES = 5


@check(
    "EVT-013",
    "SHOULD",
    Section.ENDPOINT_EVENTS,
    "from and to bound the list and its total, both inclusive; a bare date is the whole day "
    "(RC-24); a JavaScript Date's text is an instant (RC-34)",
    "Query parameters, all optional filters: status, client, ref, kind. [The live service also "
    "takes from and to, a date range.]",
    "reference",
)
def from_and_to_bound_the_list(target: Target) -> None:
    """Two cashins of a fresh customer, A then B a second later; the bounds come from their
    events' own ``created_at`` (the target's clock, not this machine's). Five windows: from
    between A and B to two hours after B; from 90 minutes before A to three hours after B; from
    90 minutes before A to between A and B; a second either side of A and B; three hours
    before A to an hour after B (whole hours and parts of hours, where an implementation may
    count from per-hour totals and scan the edges). Under
    the client filter and over the merchant's whole list, each lists only events within the
    window, A's created event absent from the first, every event of the window listed, and
    ``total`` counts exactly what is listed (read before and after the pages, so other
    clients' events recorded meanwhile raise no alarm). Then ``from`` and ``to`` both B's UTC
    date: a bare date covers the whole day, so B is listed. Last, the wide window again as a
    JavaScript Date's text in UTC+2 (RC-34, as paypack-js sends a ``Date``): both listed."""
    app = target.need_writer()
    number = target.number()
    first = target.created("CASHIN", app, number=number)[1]["ref"]
    time.sleep(APART_S)
    second = target.created("CASHIN", app, number=number)[1]["ref"]
    a_event, b_event = _created_events(target, app, number, first, second)
    a, b = stamp_of(a_event), stamp_of(b_event)
    precondition(
        a is not None and b is not None,
        f"the created events' created_at ({a_event.get('created_at')!r}, "
        f"{b_event.get('created_at')!r}) name no instant (FMT-005)",
    )
    assert a is not None and b is not None  # for mypy: the precondition stopped otherwise
    lo = max(a.moment + (b.moment - a.moment) / 2, a.moment + timestamps.granularity(a))
    precondition(
        lo <= b.moment,
        f"B, created {APART_S} s after A, reads created_at {b.text}, not after A's {a.text}",
    )
    windows = (
        (lo, b.moment + timedelta(hours=2)),
        (a.moment - timedelta(minutes=90), b.moment + timedelta(hours=3)),
        # `to` between A and B: B, in the same hour as `to`, is out
        (a.moment - timedelta(minutes=90), lo),
        # a window of a few seconds (most often within one hour)
        (a.moment - timedelta(seconds=1), b.moment + timedelta(seconds=1)),
        # from hours before to an hour after: the hour of B at the window's end
        (a.moment - timedelta(hours=3), b.moment + timedelta(hours=1)),
    )
    for start, end in windows:
        wanted = [e for e in (a_event, b_event) if inside(e, start, end)]
        _judge_window(target, app, (start, end), {"client": number}, None)
        _judge_window(target, app, (start, end), {}, wanted)
    day = b.moment.astimezone(UTC).date()
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    whole_day = (midnight, midnight + timedelta(days=1, microseconds=-1))
    _judge_window(target, app, whole_day, {"ref": second}, [b_event], texts=(day.isoformat(),) * 2)
    # RC-34: the same wide window as a JavaScript Date's text (whole seconds, a +02:00 offset),
    # as paypack-js sends a Date.
    wide = (
        (a.moment - timedelta(minutes=90)).replace(microsecond=0),
        (b.moment + timedelta(hours=3, seconds=1)).replace(microsecond=0),
    )
    texts = (js_date_text(wide[0]), js_date_text(wide[1]))
    _judge_window(target, app, wide, {"client": number}, [a_event, b_event], texts=texts)


def _created_events(target: Target, app: Application, number: str, *refs: str) -> list[JsonObject]:
    """The ``transaction:created`` event of each of ``refs``, awaited under the client filter
    (an implementation may record them a moment after it answers)."""

    def created(items: list[JsonObject]) -> dict[str, JsonObject]:
        return {str(data_of(e).get("ref")): e for e in items if e.get("event_kind") == CREATED}

    items = target.eventually(
        lambda: target.events_of(app, client=number),
        lambda found: set(refs) <= set(created(found)),
    )
    events = created(items)
    missing = [ref for ref in refs if ref not in events]
    precondition(
        not missing, f"no created event of {missing} is listed under their client (EVT-004)"
    )
    return [events[ref] for ref in refs]


class _Window(NamedTuple):
    """One read of a window: its pages, their events, whether they reached ``total``, and the
    events that must be among them."""

    replies: list[Reply]
    items: list[JsonObject]
    complete: bool
    wanted: list[JsonObject]


def _judge_window(
    target: Target,
    app: Application,
    bounds: tuple[datetime, datetime],
    scope: dict[str, str],
    wanted: list[JsonObject] | None,
    *,
    texts: tuple[str, str] | None = None,
) -> None:
    """One window ``bounds`` under ``scope``, sent as ISO 8601 date-times in UTC (or as
    ``texts``: a bare date, a JavaScript Date's text): ``wanted`` must be listed (None: every
    event of the scope that lies surely within the window, read without the window each time),
    nothing outside it, and
    ``total`` the count of what the pages list. Read again while other traffic may explain a
    difference (at most ``EVENTUAL_S``)."""
    lo, hi = bounds
    sent = texts or (bound_text(lo), bound_text(hi))
    params = {**scope, "from": sent[0], "to": sent[1]}
    day = texts[0] if texts and texts[0] == texts[1] else None
    shown = "&".join(f"{k}={v}" for k, v in params.items())

    def read() -> _Window:
        due = wanted
        if due is None:
            due = [e for e in target.events_of(app, max_pages=20, **scope) if inside(e, lo, hi)]
        return _Window(*_window_pages(target, app, params), due)

    seen = target.eventually(read, lambda seen: not _window_problems(seen, lo, hi))
    if not seen.complete:
        target.note(f"EVT-013: {shown} holds more than {WINDOW_PAGES} pages: not counted")
    Findings(_window_problems(seen, lo, hi), *seen.replies[:3]).verdict(
        (
            f"every event of {day} (UTC): a bare date covers the whole day"
            if day
            else f"the events created within [{params['from']}, {params['to']}]"
        )
        + ", all of them, nothing else, and total their count (RC-24, both bounds inclusive)",
        prefix=f"{shown}: ",
    )


def _window_pages(
    target: Target, app: Application, params: dict[str, str]
) -> tuple[list[Reply], list[JsonObject], bool]:
    """The window's pages of 100 (one default page where ``limit`` is refused), at most
    ``WINDOW_PAGES``: (the replies, the events, whether they reached ``total``)."""
    replies: list[Reply] = []
    items: list[JsonObject] = []
    paging: dict[str, int] = {"limit": 100, "offset": 0}
    for _ in range(WINDOW_PAGES):
        reply = target.list_events(app, **params, **paging)
        if paging and reply.rejected and not replies:  # no limit/offset: one page
            paging = {}
            reply = target.list_events(app, **params)
        replies.append(reply)
        page = [e for e in reply.get("transactions") or [] if isinstance(e, dict)]
        items += page
        total = reply.get("total")
        if not reply.ok or not isinstance(total, int):
            return replies, items, False
        if not paging:  # one default page: complete when it holds the total
            return replies, items, len(page) >= total
        if not page or paging["offset"] + len(page) >= total:  # read to the end
            return replies, items, True
        paging["offset"] += len(page)
    return replies, items, False


def _label(event: JsonObject) -> str:
    return (
        f"the {event.get('event_kind')} event of {data_of(event).get('ref')} created at "
        f"{event.get('created_at')}"
    )


def _window_problems(seen: _Window, lo: datetime, hi: datetime) -> list[str]:
    """What one read of a window shows wrong (RC-24): a refusal, an event outside ``[lo, hi]``,
    and once every page is read, an event of ``wanted`` missing or a ``total`` that is not the
    count listed (between the first page's ``total`` and the last one's: events recorded
    between the pages)."""
    last = seen.replies[-1]
    if not last.ok:
        return [f"the list answered {last.status}"]
    found = []
    strays = [e for e in seen.items if outside(e, lo, hi)]
    if strays:
        found.append(f"{len(strays)} listed event(s) outside the window, {_label(strays[0])}")
    listed = event_ids(seen.items)
    if not seen.complete:
        return found
    missing = [e for e in seen.wanted if str(e.get("event_id")) not in listed]
    if missing:
        found.append(f"{len(missing)} event(s) of the window not listed, {_label(missing[0])}")
    before, after = seen.replies[0].get("total"), last.get("total")
    if not (isinstance(before, int) and isinstance(after, int) and before <= len(listed) <= after):
        then = f" (then {after!r})" if after != before else ""
        found.append(f"total is {before!r}{then}, but the pages list {len(listed)} event(s)")
    return found


@check(
    "EVT-014",
    "SHOULD",
    Section.RESOURCES,
    "the envelope's amount sums fractional amounts too, exactly (RC-13, RC-27)",
    "Event list envelope: amount: number. Meaning of the top-level fields amount, client, "
    "event-kind, kind, ref and status in the list response: not shown. [Cashin] amount: "
    "number, yes, Amount to deposit.",
    "reference",
)
def the_amount_sums_fractional_amounts(target: Target) -> None:
    """Cashins of a whole x, x.5 and x.25 for a fresh customer (x.5 and x.25 are exact in
    binary: every correct addition gives one sum): under the client filter the envelope's
    ``amount`` is the sum of ``data.amount`` over the matching events, a processed
    transaction's two included; under the ref of the x.5 one, that transaction's. A target
    that refuses a fractional amount leaves nothing to sum: not applicable (the document types
    the amount only as a number; RC-13 takes fractions). Runs after EVT-013: a fraction may
    move an implementation's totals to another path, and EVT-013 judges the whole numbers'."""
    app = target.need_writer()
    number = target.number()
    whole = target.amount()
    fractions = _fractional_amounts(target, whole)
    if len(fractions) < 2:
        not_applicable(f"the configured amount range holds no x.5 and x.25 near {whole}")
    plain = target.created("CASHIN", app, number=number, amount=whole)[1]["ref"]
    first = target.create("CASHIN", app, number=number, amount=fractions[0])
    if first.rejected:  # the whole amount was taken: the fraction is what is refused
        not_applicable(
            f"the target refuses the fractional amount {fractions[0]} ({first.status}), not "
            f"{whole}: nothing fractional to sum (RC-13 takes fractions; the document says "
            "only number)"
        )
    precondition(
        first.ok and isinstance(first.get("ref"), str) and not first.ref_reused,
        f"a cashin of {fractions[0]} answered {first.status} without a new ref",
        first,
    )
    second = target.created("CASHIN", app, number=number, amount=fractions[1])[1]["ref"]
    refs = [str(first.get("ref")), plain, second]
    sent = dict(zip(refs, (fractions[0], whole, fractions[1]), strict=True))
    for scope in ({"client": number}, {"ref": refs[0]}):
        _judge_sum(
            target, app, scope, {r: a for r, a in sent.items() if scope.get("ref") in (None, r)}
        )


def _fractional_amounts(target: Target, whole: int | float) -> list[float]:
    """Two amounts of ``whole``'s neighbourhood with the fractions .5 and .25 (exact doubles),
    inside the configured range."""
    low, high = (
        (target.config.amount.min, target.config.amount.max) if target.config else (100, 1e7)
    )
    found = []
    for fraction in (0.5, 0.25):
        fits = [whole + fraction, whole - 1 + fraction]
        found += [amount for amount in fits if low <= amount <= high][:1]
    return found


def _judge_sum(
    target: Target, app: Application, scope: dict[str, str], sent: dict[str, int | float]
) -> None:
    """The envelope's ``amount`` under ``scope`` is the exact sum of the listed events'
    ``data.amount`` (one page of 100 holding them all), once each of ``sent`` is listed with
    its amount."""

    def read() -> Reply:
        return target.list_events(app, **scope, limit=100)

    def listed_as_sent(reply: Reply) -> bool:
        amounts = {
            data_of(e).get("ref"): data_of(e).get("amount")
            for e in reply.get("transactions") or []
            if e.get("event_kind") == CREATED
        }
        return all(amounts.get(ref) == amount for ref, amount in sent.items())

    reply = target.eventually(
        read, lambda r: not r.ok or (listed_as_sent(r) and _sum_of(r) == r.get("amount"))
    )
    precondition(reply.ok, f"the events list answered {reply.status}", reply)
    items = reply.get("transactions") or []
    precondition(
        listed_as_sent(reply),
        f"the created events of {sorted(sent)} are not all listed with the amounts sent "
        f"({sorted(sent.values())}; EVT-002, EVT-004)",
        reply,
    )
    total = reply.get("total")
    precondition(
        total == len(items), f"total {total!r} for {len(items)} listed events (EVT-007)", reply
    )
    expected = _sum_of(reply)
    body = reply.body if isinstance(reply.body, dict) else {}
    got = body.get("amount")
    actual = repr(got) if "amount" in body else "no amount in the envelope"
    shown = "&".join(f"{k}={v}" for k, v in scope.items())
    why = ": the fractional amounts were left out" if got == _sum_of(reply, whole_only=True) else ""
    expect(
        not isinstance(got, bool) and got == expected,
        f"{shown}: amount is {actual}, not the sum {expected} of the {len(items)} matching "
        f"events' amounts (RC-27){why}",
        reply,
        expected=f"{expected}: the exact sum of data.amount over the matching events",
        actual=actual,
    )


def _sum_of(reply: Reply, *, whole_only: bool = False) -> int | float:
    """The exact sum of the listed events' ``data.amount`` (each double as the shortest decimal
    that reads back as it), as the nearest double, an integer while every amount is one."""
    amounts = [data_of(e).get("amount") for e in reply.get("transactions") or []]
    numbers = [a for a in amounts if isinstance(a, int | float) and not isinstance(a, bool)]
    if whole_only:
        numbers = [a for a in numbers if isinstance(a, int)]
    total = Decimal(0)
    for amount in numbers:
        total = _EXACT.add(total, Decimal(repr(amount)))
    return int(total) if all(isinstance(a, int) for a in numbers) else float(total)
