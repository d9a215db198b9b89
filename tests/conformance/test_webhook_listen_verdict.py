"""The listener's verdict from a ledger, without a network: one rule, one check ID."""

from __future__ import annotations

import json
from typing import Any

from paysuite.webhooks.listen import (
    NO_CONFIG,
    RETRY_SKIP,
    Listing,
    decide,
    findings,
    judge,
)
from paysuite_core.webhooks.ledger import CREATED, PROCESSED, Ledger


def record(event_id: str, kind: str, ref: str = "r1") -> dict[str, Any]:
    return {"event_id": event_id, "event_kind": kind, "created_at": "x", "data": {"ref": ref}}


def arrive(ledger: Ledger, event: dict[str, Any], verdict: str = "verified", **extra: Any) -> None:
    fields = {"status": 200, "reason": "", "code": "", "attempt": "1", "mode": "development"}
    fields.update(extra)
    ledger.record(
        verdict=verdict, event_id=event["event_id"], event=event,
        body=json.dumps(event).encode(), **fields,
    )  # fmt: skip


def outcomes(ledger: Ledger, listing: Listing | None, expected: list) -> dict[str, str]:
    return {r.check.id: r.outcome for r in judge(ledger, listing, expected)}


def test_without_a_config_the_list_comparison_is_skipped_and_the_rest_judged() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED))
    arrive(ledger, record("p", PROCESSED))
    results = judge(ledger, None, [])
    assert [(r.check.id, r.outcome) for r in results] == [
        ("WEBHOOK-001", "skipped"), ("WEBHOOK-002", "passed"), ("WEBHOOK-003", "passed"),
        ("WEBHOOK-004", "passed"), ("WEBHOOK-005", "skipped"), ("WEBHOOK-006", "passed"),
    ]  # fmt: skip
    assert results[0].message == NO_CONFIG and results[4].message == RETRY_SKIP
    assert decide(results).exit_code == 0


def test_a_listed_event_never_delivered_fails_001_only() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED))
    listed = [record("c", CREATED), record("p", PROCESSED)]
    results = judge(ledger, Listing(listed), listed)
    assert {r.check.id for r in results if r.outcome == "failed"} == {"WEBHOOK-001"}
    assert "1 of 2 listed events never arrived: transaction:processed p" in results[0].message
    assert decide(results).exit_code == 1


def test_a_bad_signature_fails_002_and_not_001() -> None:
    ledger = Ledger()
    for event in (record("c", CREATED), record("p", PROCESSED)):
        arrive(ledger, event, "rejected", status=401, code="invalid_signature", reason="stale")
    listed = [record("c", CREATED), record("p", PROCESSED)]
    failed = {r.check.id: r.message for r in judge(ledger, Listing(listed), listed)
              if r.outcome == "failed"}  # fmt: skip
    assert (
        set(failed) == {"WEBHOOK-002"}
        and "2 of 2 deliveries failed verification" in failed["WEBHOOK-002"]
    )


def test_a_refused_delivery_not_retried_fails_005() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED), "refused", status=503, code="refused_on_purpose")
    results = outcomes(ledger, None, [])
    assert results["WEBHOOK-005"] == "failed"
    arrive(ledger, record("c", CREATED), attempt="2")
    assert outcomes(ledger, None, [])["WEBHOOK-005"] == "passed"


def test_an_unreadable_list_is_no_verdict() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED))
    results = judge(ledger, Listing([], error="the target did not answer"), [])
    assert results[0].outcome == "error"
    assert decide(results).exit_code == 2


def test_the_window_is_what_was_stamped_since_the_start_and_what_was_heard_of() -> None:
    from datetime import UTC, datetime

    from paysuite.webhooks.listen import in_window

    ledger = Ledger()
    arrive(ledger, record("c-old", CREATED, "heard"))
    old = {**record("c-old", CREATED, "heard"), "created_at": "2026-01-01T00:00:00.000Z"}
    stale = {**record("c-x", CREATED, "other"), "created_at": "2026-01-01T00:00:00.000Z"}
    fresh = {**record("c-new", CREATED, "new"), "created_at": "2026-06-01T00:00:01.000Z"}
    started = datetime(2026, 6, 1, tzinfo=UTC)
    assert in_window([old, stale, fresh], ledger, started) == [old, fresh]


def test_a_live_only_target_passes_002_and_gets_the_replay_finding_006() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED), signature="live")
    arrive(ledger, record("p", PROCESSED), signature="live")
    listed = [record("c", CREATED), record("p", PROCESSED)]
    results = {r.check.id: r for r in judge(ledger, Listing(listed), listed)}
    assert results["WEBHOOK-002"].outcome == "passed" and "live" in results["WEBHOOK-002"].note
    assert results["WEBHOOK-006"].outcome == "failed"
    assert "can be replayed" in results["WEBHOOK-006"].message
    assert decide(list(results.values())).exit_code == 0  # a warning: the live format's own
    assert decide(list(results.values()), strict=True).exit_code == 1


def test_a_forgery_blames_nobody_and_an_unknown_signed_event_is_a_finding() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED), signature="paysuite+live")
    forged = record("fake", CREATED, "r-nobody")
    arrive(ledger, forged, "rejected", status=401, code="invalid_signature", reason="mismatch")
    stranger = record("other", CREATED, "r-other")
    arrive(ledger, stranger, signature="paysuite+live")
    listed = [record("c", CREATED)]
    results = {r.check.id: r for r in judge(ledger, Listing(listed), listed)}
    assert results["WEBHOOK-002"].outcome == "passed", results["WEBHOOK-002"].message
    assert "1 forged ones rejected" in results["WEBHOOK-002"].note
    notes = findings(ledger, Listing(listed))
    assert len(notes) == 2 and "forged" in notes[0] and "other" in notes[1]
    # the same forged delivery of an event the list DOES show is the target's failure
    arrive(ledger, record("c", CREATED), "rejected", status=401, code="invalid_signature",
           reason="mismatch")  # fmt: skip
    assert {r.check.id: r.outcome for r in judge(ledger, Listing(listed), listed)}[
        "WEBHOOK-002"
    ] == "failed"


def test_a_forward_to_handler_s_failure_is_a_failed_attempt_whose_retry_is_judged() -> None:
    from paysuite_core.webhooks.ledger import HandlerAnswer

    ledger = Ledger()
    arrive(ledger, record("c", CREATED), status=500, handler=HandlerAnswer(500, 3.0))
    assert outcomes(ledger, None, [])["WEBHOOK-005"] == "failed"
    arrive(ledger, record("c", CREATED), "duplicate", status=500, attempt="2",
           handler=HandlerAnswer(500, 2.0))  # fmt: skip
    assert outcomes(ledger, None, [])["WEBHOOK-005"] == "passed"  # the last one may be the end


def test_a_live_signature_that_does_not_hold_beside_a_valid_one_is_a_finding() -> None:
    ledger = Ledger()
    arrive(ledger, record("c", CREATED), signature="paysuite+live-mismatch")
    results = {r.check.id: r.outcome for r in judge(ledger, None, [])}
    assert results["WEBHOOK-002"] == "passed" and results["WEBHOOK-006"] == "passed"
    (note,) = findings(ledger, None)
    assert "X-Paypack-Signature that does not verify" in note


def test_an_event_stamped_before_the_start_is_compared_if_it_arrives_never_missed() -> None:
    """A resend of a created event to a new listener: its processed event, delivered before
    the listener started, is not "never arrived"; one stamped after the start is."""
    from datetime import UTC, datetime

    started = datetime(2026, 6, 1, tzinfo=UTC)
    old = "2026-05-31T23:00:00.000Z"
    created = {**record("c", CREATED), "created_at": old}
    processed = {**record("p", PROCESSED), "created_at": old}
    ledger = Ledger()
    arrive(ledger, created, attempt="2")
    listed = [created, processed]
    results = judge(ledger, Listing(listed), listed, started)
    assert results[0].outcome == "passed", results[0].message
    assert "1 listed events" in results[0].note and "p" in results[0].note.split(": ")[-1]
    assert decide(results).exit_code == 0
    # without the start (or with the processed event stamped after it) the absence is a failure
    assert judge(ledger, Listing(listed), listed)[0].outcome == "failed"
    late = {**processed, "created_at": "2026-06-01T00:00:05.000Z"}
    assert judge(ledger, Listing([created, late]), [created, late], started)[0].outcome == (
        "failed"
    )
    # nothing it could have seen: no verdict on 001, not a pass
    empty = Ledger()
    arrive(empty, record("x", CREATED, "elsewhere"))
    assert judge(empty, Listing(listed), listed, started)[0].outcome == "skipped"
