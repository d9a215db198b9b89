"""The document's "Endpoints: 4. List transaction events" and "Events", with the event record
and envelope of "Resources and their fields" (EVT-001..010).

The envelope, the records, every filter, totals and paging, the order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance import timestamps
from conformance.api import SUCCESS_STATUSES, data_of
from conformance.checks import Section, check
from conformance.outcome import expect, fail, not_applicable, precondition
from paysuite_core.request_data import same_number

if TYPE_CHECKING:
    from conformance.target import Target

EVENT_KINDS = ("transaction:created", "transaction:processed")
ENVELOPE_INTS = ("limit", "offset", "total")
ENVELOPE_OPTIONAL = {
    "amount": (int, float),
    "client": (str,),
    "event-kind": (str,),
    "kind": (str,),
    "ref": (str,),
    "status": (str,),
}
DATA_TYPES = {
    "ref": (str,),
    "kind": (str,),
    "fee": (int, float),
    "merchant": (str,),
    "client": (str,),
    "amount": (int, float),
    "status": (str,),
    "created_at": (str,),
}


def _app(target: Target):
    app = target.app("read-write") or target.writer("CASHIN")
    if app is None:
        not_applicable("no application may create transactions")
    return app


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
def the_list_answers_the_envelope(configured: Target) -> None:
    target = configured
    app = _app(target)
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
    expect(
        not problems,
        "envelope: " + "; ".join(problems),
        reply,
        expected="limit, offset, total integers and a transactions array",
        actual="; ".join(problems),
    )


@check(
    "EVT-002",
    "MUST",
    Section.RESOURCES,
    "event records carry the documented fields and types",
    "Event record: event_id, event_kind, created_at, data (ref, kind, fee, merchant, client, "
    "amount, status, created_at, processed_at).",
)
def event_records_carry_the_documented_fields(configured: Target) -> None:
    target = configured
    app = _app(target)
    _, created = target.created("CASHIN", app)
    reply = target.eventually(
        lambda: target.list_events(app, ref=created["ref"]),
        lambda r: not r.ok or _lists_created(r, created["ref"]),
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
    problems = []
    for event in records:
        problems += record_problems(event)
    expect(
        not problems, "event records: " + "; ".join(sorted(set(problems))[:10]), reply, reply_all
    )


def _lists_created(reply, ref: str) -> bool:
    return any(
        data_of(e).get("ref") == ref and e.get("event_kind") == "transaction:created"
        for e in reply.get("transactions") or []
    )


def _setup_filters(target: Target, app) -> dict:
    """Two customers: A with a cashin and a cashout, B with a cashin (+ a processed one)."""
    a, b = target.number(), target.number()
    made = {
        "a_in": target.created("CASHIN", app, number=a)[1],
        "b_in": target.created("CASHIN", app, number=b)[1],
    }
    if target.writer("CASHOUT") is not None and (app.can_cashout()):
        made["a_out"] = target.created("CASHOUT", app, number=a)[1]
    return {"a": a, "b": b, **made}


@check(
    "EVT-003",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the ref filter returns exactly the events of that transaction",
    "Query parameters, all optional filters: ref (string), transaction reference key.",
)
def the_ref_filter_returns_exactly_that_transaction(configured: Target) -> None:
    """Two transactions: each ref filter returns that transaction's events and nothing else."""
    target = configured
    app = _app(target)
    made = _setup_filters(target, app)
    refs = [made["a_in"]["ref"], made["b_in"]["ref"]]
    precondition(refs[0] != refs[1], f"two creations returned one ref {refs[0]} (FMT-001)")
    for ref, number in ((refs[0], made["a"]), (refs[1], made["b"])):
        reply = target.eventually(
            lambda ref=ref: target.list_events(app, ref=ref),
            lambda r, ref=ref: not r.ok or _lists_created(r, ref),
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
def the_client_filter_returns_only_that_customer(configured: Target) -> None:
    target = configured
    app = _app(target)
    made = _setup_filters(target, app)
    wanted = {made[k]["ref"] for k in ("a_in", "a_out") if k in made}

    def listing():
        reply = target.list_events(app, client=made["a"], limit=100)
        return target.list_events(app, client=made["a"]) if reply.rejected else reply

    reply = target.eventually(
        listing,
        lambda r: (
            not r.ok or wanted <= {data_of(e).get("ref") for e in r.get("transactions") or []}
        ),
    )
    items = reply.get("transactions") or []
    expect(reply.ok, f"client filter answered {reply.status}", reply)
    others = {
        data_of(e).get("client")
        for e in items
        if not same_number(data_of(e).get("client"), made["a"])
    }
    expect(
        not others, f"client={made['a']} also returned events of {sorted(map(str, others))}", reply
    )
    refs = {data_of(e).get("ref") for e in items}
    expect(wanted <= refs, f"client={made['a']} missed {sorted(wanted - refs)}", reply)


@check(
    "EVT-005",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "the kind filter returns only events of that kind",
    "Query parameters, all optional filters: kind (string), CASHIN or CASHOUT.",
)
def the_kind_filter_returns_only_that_kind(configured: Target) -> None:
    target = configured
    app = _app(target)
    made = _setup_filters(target, app)
    for kind, key in (("CASHIN", "a_in"), ("CASHOUT", "a_out")):
        wanted = made[key]["ref"] if key in made else None
        reply = target.eventually(
            lambda kind=kind: target.list_events(app, kind=kind, client=made["a"]),
            lambda r, wanted=wanted: (
                not r.ok
                or wanted is None
                or wanted in {data_of(e).get("ref") for e in r.get("transactions") or []}
            ),
        )
        items = reply.get("transactions") or []
        expect(reply.ok, f"kind={kind} answered {reply.status}", reply)
        wrong = [data_of(e).get("kind") for e in items if data_of(e).get("kind") != kind]
        expect(
            not wrong, f"kind={kind} returned events of kind {sorted(set(map(str, wrong)))}", reply
        )
        if key in made:
            ref = made[key]["ref"]
            if ref in {data_of(e).get("ref") for e in items}:
                continue
            recorded = {data_of(e).get("kind") for e in target.events_for_ref(app, ref, wait=True)}
            # A transaction recorded under the other kind is TXN's defect, not the filter's.
            precondition(kind in recorded, f"{ref} is recorded with kind {sorted(recorded)}")
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
    "the status filter returns only events of that status",
    "Query parameters, all optional filters: status (string), transaction status.",
)
def the_status_filter_returns_only_that_status(configured: Target) -> None:
    """Accept either reading of the filter: the event's snapshot status or the current one."""
    target = configured
    app = _app(target)
    number = target.number()
    _, pending = target.created("CASHIN", app, number=number)
    confirmed = None
    customer = target.need_customer()
    if customer.unavailable_reason() is None and customer.driver != "magic-numbers":
        _, confirmed = target.created("CASHIN", app, number=number)
        target.resolve(confirmed["ref"], "confirm")
        target.wait_processed(confirmed["ref"], app)
    current = {pending["ref"]: "pending"}
    if confirmed is not None:
        current[confirmed["ref"]] = target.find(confirmed["ref"], app).get("status")
        precondition(
            current[confirmed["ref"]] not in (None, "pending"),
            f"the confirmed {confirmed['ref']} never left pending (LIFE-002)",
        )
        precondition(
            any(
                e.get("event_kind") == "transaction:processed"
                for e in target.eventually(
                    lambda: target.events_for_ref(app, confirmed["ref"]),
                    lambda items: any(
                        e.get("event_kind") == "transaction:processed" for e in items
                    ),
                )
            ),
            f"no transaction:processed event was recorded for {confirmed['ref']} (LIFE-002)",
        )

    def allowed(event: dict, wanted: tuple[str, ...]) -> bool:
        data = data_of(event)
        return data.get("status") in wanted or current.get(data.get("ref")) in wanted

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


@check(
    "EVT-007",
    "MUST",
    Section.ENDPOINT_EVENTS,
    "total matches the events; limit and offset page consistently",
    "total: integer (total number of matching events); limit: integer (page size).",
)
def total_matches_and_limit_offset_page_consistently(configured: Target) -> None:
    target = configured
    app = _app(target)
    number = target.number()
    before = 0
    if not target.numbers.unique:  # a configured number may carry earlier events
        before = target.list_events(app, client=number).get("total") or 0
    for _ in range(3):
        target.created("CASHIN", app, number=number)
    reply = target.eventually(
        lambda: target.list_events(app, client=number),
        lambda r: not r.ok or not isinstance(r.get("total"), int) or r.get("total") >= before + 3,
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
        total == before + 3,
        f"total is {total} for a customer with {before} events before 3 new transactions",
        reply,
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


@check(
    "EVT-008",
    "SHOULD",
    Section.EVENTS,
    "events are listed newest first (RC-22)",
    "Ordering of the events in the list: not shown.",
    "reference",
)
def events_are_listed_newest_first(configured: Target) -> None:
    target = configured
    app = _app(target)
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
def the_envelope_echoes_the_filters_and_sums_amounts(configured: Target) -> None:
    target = configured
    app = _app(target)
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
def the_default_page_holds_up_to_20_events(configured: Target) -> None:
    target = configured
    app = _app(target)
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
