"""The document's "States and transitions" (LIFE-001..008): pending until the customer acts,
then processed exactly once, each stage recorded by an event dated no earlier than the stage;
every rule on a cashin and on a cashout; and the reference's pending time-out (RC-18), where
the target declares one.

The customer is played by the configured driver (sandbox, magic numbers, a command, or the
operator); without one the checks after creation skip.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from conformance.checks import Findings, check, set_up_early
from paysuite_core.api_types import JsonObject
from paysuite_core.driver import timestamps
from paysuite_core.driver.api import (
    SUCCESS_STATUSES,
    created_values_differ,
    data_of,
    event_disagrees_with_find,
    status_changed,
)
from paysuite_core.request_data import same_number
from paysuite_core.results.outcome import (
    CouldNotCheck,
    NotApplicable,
    expect,
    fail,
    not_applicable,
    precondition,
)
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.customer import Customer, Outcome
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target

PROCESSED = "transaction:processed"
CREATED = "transaction:created"
OUTCOMES: tuple[Outcome, Outcome] = ("confirm", "cancel")


def creatable_kinds(target: Target) -> list[str]:
    """The kinds some application may create: the document states the lifecycle for cashin
    and cashout alike, so each rule is judged on both when the configuration allows."""
    kinds = [kind for kind in ("CASHIN", "CASHOUT") if target.writer(kind) is not None]
    if not kinds:
        not_applicable("no application may create transactions")
    return kinds


def usable_customer(target: Target) -> Customer | None:
    """The customer driver when it can act here; None lets a check go on without one."""
    customer = target.customer
    return customer if customer is not None and customer.unavailable_reason() is None else None


def _processed(
    target: Target, outcome: Outcome, *, kind: str = "CASHIN", judged: bool = True
) -> tuple[Reply, str, Reply, list[JsonObject]]:
    """Create a ``kind``, have the customer act, wait for the outcome; returns the creation's
    answer, its ref, find's answer and the events.

    ``judged``: whether a transaction left pending is this check's failure (LIFE-002/003) or
    only a precondition of it (a check about what happens *after* processing).
    """
    from paysuite_core.driver.customer import DriverUnavailable

    target.need_customer().need_available()
    app = target.need_writer(kind)
    number = target.need_customer().number_for(outcome, target.number())
    created_reply, created = target.created(kind, app, number=number)
    ref: str = created["ref"]
    try:
        target.resolve(ref, outcome)
    except DriverUnavailable as exc:
        not_applicable(str(exc))
    found = target.wait_processed(ref, app)
    precondition(found.ok, f"find answered {found.status} after the customer acted", found)
    if found.get("status") == "pending":
        precondition(
            judged,
            f"the {kind.lower()} never left pending after the customer's {outcome} (LIFE-002/003)",
            found,
        )
        fail(
            f"the {kind.lower()} is still pending {target.driver_timeout():g} s after the "
            f"customer's {outcome} (the driver's call succeeded)",
            created_reply,
            found,
            expected=f"a processed status after the customer's {outcome}",
            actual="pending",
        )
    events = target.wait_until(
        lambda: target.events_for_ref(app, ref),
        lambda items: any(e.get("event_kind") == PROCESSED for e in items),
        timeout_s=min(10.0, target.driver_timeout()),
    )
    return created_reply, ref, found, events


def _check_processed_event(found: Reply, events: list[JsonObject], ref: str) -> None:
    processed = [e for e in events if e.get("event_kind") == PROCESSED]
    expect(
        len(processed) == 1,
        f"{len(processed)} transaction:processed events for {ref}, expected exactly one",
        found,
    )
    data = data_of(processed[0])
    disagreement = event_disagrees_with_find(data.get("status"), found.get("status"))
    expect(
        disagreement is None,
        str(disagreement),
        found,
        expected=f"find's status {found.get('status')!r} in the processed event",
        actual=str(data.get("status")),
    )
    for name in ("amount", "kind", "client", "ref"):
        same = (
            same_number(data.get(name), found.get(name))
            if name == "client"
            else data.get(name) == found.get(name)
        )
        expect(
            same,
            f"processed event data.{name} {data.get(name)!r} differs from find's "
            f"{found.get(name)!r}",
            found,
            expected=f"{name} {found.get(name)!r}, as find answers it",
            actual=f"data.{name} {data.get(name)!r}",
        )
    # Whether the timestamps are well formed is FMT-005's rule; the order of two readable
    # ones is the lifecycle's.
    created_at = timestamps.parse(data.get("created_at"))
    processed_at = timestamps.parse(data.get("processed_at"))
    if created_at and processed_at and created_at.zone and processed_at.zone:
        expect(
            processed_at.moment >= created_at.moment,
            f"processed_at {processed_at.text} is before created_at {created_at.text}",
            found,
        )


@check(
    "LIFE-001",
    "MUST",
    Section.STATES,
    "each creation, cashin and cashout, records a transaction:created event with the created "
    "data, status pending",
    "(none) -> pending: Event transaction:created is recorded. The response carries ref and "
    "status pending.",
)
def creation_records_a_created_event(target: Target) -> None:
    """A cashin and a cashout each: "cashin or cashout request accepted" is one row of the
    table, and a service may record events on one code path only."""
    for kind in creatable_kinds(target):
        app = target.need_writer(kind)
        number = target.number()
        amount = target.amount()
        reply, created = target.created(kind, app, number=number, amount=amount)
        expect(
            created.get("status") == "pending",
            f"status {created.get('status')!r} at the {kind.lower()}'s creation",
            reply,
            expected="pending",
            actual=repr(created.get("status")),
        )
        events = target.wait_until(
            partial(target.events_for_ref, app, created["ref"]),
            lambda items: bool(items),
            timeout_s=10,
        )
        made = [e for e in events if e.get("event_kind") == CREATED]
        if len(made) != 1:
            listing = target.list_events(app, ref=created["ref"])
            fail(
                f"{len(made)} transaction:created events for the {kind.lower()} "
                f"{created['ref']}, expected exactly one",
                reply,
                listing,
                expected="exactly one transaction:created event",
                actual=f"{len(made)} ({len(events)} event(s) listed for the ref)",
            )
        wrong = created_values_differ(
            data_of(made[0]), created["ref"], kind, amount, number, prefix="data."
        )
        Findings(wrong, reply).verdict(
            f"the values created: kind {kind}, amount {amount}, client {number}, pending",
            prefix=f"the {kind.lower()}'s created event: ",
        )


@check(
    "LIFE-002",
    "MUST",
    Section.STATES,
    "after confirmation (cashin and cashout): success (or successful) and exactly one "
    "processed event",
    "pending -> customer confirms -> success (typically). Event transaction:processed is recorded.",
)
def confirmation_processes_to_success(target: Target) -> None:
    _judge_outcome(target, "confirm", SUCCESS_STATUSES, "success (or successful)")


def _judge_outcome(target: Target, outcome: Outcome, wanted: tuple[str, ...], said: str) -> None:
    """Each kind processed by the customer's ``outcome``: the status it must reach, and one
    processed event that agrees with find."""
    for kind in creatable_kinds(target):
        _, ref, found, events = _processed(target, outcome, kind=kind)
        expect(
            found.get("status") in wanted,
            f"after {'confirmation' if outcome == 'confirm' else 'cancellation'} the "
            f"{kind.lower()}'s status is {found.get('status')!r}, expected {said}",
            found,
            expected=" or ".join(wanted),
            actual=repr(found.get("status")),
        )
        _check_processed_event(found, events, ref)


@check(
    "LIFE-003",
    "MUST",
    Section.STATES,
    "after cancellation (cashin and cashout): failed and exactly one processed event",
    "pending -> customer cancels -> failed (typically). Event transaction:processed is recorded.",
)
def cancellation_processes_to_failed(target: Target) -> None:
    _judge_outcome(target, "cancel", ("failed",), "failed")


@check(
    "LIFE-004",
    "MUST",
    Section.STATES,
    "a processed cashin or cashout does not change again",
    "It stays there until the customer confirms or cancels. [...] transaction:processed: "
    "The customer confirms or cancels. A new event is created.",
)
def a_processed_transaction_does_not_change_again(target: Target) -> None:
    """A confirmed cashin and a confirmed cashout are each cancelled afterwards; one wait
    serves both."""
    from paysuite_core.driver.customer import DriverUnavailable

    processed = [
        (kind, *_processed(target, "confirm", kind=kind, judged=False)[1:3])
        for kind in creatable_kinds(target)
    ]
    if target.customer is not None and target.customer.driver in ("sandbox", "command"):
        for _, ref, _ in processed:
            try:
                target.resolve(ref, "cancel")
            except (DriverUnavailable, CouldNotCheck):
                pass  # refusing to act again is a fine answer
    time.sleep(target.quiet_s)
    for kind, ref, found in processed:
        app = target.need_writer(kind)
        again = target.find(ref, app)
        changed = status_changed(found.get("status"), again.get("status"))
        expect(
            changed is None,
            f"the {kind.lower()}: {changed} after a second customer action",
            found,
            again,
            expected=f"status stays {found.get('status')!r}",
            actual=str(again.get("status")),
        )
        events = [e for e in target.events_for_ref(app, ref) if e.get("event_kind") == PROCESSED]
        # Exactly one processed event is LIFE-002's rule; a second one is this rule's.
        expect(
            len(events) <= 1,
            f"{len(events)} processed events for the {kind.lower()} after a second customer action",
            again,
            expected="at most the one processed event of the first action",
            actual=f"{len(events)} processed events",
        )


@check(
    "LIFE-005",
    "SHOULD",
    Section.STATES,
    "a confirmed transaction reads exactly success, never successful (RC-17)",
    "Which of success and successful the service emits is inconsistent in the reference; "
    "treat both as a successful outcome.",
    "reference",
)
def a_confirmed_transaction_reads_exactly_success(target: Target) -> None:
    for kind in creatable_kinds(target):
        _, _, found, events = _processed(target, "confirm", kind=kind, judged=False)
        statuses = {found.get("status")} | {
            data_of(e).get("status") for e in events if e.get("event_kind") == PROCESSED
        }
        expect(
            statuses == {"success"},
            f"the confirmed {kind.lower()} reads {sorted(map(str, statuses))}, "
            "RC-17 chooses exactly 'success'",
            found,
            expected="success",
            actual=", ".join(sorted(map(str, statuses))),
        )


def dated_before_its_stage(event: JsonObject) -> str | None:
    """How an event's own ``created_at`` falls before the stage it records (the created
    event before ``data.created_at``, the processed one before ``data.processed_at``), beyond
    the granularity of both stamps; ``None`` when it does not or a stamp is unreadable (the
    shape is FMT-005's rule)."""
    stage = {CREATED: "created_at", PROCESSED: "processed_at"}.get(str(event.get("event_kind")))
    if stage is None:
        return None
    own = timestamps.parse(event.get("created_at"))
    when = timestamps.parse(data_of(event).get(stage))
    if own is None or when is None or own.zone is None or when.zone is None:
        return None
    if own.moment + timestamps.granularity(own) + timestamps.granularity(when) >= when.moment:
        return None
    early = (when.moment - own.moment).total_seconds()
    return (
        f"the {event.get('event_kind')} event of {data_of(event).get('ref')} is dated "
        f"{own.text}, {early:.6f} s before the stage it records (data.{stage} {when.text})"
    )


@check(
    "LIFE-006",
    "MUST",
    Section.EVENTS,
    "an event is not dated before the stage it records",
    "transaction:created: recorded when the transaction is created by cashin or cashout. "
    "transaction:processed: recorded when the customer confirms or cancels. A new event is "
    "created.",
)
def an_event_is_not_dated_before_its_stage(target: Target) -> None:
    """A confirmed cashin and a cancelled cashout (their created events only, without a
    customer driver): an event recorded late is fine, one dated before its stage is not. A
    creation and the customer's action are a round trip apart at least, far more than the
    granularity of stamps with a fraction (the slack allowed for each stamp's last digit)."""
    driver = usable_customer(target) is not None
    for kind, outcome in zip(creatable_kinds(target), OUTCOMES, strict=False):
        app = target.need_writer(kind)
        if driver:
            _, ref, _, events = _processed(target, outcome, kind=kind, judged=False)
        else:
            ref = target.created(kind, app)[1]["ref"]
            events = target.events_for_ref(app, ref, wait=True)
        precondition(events, f"no event is listed for the new {kind.lower()} (LIFE-001)")
        problems = [p for e in events if (p := dated_before_its_stage(e)) is not None]
        if problems:
            fail(
                "; ".join(problems),
                target.list_events(app, ref=ref),
                expected="each event's created_at at or after the stage it records",
                actual=problems[0],
            )


#: LIFE-007 judges a transaction left alone this long at most: a time-out ("not shown") may
#: end a pending transaction after minutes, never within a customer's time to answer.
LEFT_ALONE_MAX_S = 60.0
#: LIFE-007's own wait, when the run could not leave a transaction alone from its start.
LEFT_ALONE_WAIT_S = 1.5
#: Under a declared time-out (RC-18), a transaction LIFE-007 finds settled counts as timed out
#: only if its processed event dates the settling this close to the time-out or later (the
#: target's timer and its poll); half the time-out at most, for a very short one.
TIMEOUT_MARGIN_S = 1.0


def declared_time_out(target: Target) -> float | None:
    """The pending time-out the configuration declares (RC-18), if any."""
    declared = target.config.pending_timeout_s if target.config is not None else None
    return None if declared is None else float(declared)


def settled_after(events: list[JsonObject]) -> float | None:
    """Seconds from a transaction's creation to its settling, as its processed event dates them
    (``data.created_at`` to ``data.processed_at``); None when no processed event says so
    readably (the stamps' shape is FMT-005's rule)."""
    for event in events:
        if event.get("event_kind") != PROCESSED:
            continue
        created = timestamps.parse(data_of(event).get("created_at"))
        processed = timestamps.parse(data_of(event).get("processed_at"))
        if created and processed and created.zone and processed.zone:
            return (processed.moment - created.moment).total_seconds()
    return None


def _judge_left_alone(target: Target, kind: str, creation: Reply, found: Reply, age: float) -> None:
    """A transaction nobody acted on must read pending, unless the target declares a time-out
    (RC-18) and its processed event dates the settling at that time-out: then it timed out as
    declared, which LIFE-008 judges, and nothing settled it before."""
    status = found.get("status")
    timeout = declared_time_out(target)
    if status == "pending" or timeout is None:
        expect(
            status == "pending",
            f"a {kind.lower()} nobody confirmed or cancelled reads {status!r} "
            f"{age:.1f} s after its creation",
            creation,
            found,
            expected="status pending until the customer confirms or cancels",
            actual=f"status {status!r}",
        )
        return
    ref = str(creation.get("ref"))
    events = target.events_for_ref(target.need_writer(kind), ref)
    after = settled_after(events)
    precondition(
        after is not None,
        f"the {kind.lower()} {ref}, left alone, reads {status!r} and no processed event dates "
        "when it settled, to tell the declared time-out from an early settling",
        found,
    )
    earliest = timeout - min(TIMEOUT_MARGIN_S, timeout / 2)
    expect(
        after is not None and after >= earliest,
        f"a {kind.lower()} nobody confirmed or cancelled was settled {status!r} {after:.2f} s "
        f"after its creation, before the {timeout:g} s pending time-out the target declares",
        creation,
        found,
        expected=f"status pending until the customer acts or the declared {timeout:g} s pass",
        actual=f"settled {status!r} after {after:.2f} s",
    )


@dataclass
class LeftAlone:
    """LIFE-007's transactions, created when the run started and left to themselves."""

    created: list[tuple[str, Reply]]
    at: float


@set_up_early("LIFE-007")
def leave_transactions_alone(target: Target) -> None:
    """Create one transaction of each kind when the run starts, for LIFE-007 to find at its end."""
    created = []
    for kind in ("CASHIN", "CASHOUT"):
        app = target.writer(kind)
        if app is not None:
            reply = target.create(kind, app, key=target.fresh_key())
            if reply.ok and isinstance(reply.get("ref"), str):
                created.append((kind, reply))
    if created:
        target.early["LIFE-007"] = LeftAlone(created, time.monotonic())


@check(
    "LIFE-007",
    "MUST",
    Section.STATES,
    "a transaction nobody acts on stays pending (cashin and cashout, left alone for the run)",
    "Every transaction starts in the status pending. It stays there until the customer "
    "confirms or cancels.",
)
def a_transaction_stays_pending_until_the_customer_acts(target: Target) -> None:
    """The transactions were created when the run started and no customer acted on them: a
    target that settles on its own (a time-out that has already passed, an outcome drawn at
    creation) shows it by now. Past ``LEFT_ALONE_MAX_S`` a time-out may have ended them, so
    the check leaves new ones alone instead; either way for ``LEFT_ALONE_WAIT_S`` at least.
    Where the target declares an earlier time-out (RC-18), one it ended is no failure: its
    processed event must date the settling at that time-out, not before."""
    kinds = creatable_kinds(target)
    early = target.early.pop("LIFE-007", None)
    if not isinstance(early, LeftAlone) or time.monotonic() - early.at > LEFT_ALONE_MAX_S:
        made = [(kind, target.created(kind, target.need_writer(kind))[0]) for kind in kinds]
        early = LeftAlone(made, time.monotonic())
    # However short the run, each was left alone for LEFT_ALONE_WAIT_S at least.
    time.sleep(max(0.0, early.at + LEFT_ALONE_WAIT_S - time.monotonic()))
    age = time.monotonic() - early.at
    for kind, creation in early.created:
        app = target.need_writer(kind)
        found = target.find(str(creation.get("ref")), app)
        precondition(found.ok, f"find answered {found.status} (FIND-001)", found)
        _judge_left_alone(target, kind, creation, found, age)


#: LIFE-008: past the declared time-out, before the transaction is looked at (the target's own
#: timer, its poll, and the creation's round trip).
TIMEOUT_SLACK_S = 0.5
#: LIFE-008: how long a transaction may still read pending after that, on a slow target.
TIMEOUT_GRACE_S = 2.0


@dataclass
class Abandoned:
    """LIFE-008's transaction, created when the run started and never settled by anyone."""

    kind: str
    creation: Reply
    at: float


def waitable_time_out(target: Target) -> float:
    """The pending time-out the target declares (RC-18), when the check can wait for it; else
    not applicable, with the reason."""
    declared = declared_time_out(target)
    if declared is None:
        not_applicable("the configuration declares no pending time-out (pending_timeout_s)")
    if declared > target.max_wait_s:
        not_applicable(
            f"the declared pending time-out ({declared:g} s) is longer than max_wait_s "
            f"({target.max_wait_s:g} s)"
        )
    return declared


@set_up_early("LIFE-008")
def abandon_a_transaction(target: Target) -> None:
    """Create LIFE-008's transaction when the run starts: its time-out passes while every other
    check runs, not in a wait of LIFE-008's own."""
    try:
        waitable_time_out(target)
        kind = creatable_kinds(target)[0]
    except NotApplicable:
        return  # LIFE-008 says why when its turn comes
    reply = target.create(kind, target.need_writer(kind), key=target.fresh_key())
    if reply.ok and isinstance(reply.get("ref"), str) and not reply.ref_reused:
        target.early["LIFE-008"] = Abandoned(kind, reply, time.monotonic())


@check(
    "LIFE-008",
    "SHOULD",
    Section.STATES,
    "a transaction nobody confirms or cancels is failed once the target's declared pending "
    "time-out has passed, with exactly one processed event (RC-18)",
    "Other transitions, time-outs and failure causes: not shown.",
    "reference",
)
def a_pending_transaction_fails_at_the_declared_time_out(target: Target) -> None:
    """RC-18: the reference stub fails a transaction still pending after its time-out, recording
    the ``transaction:processed`` event the customer's cancellation would. Judged only where the
    configuration declares a time-out the check may wait for (the bundled stub declares a short
    one); the transaction was created when the run started, so only what remains of the
    time-out is waited for."""
    timeout = waitable_time_out(target)
    early = target.early.pop("LIFE-008", None)
    if not isinstance(early, Abandoned):
        kind = creatable_kinds(target)[0]
        early = Abandoned(kind, target.created(kind, target.need_writer(kind))[0], time.monotonic())
    app = target.need_writer(early.kind)
    ref = str(early.creation.get("ref"))
    time.sleep(max(0.0, early.at + timeout + TIMEOUT_SLACK_S - time.monotonic()))
    found = target.wait_until(
        lambda: target.find(ref, app),
        lambda reply: not reply.ok or reply.get("status") != "pending",
        timeout_s=TIMEOUT_GRACE_S,
    )
    precondition(found.ok, f"find answered {found.status} (FIND-001)", found)
    age = time.monotonic() - early.at
    k = early.kind.lower()
    expect(
        found.get("status") == "failed",
        f"a {k} nobody confirmed or cancelled reads {found.get('status')!r} {age:.1f} s after "
        f"its creation; the target declares a pending time-out of {timeout:g} s",
        early.creation,
        found,
        expected=f"status failed once the declared {timeout:g} s time-out has passed (RC-18)",
        actual=f"status {found.get('status')!r}",
    )
    events = target.wait_until(
        lambda: target.events_for_ref(app, ref),
        lambda items: any(e.get("event_kind") == PROCESSED for e in items),
        timeout_s=TIMEOUT_GRACE_S,
    )
    processed = [e for e in events if e.get("event_kind") == PROCESSED]
    statuses = [data_of(e).get("status") for e in processed]
    if statuses != ["failed"]:
        fail(
            f"the timed-out {k} {ref} has {len(processed)} transaction:processed event(s)"
            + (f" reading {statuses}" if processed else ""),
            found,
            target.list_events(app, ref=ref),
            expected="exactly one transaction:processed event, status failed",
            actual=f"{len(processed)} processed event(s): {statuses}",
        )
