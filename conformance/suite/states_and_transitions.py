"""The document's "States and transitions" (LIFE-001..005): pending until the customer acts,
then processed exactly once.

The customer is played by the configured driver (sandbox, magic numbers, a command, or the
operator); without one the checks after creation skip.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from conformance import timestamps
from conformance.api import (
    SUCCESS_STATUSES,
    created_values_differ,
    data_of,
    event_disagrees_with_find,
    status_changed,
)
from conformance.checks import Section, check
from conformance.outcome import CouldNotCheck, expect, fail, not_applicable, precondition

if TYPE_CHECKING:
    from conformance.http import Reply
    from conformance.target import Target

PROCESSED = "transaction:processed"
CREATED = "transaction:created"


def _app(target: Target):
    app = target.writer("CASHIN")
    if app is None:
        not_applicable("no application may cashin")
    return app


def _need_driver(target: Target) -> None:
    reason = target.need_customer().unavailable_reason()
    if reason:
        not_applicable(reason)


def _processed(
    target: Target, outcome: str, *, judged: bool = True
) -> tuple[Reply, dict, Reply, list[dict]]:
    """Create, have the customer act, wait for the outcome; returns creation, find, events.

    ``judged``: whether a transaction left pending is this check's failure (LIFE-002/003) or
    only a precondition of it (a check about what happens *after* processing).
    """
    from conformance.customer import DriverUnavailable

    _need_driver(target)
    app = _app(target)
    number = target.need_customer().number_for(outcome, target.number())  # type: ignore[arg-type]
    created_reply, created = target.created("CASHIN", app, number=number)
    ref = created["ref"]
    try:
        target.resolve(ref, outcome)  # type: ignore[arg-type]
    except DriverUnavailable as exc:
        not_applicable(str(exc))
    found = target.wait_processed(ref, app)
    precondition(found.ok, f"find answered {found.status} after the customer acted", found)
    if found.get("status") == "pending":
        precondition(
            judged,
            f"the transaction never left pending after the customer's {outcome} (LIFE-002/003)",
            found,
        )
        fail(
            f"the transaction is still pending {target.driver_timeout():g} s after the "
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
    return created_reply, created, found, events


def _check_processed_event(found: Reply, events: list[dict], created: dict) -> None:
    processed = [e for e in events if e.get("event_kind") == PROCESSED]
    expect(
        len(processed) == 1,
        f"{len(processed)} transaction:processed events for {created['ref']}, expected exactly one",
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
        expect(
            data.get(name) == found.get(name),
            f"processed event data.{name} {data.get(name)!r} differs from find's "
            f"{found.get(name)!r}",
            found,
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
    "creation records a transaction:created event with the created data, status pending",
    "(none) -> pending: Event transaction:created is recorded. The response carries ref and "
    "status pending.",
)
def creation_records_a_created_event(configured: Target) -> None:
    target = configured
    app = _app(target)
    number = target.number()
    amount = target.amount()
    reply, created = target.created("CASHIN", app, number=number, amount=amount)
    expect(
        created.get("status") == "pending", f"status {created.get('status')!r} at creation", reply
    )
    events = target.wait_until(
        lambda: target.events_for_ref(app, created["ref"]),
        lambda items: bool(items),
        timeout_s=10,
    )
    made = [e for e in events if e.get("event_kind") == CREATED]
    expect(
        len(made) == 1,
        f"{len(made)} transaction:created events for {created['ref']}, expected exactly one",
        reply,
    )
    wrong = created_values_differ(
        data_of(made[0]), created["ref"], "CASHIN", amount, number, prefix="data."
    )
    expect(not wrong, "the created event: " + "; ".join(wrong), reply)


@check(
    "LIFE-002",
    "MUST",
    Section.STATES,
    "after confirmation: success (or successful) and exactly one processed event",
    "pending -> customer confirms -> success (typically). Event transaction:processed is recorded.",
)
def confirmation_processes_to_success(configured: Target) -> None:
    _, created, found, events = _processed(configured, "confirm")
    expect(
        found.get("status") in SUCCESS_STATUSES,
        f"after confirmation the status is {found.get('status')!r}, expected success "
        "(or successful)",
        found,
    )
    _check_processed_event(found, events, created)


@check(
    "LIFE-003",
    "MUST",
    Section.STATES,
    "after cancellation: failed and exactly one processed event",
    "pending -> customer cancels -> failed (typically). Event transaction:processed is recorded.",
)
def cancellation_processes_to_failed(configured: Target) -> None:
    _, created, found, events = _processed(configured, "cancel")
    expect(
        found.get("status") == "failed",
        f"after cancellation the status is {found.get('status')!r}, expected failed",
        found,
    )
    _check_processed_event(found, events, created)


@check(
    "LIFE-004",
    "MUST",
    Section.STATES,
    "a processed transaction does not change again",
    "It stays there until the customer confirms or cancels. [...] transaction:processed: "
    "The customer confirms or cancels. A new event is created.",
)
def a_processed_transaction_does_not_change_again(configured: Target) -> None:
    from conformance.customer import DriverUnavailable

    target = configured
    _, created, found, _ = _processed(target, "confirm", judged=False)
    app = _app(target)
    ref = created["ref"]
    if target.customer is not None and target.customer.driver in ("sandbox", "command"):
        try:
            target.resolve(ref, "cancel")
        except (DriverUnavailable, CouldNotCheck):
            pass  # refusing to act again is a fine answer
    time.sleep(1.0)
    again = target.find(ref, app)
    changed = status_changed(found.get("status"), again.get("status"))
    expect(
        changed is None,
        f"{changed} after a second customer action",
        found,
        again,
        expected=f"status stays {found.get('status')!r}",
        actual=str(again.get("status")),
    )
    processed = [e for e in target.events_for_ref(app, ref) if e.get("event_kind") == PROCESSED]
    # Exactly one processed event is LIFE-002's rule; a second one is this rule's.
    expect(
        len(processed) <= 1,
        f"{len(processed)} processed events after a second customer action",
        again,
        expected="at most the one processed event of the first action",
        actual=f"{len(processed)} processed events",
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
def a_confirmed_transaction_reads_exactly_success(configured: Target) -> None:
    _, _, found, events = _processed(configured, "confirm", judged=False)
    statuses = {found.get("status")} | {
        data_of(e).get("status") for e in events if e.get("event_kind") == PROCESSED
    }
    expect(
        statuses == {"success"},
        f"confirmed transaction reads {sorted(map(str, statuses))}, "
        "RC-17 chooses exactly 'success'",
        found,
    )
