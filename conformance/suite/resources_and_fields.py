"""The document's "Resources and their fields", with the JSON bodies of "Endpoints"
(FMT-001..009).

UUID refs (unique across the whole run) and event ids, the three timestamp shapes, UTC, JSON
everywhere, and one transaction reading the same wherever it appears.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from conformance.checks import Findings, check
from conformance.suite.authentication import fresh_refresh_token
from conformance.suite.states_and_transitions import OUTCOMES, creatable_kinds, usable_customer
from paysuite_core.api_types import JsonObject
from paysuite_core.driver import timestamps
from paysuite_core.driver.api import (
    AUTHORIZE,
    CASHIN,
    EVENTS,
    REFRESH_PATHS,
    UUID_RE,
    data_of,
    find_path,
)
from paysuite_core.request_data import same_number
from paysuite_core.results.outcome import expect, fail, not_applicable, precondition
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.customer import Outcome
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application


PROCESSED = "transaction:processed"


def _creators(
    target: Target,
) -> tuple[list[tuple[str, Application]], list[tuple[str, Application]]]:
    """(kind, application) for each kind some application may create, and for a second
    merchant when one is configured (at most one): a ref names one transaction service-wide."""
    own = [(kind, app) for kind in ("CASHIN", "CASHOUT") if (app := target.writer(kind))]
    if not own:
        return own, []
    other = [
        (kind, app)
        for app in target.apps("read-write", "cashin", "cashout")
        if app.merchant != own[0][1].merchant
        for kind in ("CASHIN", "CASHOUT")
        if (app.can_cashin() if kind == "CASHIN" else app.can_cashout())
    ]
    return own, other[:1]


@check(
    "FMT-001",
    "MUST",
    Section.RESOURCES,
    "refs are UUID-shaped and unique across every creation of the run (both kinds, each merchant)",
    "ref: Unique reference key, UUID-shaped, generated at creation.",
)
def refs_are_uuid_shaped_and_unique(target: Target) -> None:
    """Cashins and cashouts interleaved (a cashout handed the previous cashin's ref, or the
    reverse, is caught), one of another merchant when configured; and every creation of the
    whole run counts: a ref handed out again by any check's creation fails here, whichever
    check drew it (those checks stop as errors, this rule fails)."""
    own, other = _creators(target)
    if not own:
        not_applicable("no application may create transactions")
    replies = [target.create(kind, app) for _ in range(4) for kind, app in own]
    replies += [target.create(kind, app) for kind, app in other]
    dupes = target.ref_reuses  # these creations' and every earlier one's of the run
    if dupes:
        first = dupes[0]
        origin = target.ref_origins.get(str(first.get("ref")))
        fail(
            f"ref {first.get('ref')} was returned by two creations "
            f"({len(dupes)} reuse(s) among the {len(target.refs_seen) + len(dupes)} "
            "creations of this run)",
            origin,
            first,
            expected="a new ref for every creation",
            actual=f"{first.exchange.method} {first.exchange.url} answered ref "
            f"{first.get('ref')}, already answered to an earlier creation",
        )
    refused = [r for r in replies if not (r.ok and isinstance(r.get("ref"), str))]
    precondition(not refused, "a creation failed, so its ref cannot be judged", *refused[:1])
    bad = [r for r in replies if not UUID_RE.match(str(r.get("ref")))]
    expect(
        not bad,
        f"ref {bad[0].get('ref')!r} is not UUID-shaped" if bad else "",
        *bad[:1],
        expected="a UUID-shaped ref (8-4-4-4-12 hexadecimal digits)",
        actual=repr(bad[0].get("ref")) if bad else "",
    )


@check(
    "FMT-002",
    "MUST",
    Section.RESOURCES,
    "event ids are UUID-shaped and unique",
    "event_id: Unique event identifier, UUID-shaped.",
)
def event_ids_are_uuid_shaped_and_unique(target: Target) -> None:
    """An event id names one event: the created and processed events of one transaction, the
    events of different transactions and the events of different pages never share one."""
    app = target.need_writer()
    number = target.number()
    refs = [target.created("CASHIN", app, number=number)[1]["ref"] for _ in range(3)]
    precondition(len(set(refs)) == 3, f"three creations returned refs {refs} (FMT-001)")
    customer = target.need_customer()
    if customer.unavailable_reason() is None and customer.driver == "sandbox":
        target.resolve(refs[0], "confirm")
        target.wait_processed(refs[0], app)
        target.wait_until(
            lambda: target.events_for_ref(app, refs[0]),
            lambda items: len(items) >= 2,
            timeout_s=min(10.0, target.driver_timeout()),
        )
    events: list[JsonObject] = []
    proof = []
    for ref in refs:
        found = target.events_for_ref(app, ref, wait=True)
        precondition(found, f"no event is listed for the transaction {ref} just created (LIFE-001)")
        events += found
    page_ids: list[list[object]] = []
    for offset in (0, 2):  # two pages, when the target pages with limit/offset
        page = target.list_events(app, client=number, limit=2, offset=offset)
        proof.append(page)
        if page.ok and page.get("limit") == 2:
            page_ids.append([e.get("event_id") for e in page.get("transactions") or []])
    bad = [e.get("event_id") for e in events if not UUID_RE.match(str(e.get("event_id")))]
    expect(
        not bad,
        f"event_id {bad[0] if bad else ''!r} is not UUID-shaped",
        *proof,
        expected="UUID-shaped event ids",
        actual=f"event_id {bad[0] if bad else ''!r}",
    )
    named: dict[object, tuple[object, object]] = {}
    clashes = []
    for event in events:
        identity = (data_of(event).get("ref"), event.get("event_kind"))
        seen = named.setdefault(event.get("event_id"), identity)
        if seen != identity:
            clashes.append(f"{event.get('event_id')} names both {seen} and {identity}")
    if len(page_ids) == 2:
        shared = set(page_ids[0]) & set(page_ids[1])
        if shared:
            clashes.append(
                f"pages offset=0 and offset=2 (limit=2) share ids {sorted(map(str, shared))}"
            )
    Findings(clashes, *proof).verdict(
        "one event_id per event", prefix="event ids are not unique: ", limit=3, actual="first"
    )


@check(
    "FMT-003",
    "MUST",
    Section.RESOURCES,
    "creation created_at is an ISO 8601 instant (zone given) with fractional seconds",
    "created_at: ISO 8601 timestamp in UTC with fractional seconds.",
)
def creation_created_at_is_an_instant_with_fraction(target: Target) -> None:
    """A cashin's and a cashout's: one creation response for both."""
    for kind in creatable_kinds(target):
        now = datetime.now(UTC)
        reply, created = target.created(kind, target.need_writer(kind))
        problem = timestamps.instant_with_fraction(created.get("created_at"))
        problem = problem or timestamps.not_recent(created.get("created_at"), now)
        expect(
            problem is None,
            f"{kind.lower()} created_at: {problem}",
            reply,
            expected="the moment of creation: ISO 8601 with fractional seconds and a zone",
            actual=repr(created.get("created_at")),
        )


@check(
    "FMT-004",
    "MUST",
    Section.RESOURCES,
    "find timestamp is ISO 8601 with a numeric UTC offset and fractional seconds",
    "timestamp: ISO 8601 timestamp with a numeric UTC offset and fractional seconds.",
)
def find_timestamp_has_a_numeric_offset_and_fraction(target: Target) -> None:
    """A cashin's and a cashout's: one lookup response for both."""
    for kind in creatable_kinds(target):
        app = target.need_writer(kind)
        now = datetime.now(UTC)
        _, created = target.created(kind, app)
        reply = target.find(created["ref"], app)
        precondition(reply.ok, f"find answered {reply.status} (FIND-001)", reply)
        problem = timestamps.numeric_offset_with_fraction(reply.get("timestamp"))
        problem = problem or timestamps.not_recent(reply.get("timestamp"), now)
        expect(
            problem is None,
            f"find timestamp of a {kind.lower()}: {problem}",
            reply,
            expected="the moment of creation: ISO 8601, fraction, numeric offset (+hh:mm)",
            actual=repr(reply.get("timestamp")),
        )


Stamps = list[tuple[str, object]]


def _event_stamps(target: Target) -> tuple[Stamps, Stamps, Reply, Reply]:
    """(label, value) of every timestamp of a new cashin's and a new cashout's events (the
    cashin confirmed and the cashout cancelled when a sandbox driver can), and of their
    creation answers, with the first creation and the last listing that show them."""
    customer = usable_customer(target)
    driver = customer is not None and customer.driver == "sandbox"
    stamps: Stamps = []
    creations: Stamps = []
    replies: list[Reply] = []
    for kind, outcome in zip(creatable_kinds(target), OUTCOMES, strict=False):
        app = target.need_writer(kind)
        created_reply, created = target.created(kind, app, number=target.number())
        if driver:
            target.resolve(created["ref"], outcome)
            target.wait_processed(created["ref"], app)
        events = target.events_for_ref(app, created["ref"], wait=True)
        listing = target.list_events(app, ref=created["ref"])
        replies += [created_reply, listing]
        precondition(events, f"no event is listed for a new {kind.lower()} (LIFE-001)", listing)
        creations.append((f"{kind.lower()} creation created_at", created.get("created_at")))
        for event in events:
            label = f"{kind.lower()} {event.get('event_kind')}"
            stamps.append((f"{label} created_at", event.get("created_at")))
            data = data_of(event)
            for name in ("created_at", "processed_at"):
                value = data.get(name)
                if name == "processed_at" and event.get("event_kind") != PROCESSED and not value:
                    continue  # nothing processed yet: null, absent or empty are all honest
                stamps.append((f"{label} data.{name}", value))
    return stamps, creations, replies[0], replies[-1]


@check(
    "FMT-005",
    "MUST",
    Section.RESOURCES,
    "event timestamps are ISO 8601 instants (zone given)",
    "created_at: ISO 8601 timestamp in UTC. data.created_at, data.processed_at: ISO 8601, "
    "UTC, up to nanosecond fraction.",
)
def event_timestamps_are_iso_8601_instants(target: Target) -> None:
    now = datetime.now(UTC)
    stamps, _, _, listing = _event_stamps(target)
    problems = [
        f"{label}: {problem}"
        for label, value in stamps
        if (problem := timestamps.instant(value) or timestamps.not_recent(value, now)) is not None
    ]
    expected = "ISO 8601 date-times with a zone, naming the moments just passed"
    Findings(problems, listing).verdict(expected, actual="first")


@check(
    "FMT-007",
    "SHOULD",
    Section.RESOURCES,
    "the timestamps the document puts in UTC are written in UTC (Z or +00:00)",
    "created_at: ISO 8601 timestamp in UTC with fractional seconds. [Event] created_at: ISO "
    "8601 timestamp in UTC. [The live service writes +02:00 in creation and data "
    "timestamps: the same instant, another offset.]",
)
def utc_timestamps_are_written_in_utc(target: Target) -> None:
    events, creations, created_reply, listing = _event_stamps(target)
    stamps = [*creations, *events]
    found = Findings((), created_reply, listing)
    for label, value in stamps:
        stamp = timestamps.parse(value)
        if stamp is not None and stamp.zone is not None and not stamp.is_utc:
            found.add(f"{label} {value!r} has offset {stamp.zone}")
    found.verdict(
        "Z or +00:00 where the document says UTC", prefix="not in UTC: ", limit=4, actual="first"
    )


def _appearances(
    target: Target, kind: str, outcome: Outcome
) -> tuple[Reply, Reply, list[JsonObject]]:
    """A new ``kind``, processed by the customer's ``outcome`` when a driver can: its
    creation answer, find's answer and every event listed for it."""
    app = target.need_writer(kind)
    customer = usable_customer(target)
    driver = customer is not None
    number = target.number()
    if customer is not None:
        number = customer.number_for(outcome, number)
    created_reply, created = target.created(kind, app, number=number)
    ref = created["ref"]
    if driver:
        target.resolve(ref, outcome)
        settled = target.wait_processed(ref, app)
        precondition(
            settled.get("status") not in (None, "pending"),
            f"the {kind.lower()} never left pending after the customer's {outcome} (LIFE-002/003)",
            settled,
        )
    found = target.find(ref, app)
    precondition(
        found.ok, f"find of the new {kind.lower()} answered {found.status} (FIND-001)", found
    )
    events = target.eventually(
        lambda: target.events_for_ref(app, ref), lambda items: len(items) >= (2 if driver else 1)
    )
    precondition(events, f"no event is listed for the new {kind.lower()} (LIFE-001)")
    return created_reply, found, events


def disagreements(created: JsonObject, found: JsonObject, events: list[JsonObject]) -> list[str]:
    """Where one transaction reads differently in its creation answer, find's answer and each
    event's ``data``: ref, kind and amount everywhere, the customer (in any notation) and the
    merchant between find and the events, and ``created_at`` as one instant. The status and
    the fee may change between stages; what each must be is LIFE's rule."""
    problems = []
    for name in ("ref", "kind", "amount"):
        if name in found and found.get(name) != created.get(name):
            problems.append(f"find {name} {found.get(name)!r} but creation {created.get(name)!r}")
    for event in events:
        data = data_of(event)
        label = event.get("event_kind")
        for name in ("ref", "kind", "amount"):
            if data.get(name) != created.get(name):
                problems.append(
                    f"{label} data.{name} {data.get(name)!r} but creation {created.get(name)!r}"
                )
        if not same_number(data.get("client"), found.get("client")):
            problems.append(
                f"{label} data.client {data.get('client')!r} but find {found.get('client')!r}"
            )
        if data.get("merchant") != found.get("merchant"):
            problems.append(
                f"{label} data.merchant {data.get('merchant')!r} but find {found.get('merchant')!r}"
            )
        if timestamps.same_instant(data.get("created_at"), created.get("created_at")) is False:
            problems.append(
                f"{label} data.created_at {data.get('created_at')!r} is another instant than "
                f"the creation's created_at {created.get('created_at')!r}"
            )
    return problems


@check(
    "FMT-008",
    "MUST",
    Section.RESOURCES,
    "a transaction reads the same in its creation answer, find and every event",
    "A transaction is identified by a unique reference key (ref). [Creation: amount, "
    "created_at, kind, ref; lookup: amount, client, kind, merchant, ref; event data: ref, "
    "kind, merchant, client, amount, created_at: the fields of that one transaction.]",
)
def a_transaction_reads_the_same_everywhere(target: Target) -> None:
    """A cashin confirmed and a cashout cancelled (or both pending without a customer driver):
    one ref names one transaction, so each field the creation answer, find and the events
    share must agree, timestamps as instants in whatever offset each is written."""
    for kind, outcome in zip(creatable_kinds(target), OUTCOMES, strict=False):
        created_reply, found, events = _appearances(target, kind, outcome)
        created = created_reply.body
        problems = disagreements(created, found.body, events)
        if problems:
            fail(
                f"the {kind.lower()} {created.get('ref')} reads differently: "
                + "; ".join(problems[:4]),
                created_reply,
                found,
                target.list_events(target.need_writer(kind), ref=created.get("ref")),
                expected="the same ref, kind, amount, client, merchant and creation instant "
                "everywhere",
                actual=problems[0],
            )


@check(
    "FMT-009",
    "SHOULD",
    Section.RESOURCES,
    "find's timestamp of a pending transaction is the instant of its creation",
    "timestamp: ISO 8601 timestamp with a numeric UTC offset and fractional seconds. "
    "[Which moment it names is not shown; for a transaction still pending, its creation is "
    "the only moment there is.]",
)
def find_timestamp_is_the_creation_instant(target: Target) -> None:
    """A cashin and a cashout, still pending: whether ``timestamp`` names the creation or
    the last change, it is the creation instant then (the lookup's own time is neither)."""
    for kind in creatable_kinds(target):
        app = target.need_writer(kind)
        created_reply, created = target.created(kind, app)
        found = target.find(created["ref"], app)
        precondition(found.ok, f"find answered {found.status} (FIND-001)", found)
        precondition(
            found.get("status") == "pending",
            f"the new {kind.lower()} is already {found.get('status')!r}",
            found,
        )
        agree = timestamps.same_instant(found.get("timestamp"), created.get("created_at"))
        expect(
            agree is not False,
            f"find's timestamp {found.get('timestamp')!r} of the pending {kind.lower()} is "
            f"another instant than its creation's created_at {created.get('created_at')!r}",
            created_reply,
            found,
            expected=f"the instant {created.get('created_at')}, in any offset",
            actual=str(found.get("timestamp")),
        )


def _is_json(reply: Reply) -> bool:
    media = reply.content_type.split(";")[0].strip().lower()
    return (media == "application/json" or media.endswith("+json")) and reply.is_json


@check(
    "FMT-006",
    "MUST",
    Section.ENDPOINTS,
    "every response, errors included, is JSON",
    "All bodies are JSON.",
)
def every_response_is_json(target: Target) -> None:
    app = target.need_writer()
    pair = target.pair(app, fresh=True)
    client = target.client
    replies = [
        target.authorize(app),
        client.post(AUTHORIZE, json={"client_id": "nobody", "client_secret": "x"}),
        target.create("CASHIN", app, key=target.fresh_key()),
        client.post(CASHIN, json={"amount": "x"}, token=pair.access),
        client.get(EVENTS, token=pair.access),
        client.get(EVENTS),
        client.get(find_path(str(uuid.uuid4())), token=pair.access),
    ]
    ref = replies[2].get("ref")
    if ref:
        replies.append(client.get(find_path(ref), token=pair.access))
    for template in REFRESH_PATHS:  # only the paths the target serves: either is conformant
        reply = target.refresh(fresh_refresh_token(target, app), template)
        if reply.ok:
            replies.append(reply)
            replies.append(target.refresh("not-a-token", template))
    bad = [r for r in replies if not _is_json(r)]
    expect(
        not bad,
        "; ".join(
            f"{r.exchange.method} {r.exchange.url} -> {r.status} with Content-Type "
            f"{r.content_type or '(none)'}{'' if r.is_json else ' and a non-JSON body'}"
            for r in bad
        ),
        *bad,
    )
