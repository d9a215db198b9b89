"""The document's "Endpoints: 3. Find a transaction" (FIND-001..003).

The lookup response, its types and values; unknown refs.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from conformance.checks import Findings, check
from conformance.suite.states_and_transitions import creatable_kinds
from paysuite_core.api_types import Lookup, field_types
from paysuite_core.driver.api import created_values_differ
from paysuite_core.results.outcome import expect
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.target import Target

LOOKUP_TYPES = field_types(Lookup)


def lookup_problems(body: object) -> list[str]:
    """Field and type problems of a lookup response."""
    if not isinstance(body, dict):
        return ["the lookup response is not a JSON object"]
    problems = []
    for name, types in LOOKUP_TYPES.items():
        if name not in body:
            problems.append(f"no {name!r}")
        elif isinstance(body[name], bool) or not isinstance(body[name], types):
            problems.append(f"{name} is {body[name]!r}, expected {types[0].__name__}")
    return problems


@check(
    "FIND-001",
    "MUST",
    Section.ENDPOINT_FIND,
    "find answers the lookup fields, typed, with the values created, for a cashin and a cashout",
    "Response: the transaction lookup response. (amount, client, fee, kind, merchant, ref, "
    "status, timestamp)",
)
def find_answers_the_lookup_fields(target: Target) -> None:
    """A cashin and a cashout each: the document gives both the same lookup response, and a
    service may keep them apart (two tables, a signed amount for withdrawals)."""
    kinds = creatable_kinds(target)
    for kind in kinds:
        app = target.need_writer(kind)
        number = target.number()
        amount = target.amount()
        created_reply, created = target.created(kind, app, number=number, amount=amount)
        reply = target.find(created["ref"], app)
        expect(
            reply.ok,
            f"find of a {kind.lower()} ref just created answered {reply.status}",
            created_reply,
            reply,
            expected="a 2xx with the lookup response",
            actual=str(reply.status),
        )
        Findings(lookup_problems(reply.body), reply).verdict(
            ", ".join(LOOKUP_TYPES), prefix=f"lookup response of a {kind.lower()}: "
        )
        body = reply.body
        wrong = created_values_differ(body, created["ref"], kind, amount, number)
        if body.get("fee", 0) < 0:
            wrong.append(f"fee {body.get('fee')} is negative")
        if not body.get("merchant"):
            wrong.append("merchant is empty")
        Findings(wrong, created_reply, reply).verdict(
            f"ref {created['ref']}, kind {kind}, amount {amount}, client {number}, status pending",
            prefix=f"lookup values of a {kind.lower()}: ",
        )


@check(
    "FIND-002",
    "MUST",
    Section.ENDPOINT_FIND,
    "find with an unknown ref is rejected",
    "Path parameter: ref (string), the unique reference key of the transaction.",
)
def find_with_an_unknown_ref_is_rejected(target: Target) -> None:
    app = target.need_reader()
    for ref in (str(uuid.uuid4()), "not-a-ref"):
        reply = target.find(ref, app)
        expect(
            reply.rejected,
            f"find of unknown ref {ref!r} answered {reply.status}, expected a 4xx",
            reply,
        )


#: RC-15's fee rate, the live sample's (fee 2.3 on 100), unless the target declares its own.
REFERENCE_FEE_RATE = 0.023
#: Half a cent and a hair: the fee may be rounded either way at the last cent, no further.
FEE_TOLERANCE = 0.0051


@check(
    "FIND-003",
    "SHOULD",
    Section.ENDPOINT_FIND,
    "the fee is the amount times the fee rate, to the cent, for a cashin and a cashout (RC-15)",
    "Response: the transaction lookup response. (amount, client, fee, kind, merchant, ref, "
    "status, timestamp) [How the fee is computed: not shown.]",
    "reference",
)
def the_fee_is_the_amount_times_the_rate(target: Target) -> None:
    """An amount off the round hundreds, so that a fee rounded to a tenth or worked out from
    another formula differs from RC-15's by more than a rounding at the last cent."""
    rate = target.need_config().fee_rate
    rate = REFERENCE_FEE_RATE if rate is None else rate
    kinds = creatable_kinds(target)
    bounds = target.need_config().amount
    amount = min(max(int(bounds.min) + 1, 101), int(bounds.max))
    for kind in kinds:
        app = target.need_writer(kind)
        created_reply, created = target.created(kind, app, amount=amount)
        reply = target.find(created["ref"], app)
        fee = reply.get("fee") if reply.ok else None
        expected = amount * rate
        expect(
            isinstance(fee, (int, float))
            and not isinstance(fee, bool)
            and abs(fee - expected) <= FEE_TOLERANCE
            and abs(fee * 100 - round(fee * 100)) < 1e-6,  # whole cents: rounded to 2 places
            f"the fee of a {kind.lower()} of {amount} is {fee!r}; RC-15 makes it "
            f"round({amount} * {rate:g}, 2) = {round(expected, 2):g}",
            created_reply,
            reply,
            expected=f"fee {round(expected, 2):g} ({amount} * fee_rate {rate:g}, to the cent)",
            actual=f"fee {fee!r}",
        )
