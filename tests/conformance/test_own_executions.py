"""The suite's count of executions takes only a check's own transactions.

``Target.created_events_for_number(..., sent=..., own_refs=...)`` is what IDEM-001..006 count
with: on a number another client may pay too (a configured list cycles), an event counts only
when a ref the check's creations were answered names it, or when it has the kind and amount of
one of the check's own requests; on a configured list (shared with other clients), only a ref
an answer named, the rest noted "unconfirmed". Pure logic, shown on a hand-made events list.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from paysuite_core.driver.api import same_amount
from paysuite_core.driver.target import Target

NUMBER = "0781234567"


def created(ref: str, kind: str, amount: Any, number: str = NUMBER) -> dict[str, Any]:
    return {
        "event_kind": "transaction:created",
        "data": {"ref": ref, "kind": kind, "amount": amount, "client": number},
    }


def fake_target(events: list[dict[str, Any]], *, unique: bool = True) -> Any:
    """What ``created_events_for_number`` uses of a ``Target``: the events list, the numbers'
    kind (drawn fresh or a configured list) and the check's notes."""
    fake = SimpleNamespace(
        events_of=lambda app, **filters: events,
        numbers=SimpleNamespace(unique=unique),
        notes=[],
    )
    fake._created_on = lambda app, number: Target._created_on(fake, app, number)  # type: ignore[arg-type]
    fake.note = fake.notes.append
    return fake


def count(events: list[dict[str, Any]], *, unique: bool = True, **kwargs: Any) -> list[str]:
    """The refs ``created_events_for_number`` keeps of ``events`` (no polling: expect=None)."""
    fake = fake_target(events, unique=unique)
    kept = Target.created_events_for_number(fake, None, NUMBER, **kwargs)
    assert bool(fake.notes) == (not unique and len(kept) < len(count_all(events, **kwargs)))
    return [e["data"]["ref"] for e in kept]


def count_all(events: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    return Target.created_events_for_number(fake_target(events), None, NUMBER, **kwargs)


EVENTS = [
    created("mine-1", "CASHIN", 137),  # the check's first creation
    created("other-1", "CASHIN", 100),  # another client's payment to the same number
    created("other-2", "CASHOUT", 137),  # another client's, the check's amount, other kind
    created("reuse", "CASHOUT", 137.0),  # a cashout reusing the check's key, executed
    {"event_kind": "transaction:processed", "data": {"ref": "mine-1", "client": NUMBER}},
    created("elsewhere", "CASHIN", 137, number="0789999999"),
]


def test_without_sent_every_creation_on_the_number_counts() -> None:
    assert count(EVENTS) == ["mine-1", "other-1", "other-2", "reuse"]


def test_each_requests_own_kind_and_amount() -> None:
    """A cashin then a cashout reusing its key (IDEM-002): both kinds are the check's own."""
    sent = [("CASHIN", 137), ("CASHOUT", 137)]
    assert count(EVENTS, sent=sent) == ["mine-1", "other-2", "reuse"]
    # a cashin alone: another client's cashout of the same amount is not the check's
    assert count(EVENTS, sent=[("CASHIN", 137)]) == ["mine-1"]


def test_an_answered_ref_counts_whatever_its_kind() -> None:
    """A transaction stored under another kind is TXN-002's defect, not a missing execution."""
    assert count(EVENTS, sent=[("CASHOUT", 999)], own_refs={"mine-1"}) == ["mine-1"]


def test_excluded_refs_stay_excluded() -> None:
    assert count(EVENTS, exclude={"mine-1"}, sent=[("CASHIN", 137)], own_refs={"mine-1"}) == []


def test_on_a_configured_list_only_answered_refs_count_the_rest_is_unconfirmed() -> None:
    """A shared number: another client's cashout of the check's amount, or a cashout reusing the
    check's key, look the same from the list. Neither is counted; the check notes it."""
    sent = [("CASHIN", 137), ("CASHOUT", 137)]
    fake = fake_target(EVENTS, unique=False)
    kept = Target.created_events_for_number(fake, None, NUMBER, sent=sent, own_refs={"mine-1"})
    assert [e["data"]["ref"] for e in kept] == ["mine-1"]
    (note,) = fake.notes
    assert note.startswith("unconfirmed: 2 transaction(s) on 0781234567") and "configured" in note
    # without strangers, nothing to note
    assert count(EVENTS, unique=False, sent=[("CASHIN", 137)], own_refs={"mine-1"}) == ["mine-1"]


def test_amounts_compare_as_numbers() -> None:
    assert same_amount(100, 100.0) and same_amount("100", 100)
    assert not same_amount(100, 101) and not same_amount(None, 100)
    assert not same_amount(True, 1)  # a boolean is no amount
    assert same_amount([1], [1]) and not same_amount({"a": 1}, 1)
