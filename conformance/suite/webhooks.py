"""Webhook delivery (WEBHOOK-001..009): the target calls back with signed event records.

The document names the ``X-Webhook-Mode`` header ("names the environment associated with the
webhook") and leaves delivery "not shown": target, payload and signature. These checks judge
paysuite's reference choice (docs/reference-choices.md, docs/webhooks.md): the body is the
event record as the events list renders it, signed as ``paysuite_core.webhooks.signature``
says, delivered at least once, retried after a failed attempt, created before processed. They
are SHOULD checks of the reference profile, and run only when the target configuration has a
``webhooks`` section (where paysuite's receiver listens, the address the target delivers to,
the signing secret, the mode to send); otherwise they skip with that reason.

Each check judges one rule and looks away from the others, so that a defect fails one check:
WEBHOOK-001 counts a delivery whatever its signature (WEBHOOK-002 judges that), and compares
only the ids the events list shows (an extra id is WEBHOOK-004's).

A signature verifies in either format (``paysuite_core.webhooks.signature.verify_any``): the
timestamped ``Paysuite-Signature`` or the live service's ``X-Paypack-Signature``, which
merchants' receivers verify (docs/reference-choices.md). A target that signs only the live
way passes WEBHOOK-002 and is told by WEBHOOK-006 that nothing in its signature ages: a
captured delivery can be replayed (a SHOULD finding; the document obliges no signature at all).
"""

from __future__ import annotations

import time
from itertools import pairwise
from typing import TYPE_CHECKING

from conformance.checks import check
from conformance.suite.states_and_transitions import usable_customer
from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import data_of, same_amount
from paysuite_core.request_data import same_number
from paysuite_core.results.outcome import expect, fail, not_applicable, precondition
from paysuite_core.results.rule import Section
from paysuite_core.webhooks.ledger import CREATED, PROCESSED, Arrival, Ledger

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application, WebhookTarget
    from paysuite_core.webhooks.receiver import RunningReceiver

NO_SECTION = (
    "no webhooks section in the target configuration (listen: where paysuite's receiver binds, "
    "url: its address as the target reaches it, secret, mode): webhook delivery is not checked"
)
#: How long after the last expected delivery a late one (a duplicate) is still waited for.
SETTLE_S = 1.5
QUOTE = (
    "X-Webhook-Mode: Names the environment associated with the webhook. [...] Webhook delivery "
    "(target, payload, signature) [...]: not shown."
)


def _hooks(target: Target) -> tuple[WebhookTarget, RunningReceiver, Application]:
    hooks = target.config.webhooks if target.config else None
    if hooks is None:
        not_applicable(NO_SECTION)
    app = target.writer("CASHIN")
    if app is None:
        not_applicable("no application may cashin")
    return hooks, target.webhook_receiver(), app


def _transaction(
    target: Target,
    hooks: WebhookTarget,
    app: Application,
    *,
    confirm: bool,
    number: str = "",
    amount: int | float | None = None,
) -> tuple[Reply, str, tuple[str, ...]]:
    """A cashin in the configured mode: its reply, ref and the event kinds it has recorded.

    With ``confirm`` (or whenever a customer driver is configured) it is confirmed and awaited
    processed: a target may hold a created delivery back until there is more to send, and a
    check about something else must not wait on that.
    """
    from paysuite_core.driver.customer import DriverUnavailable

    customer = usable_customer(target)
    driver = customer is not None
    if confirm:
        target.need_customer().need_available()
    if customer is not None:  # magic numbers: the number makes the customer confirm
        number = customer.number_for("confirm", number or target.number())
    reply, _ = target.created(
        "CASHIN", app, webhook_mode=hooks.mode, number=number or None, amount=amount
    )
    ref = str(reply.get("ref"))
    if not (confirm or driver):
        return reply, ref, (CREATED,)
    try:
        target.resolve(ref, "confirm")
    except DriverUnavailable as exc:
        not_applicable(str(exc))
    found = target.wait_processed(ref, app)
    precondition(
        found.ok and found.get("status") not in (None, "pending"),
        f"{ref} was not processed after the customer's confirm: the processed event to deliver "
        "does not exist",
        reply,
        found,
    )
    return reply, ref, (CREATED, PROCESSED)


def _listed(target: Target, app: Application, ref: str, kinds: tuple[str, ...]) -> list[JsonObject]:
    """The transaction's events as the list shows them, once it shows every kind awaited."""
    events = target.wait_until(
        lambda: target.events_for_ref(app, ref),
        lambda items: all(any(e.get("event_kind") == k for e in items) for k in kinds),
        timeout_s=10,
    )
    shown = {e.get("event_kind") for e in events}
    precondition(
        all(kind in shown for kind in kinds),
        f"the events list does not show {', '.join(k for k in kinds if k not in shown)} for "
        f"{ref}: there is nothing to compare the deliveries with (LIFE-001/002)",
    )
    return events


def _arrived(receiver: RunningReceiver, event_id: str) -> list[Arrival]:
    return [a for a in receiver.ledger.arrivals() if a.body_event_id == event_id]


def _await_ids(target: Target, receiver: RunningReceiver, ids: list[str]) -> bool:
    """Wait (at most max_wait_s) until a delivery of each id arrived, accepted or not."""
    return receiver.ledger.wait_for(
        lambda ledger: all(_arrived(receiver, i) for i in ids), target.max_wait_s
    )


def _delivered(
    target: Target, unjudged: str
) -> tuple[WebhookTarget, RunningReceiver, Reply, str, list[JsonObject]]:
    """An unconfirmed cashin whose listed events have all arrived, accepted or not: what the
    checks of one delivery's form judge (an event never delivered is WEBHOOK-001's, so it stops
    them as an error saying what could not be judged)."""
    hooks, receiver, app = _hooks(target)
    reply, ref, kinds = _transaction(target, hooks, app, confirm=False)
    listed = _listed(target, app, ref, kinds)
    precondition(
        _await_ids(target, receiver, [str(e.get("event_id")) for e in listed]),
        f"not every event of {ref} reached {hooks.url} within {target.max_wait_s:g} s "
        f"(WEBHOOK-001): {unjudged}: {_summary(receiver.ledger.arrivals(ref))}",
        reply,
    )
    return hooks, receiver, reply, ref, listed


def _summary(arrivals: list[Arrival]) -> str:
    return (
        "; ".join(
            f"{a.kind} {a.body_event_id} attempt {a.attempt} -> {a.status} {a.verdict}"
            for a in arrivals
        )
        or "nothing arrived"
    )


@check(
    "WEBHOOK-001",
    "SHOULD",
    Section.WEBHOOKS,
    "a confirmed cashin delivers its created and processed events, as the events list shows them",
    QUOTE,
    profile="reference",
)
def both_events_are_delivered_as_listed(target: Target) -> None:
    hooks, receiver, app = _hooks(target)
    reply, ref, kinds = _transaction(target, hooks, app, confirm=True)
    listed = _listed(target, app, ref, kinds)
    ids = [str(e.get("event_id")) for e in listed]
    _await_ids(target, receiver, ids)
    missing = [e for e in listed if not _arrived(receiver, str(e.get("event_id")))]
    expect(
        not missing,
        f"not delivered to {hooks.url} within {target.max_wait_s:g} s (mode {hooks.mode}): "
        + ", ".join(f"{e.get('event_kind')} {e.get('event_id')}" for e in missing)
        + f"; deliveries of {ref}: {_summary(receiver.ledger.arrivals(ref))}",
        reply,
        expected="one delivery of each event the list shows for the transaction",
        actual=f"{len(listed) - len(missing)} of {len(listed)} delivered",
    )
    for record in listed:
        bodies = [a.event for a in _arrived(receiver, str(record.get("event_id")))]
        expect(
            record in bodies,
            f"the delivery of {record.get('event_kind')} {record.get('event_id')} is not the "
            f"event record the list shows: delivered {bodies[0]!r}",
            reply,
            expected=f"the body {record!r}",
            actual=repr(bodies[0]),
        )


@check(
    "WEBHOOK-002",
    "SHOULD",
    Section.WEBHOOKS,
    "every delivery is signed with the endpoint's secret, in either signature format",
    QUOTE + " Reference choice: Paysuite-Signature: t=<unix>,v1=<HMAC-SHA256(secret, t.body)>;"
    " the live service's X-Paypack-Signature: base64 HMAC-SHA256(secret, body) (what"
    " merchants' receivers verify).",
    profile="reference",
)
def every_delivery_is_signed(target: Target) -> None:
    hooks, receiver, reply, ref, _ = _delivered(target, "there is no signature to judge")
    bad = [a for a in receiver.ledger.arrivals(ref) if a.code == "invalid_signature"]
    expect(
        not bad,
        f"{len(bad)} deliveries of {ref} failed verification with the configured secret: "
        + "; ".join(f"{a.kind} attempt {a.attempt}: {a.reason}" for a in bad),
        reply,
        expected="a Paysuite-Signature (within "
        f"{hooks.tolerance_s:g} s) or an X-Paypack-Signature that verifies with webhooks.secret",
        actual=bad[0].reason if bad else "",
    )


@check(
    "WEBHOOK-003",
    "SHOULD",
    Section.WEBHOOKS,
    "each event is delivered under the event_id the events list shows, never under a second one",
    QUOTE + " Reference choice: a receiver deduplicates by event_id, so a repeat must keep it.",
    profile="reference",
)
def no_event_is_delivered_under_two_ids(target: Target) -> None:
    _, receiver, reply, ref, listed = _delivered(target, "no duplicate can be judged")
    ids = {str(e.get("event_id")) for e in listed}
    time.sleep(SETTLE_S)  # a repeat under a new id may follow the first delivery
    under = receiver.ledger.ids_per_event(ref)
    twice = {key: found for key, found in under.items() if len(found) > 1 or found - ids}
    expect(
        not twice,
        f"{ref}: "
        + "; ".join(
            f"{kind} arrived under {len(found)} event_ids {sorted(found)}, the list shows "
            f"{sorted(ids & found) or 'none of them'}"
            for (_, kind), found in twice.items()
        ),
        reply,
        expected="each event under one event_id, the list's",
        actual="; ".join(f"{kind}: {sorted(found)}" for (_, kind), found in twice.items()),
    )


@check(
    "WEBHOOK-004",
    "SHOULD",
    Section.WEBHOOKS,
    "a transaction's created event is delivered before its processed event",
    QUOTE + " Reference choice: the deliveries of one transaction are attempted in event order.",
    profile="reference",
)
def created_is_delivered_before_processed(target: Target) -> None:
    hooks, receiver, app = _hooks(target)
    reply, ref, _ = _transaction(target, hooks, app, confirm=True)
    ledger = receiver.ledger
    both = ledger.wait_for(
        lambda seen: bool(seen.first_arrival(ref, CREATED) and seen.first_arrival(ref, PROCESSED)),
        target.max_wait_s,
    )
    precondition(
        both,
        f"not both of {ref}'s events reached {hooks.url} within {target.max_wait_s:g} s "
        f"(WEBHOOK-001): {_summary(ledger.arrivals(ref))}",
        reply,
    )
    if ledger.out_of_order(ref):
        fail(
            f"{ref}'s processed event arrived before its created event: "
            f"{_summary(ledger.arrivals(ref))}",
            reply,
            expected="transaction:created first, then transaction:processed",
            actual="transaction:processed first",
        )


@check(
    "WEBHOOK-005",
    "SHOULD",
    Section.WEBHOOKS,
    "a delivery the receiver fails is retried, under the same event_id",
    QUOTE + " Reference choice: at-least-once delivery, retried with backoff.",
    profile="reference",
)
def a_failed_delivery_is_retried(target: Target) -> None:
    hooks, ledger, reply, ref, first = _refused_created(target)
    started = time.monotonic()
    expect(
        ledger.wait_for(lambda seen: _retry_of(seen, ref, first) is not None, target.max_wait_s),
        f"the delivery of {ref}'s created event {first.body_event_id} was answered "
        f"{first.status} and never came again within {target.max_wait_s:g} s: deliveries: "
        f"{_summary(ledger.arrivals(ref))}",
        reply,
        expected=f"another attempt of the same event_id after the {first.status}",
        actual=f"no retry in {time.monotonic() - started:.0f} s",
    )


def _refused_created(
    target: Target, times: int = 1
) -> tuple[WebhookTarget, Ledger, Reply, str, Arrival]:
    """A cashin whose created event's first ``times`` verified deliveries the receiver answers
    503, and the first failed attempt of it (refused on purpose, or rejected: WEBHOOK-002's)."""
    hooks, ledger, reply, ref = _scripted(target, {CREATED: ((503, 0.0),) * times}, confirm=False)

    def failed(arrival: Arrival) -> bool:
        return arrival.kind == CREATED and arrival.verdict in ("refused", "rejected")

    precondition(
        ledger.wait_for(lambda seen: any(map(failed, seen.arrivals(ref))), target.max_wait_s),
        f"no delivery of {ref}'s created event reached {hooks.url} within {target.max_wait_s:g} s "
        f"(WEBHOOK-001): there is no failed attempt to see retried: deliveries: "
        f"{_summary(ledger.arrivals(ref))}",
        reply,
    )
    return hooks, ledger, reply, ref, next(a for a in ledger.arrivals(ref) if failed(a))


def _scripted(
    target: Target, answers: dict[str, tuple[tuple[int, float], ...]], *, confirm: bool
) -> tuple[WebhookTarget, Ledger, Reply, str]:
    """A cashin whose events' verified deliveries the receiver answers, kind by kind, as
    ``answers`` says (in turn: (status, hold_s) for each attempt; 200 after the last)."""
    hooks, receiver, app = _hooks(target)
    number, amount, customer = target.number(), target.amount(), usable_customer(target)
    if customer is not None:
        number = customer.number_for("confirm", number)  # what _transaction will send
    # Matched by the customer number and amount, known before the creation: its delivery may
    # arrive before the creation's answer does. The amount too, because magic numbers give
    # every check one number, and another check's creation may be delivered meanwhile.
    for kind, script in answers.items():

        def matches(record: JsonObject, kind: str = kind) -> bool:
            return (
                record.get("event_kind") == kind
                and same_number(data_of(record).get("client"), number)
                and same_amount(data_of(record).get("amount"), amount)
            )

        for status, hold_s in script:
            receiver.receiver.refuse(matches, status=status, hold_s=hold_s)
    reply, ref, _ = _transaction(target, hooks, app, confirm=confirm, number=number, amount=amount)
    return hooks, receiver.ledger, reply, ref


def _waits(ledger: Ledger, ref: str, first: Arrival, wanted: int, within_s: float) -> list[float]:
    """The waits between the first ``wanted`` attempts of ``first``'s event (n/a when fewer
    came within ``within_s``): what the backoff and schedule checks compare."""

    def attempts(seen: Ledger) -> list[Arrival]:
        return [a for a in seen.arrivals(ref) if a.body_event_id == first.body_event_id]

    ledger.wait_for(lambda seen: len(attempts(seen)) >= wanted, within_s)
    came = attempts(ledger)[:wanted]
    if len(came) < wanted:
        not_applicable(
            f"{ref}'s created event came {len(came)} times within {within_s:g} s, not the "
            f"{wanted} whose waits are compared (WEBHOOK-005's): {_summary(ledger.arrivals(ref))}"
        )
    return [later.received_at - earlier.received_at for earlier, later in pairwise(came)]


def _retry_of(ledger: Ledger, ref: str, first: Arrival) -> Arrival | None:
    """The next delivery of ``first``'s event_id after it, if one came."""
    return next(
        (
            a
            for a in ledger.arrivals(ref)
            if a.seq > first.seq and a.body_event_id == first.body_event_id
        ),
        None,
    )


@check(
    "WEBHOOK-006",
    "SHOULD",
    Section.WEBHOOKS,
    "every delivery carries a timestamped signature, so that a captured one cannot be replayed",
    QUOTE + " Reference choice: Paysuite-Signature's t= is inside the signed bytes and a "
    "receiver refuses an old one; X-Paypack-Signature alone signs the body only.",
    profile="reference",
)
def every_delivery_carries_a_timestamped_signature(target: Target) -> None:
    _, receiver, reply, ref, _ = _delivered(target, "no signature's age can be judged")
    # which headers were sent, verified or not: whether they hold is WEBHOOK-002's question
    untimed = [a for a in receiver.ledger.arrivals(ref) if "paysuite" not in a.signature]
    expect(
        not untimed,
        f"{len(untimed)} deliveries of {ref} carried no Paysuite-Signature (only "
        "X-Paypack-Signature, or nothing): nothing in the signature ages, so a receiver cannot "
        "tell a replayed delivery from a new one: "
        + "; ".join(f"{a.kind} attempt {a.attempt}" for a in untimed),
        reply,
        expected="a Paysuite-Signature with its t= on every delivery (beside any other)",
        actual=f"signature formats: {sorted({a.signature or 'none' for a in untimed})}",
    )


@check(
    "WEBHOOK-007",
    "SHOULD",
    Section.WEBHOOKS,
    "Paysuite-Delivery-Attempt counts an event's attempts: 1 on the first, 2 on the retry",
    QUOTE + " Reference choice: Paysuite-Delivery-Attempt (1, 2, ...) on each delivery.",
    profile="reference",
)
def the_attempt_header_counts_the_attempts(target: Target) -> None:
    _, ledger, reply, ref, first = _refused_created(target)
    ledger.wait_for(lambda seen: _retry_of(seen, ref, first) is not None, target.max_wait_s)
    retry = _retry_of(ledger, ref, first)
    if retry is None:
        not_applicable(
            f"{ref}'s created event was not retried within {target.max_wait_s:g} s "
            "(WEBHOOK-005): there is no second attempt to number"
        )
    earlier = [a for a in ledger.arrivals(ref) if a.body_event_id == first.body_event_id]
    sent = [a.attempt for a in earlier if a.seq <= retry.seq]
    if not any(sent):
        not_applicable(
            "the target sends no Paysuite-Delivery-Attempt header: there is no count to judge"
        )
    counted = [str(n) for n in range(1, len(sent) + 1)]
    expect(
        sent == counted,
        f"{ref}'s created event {first.body_event_id} was delivered {len(sent)} times, "
        f"numbered {', '.join(str(n) for n in sent)}: deliveries: {_summary(ledger.arrivals(ref))}",
        reply,
        expected=f"Paysuite-Delivery-Attempt {', '.join(counted)}",
        actual=f"Paysuite-Delivery-Attempt {', '.join(str(n) for n in sent)}",
    )


#: How long the receiver has listened before the HEADs it got are judged: a sender that pings
#: an unchanged URL on a timer (every second or so) shows within it.
PING_WINDOW_S = 4.0
#: HEADs of a URL that stayed the same through the run that are still no timer: one when the
#: endpoint was registered as the run began, one more when its sender restarted.
PINGS_ALLOWED = 2


@check(
    "WEBHOOK-008",
    "SHOULD",
    Section.WEBHOOKS,
    "the endpoint URL is sent a HEAD when it is added or changed, not again while it is the same",
    QUOTE + " Reference choice: the URL is sent a HEAD when it is added or changed, as the live "
    "dashboard does; a receiver answers it 200 without a signature.",
    profile="reference",
)
def the_url_is_not_pinged_while_it_stays_the_same(target: Target) -> None:
    hooks = target.config.webhooks if target.config else None
    if hooks is None:
        not_applicable(NO_SECTION)
    receiver = target.webhook_receiver()
    # The URL is the configuration's for the whole run: every HEAD the receiver got is of an
    # unchanged URL. None at all is a pass (the endpoint registered before the receiver
    # listened, or a sender that never pings); a few is a registration; more is a timer.
    time.sleep(max(0.0, PING_WINDOW_S - (time.monotonic() - receiver.started)))
    pings = list(receiver.receiver.pings)
    listened = time.monotonic() - receiver.started
    every = listened / max(1, len(pings))
    expect(
        len(pings) <= PINGS_ALLOWED,
        f"{hooks.url} was sent {len(pings)} HEADs in the {listened:.0f} s paysuite's receiver "
        f"listened, its URL unchanged all along (one every {every:.1f} s): the URL is pinged"
        " when it is added or changed, not again and again",
        expected=f"at most {PINGS_ALLOWED} HEADs for a URL that did not change",
        actual=f"{len(pings)} HEADs in {listened:.0f} s",
    )


#: Attempts of one event the backoff check refuses: three waits to compare.
REFUSED_FOR_BACKOFF = 3


@check(
    "WEBHOOK-009",
    "SHOULD",
    Section.WEBHOOKS,
    "a delivery failed again and again is retried with backoff: the waits between attempts grow",
    QUOTE + " Reference choice: retried after 1 s, doubling up to 5 min, 12 attempts in all "
    "(no jitter: a schedule a test can predict).",
    profile="reference",
)
def the_retries_back_off(target: Target) -> None:
    _, ledger, reply, ref, first = _refused_created(target, REFUSED_FOR_BACKOFF)
    waits = _waits(ledger, ref, first, REFUSED_FOR_BACKOFF + 1, target.max_wait_s)
    shown = ", ".join(f"{w:.2f} s" for w in waits)
    # Doubling makes the last wait 4 times the first (equal once the cap is reached); half
    # the first is room for a busy machine's lateness, and no backoff at all.
    expect(
        waits[-1] >= waits[0] / 2,
        f"{ref}'s created event {first.body_event_id} was refused {REFUSED_FOR_BACKOFF} times "
        f"and retried after {shown}: the waits shrink instead of growing",
        reply,
        expected="each wait at least the one before (doubling up to the cap)",
        actual=f"waits {shown}",
    )


def _attempts_of(ledger: Ledger, ref: str, kind: str) -> list[Arrival]:
    """Every delivery of ``ref``'s ``kind`` event, in arrival order (retries included)."""
    return [a for a in ledger.arrivals(ref) if a.kind == kind]


def _after(ledger: Ledger, ref: str, kind: str, status: int) -> tuple[Arrival | None, int]:
    """The first delivery of the event answered ``status``, and how many of its event_id came
    after it (another id is WEBHOOK-003's)."""
    came = _attempts_of(ledger, ref, kind)
    answered = next((a for a in came if a.status == status), None)
    if answered is None:
        return None, 0
    later = [a for a in came if a.seq > answered.seq and a.body_event_id == answered.body_event_id]
    return answered, len(later)


#: The status a receiver acknowledges with that is not 200, and the one that is no 2xx.
ACCEPTED, NOT_ACCEPTED = 202, 300
#: Which event WEBHOOK-010 answers which of them (after a 503 each).
SCRIPTED = ((CREATED, NOT_ACCEPTED), (PROCESSED, ACCEPTED))


@check(
    "WEBHOOK-010",
    "SHOULD",
    Section.WEBHOOKS,
    "any 2xx acknowledges a delivery and nothing else does: answered 202 the event is not sent "
    "again, answered 300 it is",
    QUOTE + " Reference choice: any 2xx within 10 s acknowledges; anything else is a failed "
    "attempt, retried.",
    profile="reference",
)
def only_a_2xx_acknowledges(target: Target) -> None:
    # Each event is refused once first (503): a sender that never retries leaves nothing to
    # judge here (WEBHOOK-005's), so that one defect fails one check.
    _, ledger, reply, ref = _scripted(
        target,
        {CREATED: ((503, 0.0), (NOT_ACCEPTED, 0.0)), PROCESSED: ((503, 0.0), (ACCEPTED, 0.0))},
        confirm=True,
    )

    def answered(seen: Ledger) -> bool:
        return all(_after(seen, ref, kind, status)[0] for kind, status in SCRIPTED)

    if not ledger.wait_for(answered, target.max_wait_s):
        not_applicable(
            f"{ref}'s events were not retried after a 503 within {target.max_wait_s:g} s, so "
            f"no 202 nor 300 was answered (WEBHOOK-005's): {_summary(ledger.arrivals(ref))}"
        )
    # The 300's retry is due a wait after it; a retry of the 202 (answered after it, the same
    # schedule) would be due by then too: SETTLE_S after the 300's retry, it would be here.
    ledger.wait_for(lambda seen: _after(seen, ref, CREATED, NOT_ACCEPTED)[1] > 0, target.max_wait_s)
    time.sleep(SETTLE_S)
    problems = []
    if not _after(ledger, ref, CREATED, NOT_ACCEPTED)[1]:
        problems.append(
            f"the created event answered {NOT_ACCEPTED} never came again within "
            f"{target.max_wait_s:g} s: a 3xx was taken as an acknowledgement"
        )
    if again := _after(ledger, ref, PROCESSED, ACCEPTED)[1]:
        problems.append(
            f"the processed event answered {ACCEPTED} came {again} more time(s): a 2xx other "
            "than 200 was taken as a failed attempt"
        )
    expect(
        not problems,
        f"{ref}: " + "; ".join(problems) + f": deliveries: {_summary(ledger.arrivals(ref))}",
        reply,
        expected=f"no delivery after the {ACCEPTED}; another after the {NOT_ACCEPTED}",
        actual="; ".join(problems),
    )


#: RC-40's time a receiver has to answer, and how much longer the receiver holds a delivery.
ANSWER_WITHIN_S, HELD_PAST_S = 10.0, 2.0


@check(
    "WEBHOOK-011",
    "SHOULD",
    Section.WEBHOOKS,
    "a delivery the receiver does not answer within 10 s is a failed attempt: it is retried, "
    "numbered as the next attempt",
    QUOTE + " Reference choice: any 2xx within 10 s acknowledges; anything else (a timeout "
    "too) is a failed attempt, retried; Paysuite-Delivery-Attempt 1, 2, ...",
    profile="reference",
)
def an_unanswered_delivery_is_retried(target: Target) -> None:
    # Refused once first (503), as WEBHOOK-010: a sender that never retries is WEBHOOK-005's.
    hold_s = ANSWER_WITHIN_S + HELD_PAST_S
    _, ledger, reply, ref = _scripted(target, {CREATED: ((503, 0.0), (200, hold_s))}, confirm=False)

    def held(seen: Ledger) -> Arrival | None:
        return next(
            (a for a in _attempts_of(seen, ref, CREATED) if a.code == "held_unanswered"), None
        )

    if not ledger.wait_for(lambda seen: held(seen) is not None, target.max_wait_s):
        not_applicable(
            f"{ref}'s created event was not retried after a 503 within {target.max_wait_s:g} s, "
            f"so no delivery was held (WEBHOOK-005's): {_summary(ledger.arrivals(ref))}"
        )
    first = held(ledger)
    assert first is not None
    ledger.wait_for(
        lambda seen: _retry_of(seen, ref, first) is not None, hold_s + target.max_wait_s
    )
    retry = _retry_of(ledger, ref, first)
    if retry is None:
        fail(
            f"{ref}'s created event {first.body_event_id} was held unanswered for "
            f"{hold_s:g} s and never came again within {target.max_wait_s:g} s more: a delivery "
            f"not answered in time was not taken as a failed attempt: "
            f"{_summary(ledger.arrivals(ref))}",
            reply,
            expected=f"another attempt after the sender's time-out (at most {ANSWER_WITHIN_S:g} s)",
            actual="no retry",
        )
    if first.attempt is None or retry.attempt is None:
        return  # no Paysuite-Delivery-Attempt header: the retry is all there is to judge
    wanted = str(int(first.attempt) + 1) if first.attempt.isdigit() else "?"
    expect(
        retry.attempt == wanted,
        f"{ref}'s created event {first.body_event_id} was held unanswered as attempt "
        f"{first.attempt} and came again as attempt {retry.attempt}: the time-out was not "
        f"counted as an attempt: {_summary(ledger.arrivals(ref))}",
        reply,
        expected=f"Paysuite-Delivery-Attempt {wanted} on the retry",
        actual=f"Paysuite-Delivery-Attempt {retry.attempt}",
    )


#: RC-40's first wait before a failed delivery is tried again (then doubling).
RC40_BASE_S = 1.0
#: Lateness allowed on each wait: a busy or far sender is late by a constant, not by a factor;
#: 0.9 of the first wait (never less than 0.5 s) stays under a schedule twice as slow.
LATE_FACTOR, LATE_FLOOR_S = 0.9, 0.5


@check(
    "WEBHOOK-012",
    "SHOULD",
    Section.WEBHOOKS,
    "a failed delivery is retried on RC-40's schedule (1 s, then 2 s) unless the target "
    "declares another first wait: never earlier, not twice as late",
    QUOTE + " Reference choice: retried after 1 s, doubling up to 5 min, 12 attempts in all "
    "(no jitter: a schedule a test can predict).",
    profile="reference",
)
def the_retries_keep_the_schedule(target: Target) -> None:
    hooks = target.config.webhooks if target.config else None
    base = (hooks.retry_base_s if hooks else None) or RC40_BASE_S
    _, ledger, reply, ref, first = _refused_created(target, 2)
    waits = _waits(ledger, ref, first, 3, target.max_wait_s + 3 * base)
    late = max(LATE_FACTOR * base, LATE_FLOOR_S)
    bounds = [(base * 2**n * LATE_FACTOR, base * 2**n + late) for n in range(2)]
    shown = ", ".join(f"{w:.2f} s" for w in waits)
    declared = "declared by the target" if hooks and hooks.retry_base_s else "RC-40's"
    expect(
        all(low <= w <= high for w, (low, high) in zip(waits, bounds, strict=True)),
        f"{ref}'s created event {first.body_event_id} was refused twice and retried after "
        f"{shown}; the schedule ({declared}) waits {base:g} s then {2 * base:g} s",
        reply,
        expected="waits within " + ", ".join(f"[{lo:.2f}, {hi:.2f}] s" for lo, hi in bounds),
        actual=f"waits {shown}",
    )
