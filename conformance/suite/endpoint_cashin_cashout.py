"""The document's "Endpoints: 1. Cashin (deposit)" and "2. Cashout (withdraw)" (TXN-001..005).

Cashin and cashout answer the creation response; bad bodies create nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from conformance.checks import Findings, check
from conformance.suite.states_and_transitions import creatable_kinds
from paysuite_core.driver.api import AUTHORIZE, EVENTS, find_path
from paysuite_core.results.outcome import expect, not_applicable
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target

CREATION_FIELDS = ("amount", "created_at", "kind", "ref", "status")


def _creation(target: Target, kind: str) -> None:
    app = target.writer(kind)
    if app is None:
        not_applicable(f"no application may {kind.lower()} (read-write or {kind.lower()})")
    amount = target.amount()
    # The optional X-Webhook-Mode header, with a value the live service's clients send.
    mode = "development" if kind == "CASHIN" else "production"
    reply = target.create(kind, app, amount=amount, key=target.fresh_key(), webhook_mode=mode)
    expect(
        reply.ok,
        f"{kind.lower()} (with X-Webhook-Mode: {mode}) answered {reply.status}, expected a 2xx",
        reply,
    )
    body = reply.body
    expect(isinstance(body, dict), "the creation response is not a JSON object", reply)
    missing = [name for name in CREATION_FIELDS if name not in body]
    expect(not missing, f"the creation response lacks {', '.join(missing)}", reply)
    expect(body["kind"] == kind, f"kind is {body['kind']!r}, expected {kind!r}", reply)
    expect(body["status"] == "pending", f"status is {body['status']!r}, expected 'pending'", reply)
    expect(
        isinstance(body["amount"], (int, float)) and not isinstance(body["amount"], bool),
        f"amount is {body['amount']!r}, not a number",
        reply,
    )
    expect(body["amount"] == amount, f"amount is {body['amount']!r}, {amount} was sent", reply)
    expect(isinstance(body["ref"], str) and body["ref"], "ref is not a non-empty string", reply)
    expect(isinstance(body["created_at"], str), "created_at is not a string", reply)


@check(
    "TXN-001",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "cashin answers the creation response: kind CASHIN, status pending, the amount sent",
    "Response: the transaction creation response with kind = CASHIN and status = pending.",
)
def cashin_answers_the_creation_response(target: Target) -> None:
    _creation(target, "CASHIN")


@check(
    "TXN-002",
    "MUST",
    Section.ENDPOINT_CASHOUT,
    "cashout answers the creation response: kind CASHOUT, status pending, the amount sent",
    "Response: the transaction creation response with kind = CASHOUT and status = pending.",
)
def cashout_answers_the_creation_response(target: Target) -> None:
    _creation(target, "CASHOUT")


@check(
    "TXN-003",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "a creation missing amount or number is rejected and creates nothing (cashin and cashout)",
    "Body: amount (number, required), number (string, required). [Cashout: the same body.]",
)
def a_creation_missing_amount_or_number_is_rejected(target: Target) -> None:
    found = Findings()
    judged = 0
    # Both kinds state the required body: each is checked with an application that may create
    # it (a cashin application's cashout would be refused for its privilege, not its body).
    for kind in ("CASHIN", "CASHOUT"):
        app = target.writer(kind)
        if app is None:
            continue
        judged += 1
        number = target.number()
        seen = target.known_refs(app, number)
        bodies = {
            "no amount": {"number": number},
            "no number": {"amount": target.amount()},
            "empty object": {},
            "amount as text": {"amount": "lots", "number": number},
        }
        for label, body in bodies.items():
            reply = target.create(kind, app, body=body, key=target.fresh_key())
            if not reply.rejected:
                found.add(
                    f"{kind.lower()} with {label}: answered {reply.status}, expected a 4xx", reply
                )
        created = target.created_events_for_number(app, number, seen)
        if created:
            found.add(f"{len(created)} {kind.lower()} transaction(s) were created for {number}")
    if not judged:
        not_applicable("no application may cashin or cashout")
    expect(not found.problems, "; ".join(found.problems), *found.proof)


@check(
    "TXN-004",
    "SHOULD",
    Section.ENDPOINTS,
    "every success answers 200, creations included (RC-2)",
    "HTTP status codes of success responses: not shown.",
    "reference",
)
def every_success_answers_200(target: Target) -> None:
    app = target.app("read-write")
    if app is None:
        not_applicable("no read-write application configured")
    pair = target.pair(app, fresh=True)
    replies = [
        target.client.post(
            AUTHORIZE, json={"client_id": app.client_id, "client_secret": app.client_secret}
        ),
        target.create("CASHIN", app, key=target.fresh_key()),
        target.create("CASHOUT", app, key=target.fresh_key()),
        target.client.get(EVENTS, token=pair.access),
    ]
    ref = replies[1].get("ref")
    if ref:
        replies.append(target.client.get(find_path(ref), token=pair.access))
    wrong = [r for r in replies if r.status != 200]
    expect(
        not wrong,
        "RC-2 answers 200 to every success: "
        + "; ".join(f"{r.exchange.method} {r.exchange.url} -> {r.status}" for r in wrong),
        *wrong,
    )


#: TXN-005 sends ten times this (10**401): far past any bound, a float or an int64.
HUGE_AMOUNT = 10**400
#: TXN-005 also sends the first integers past a signed 64-bit one (2**63, 2**63 + 1): where a
#: target's configured maximum is above them, only the store's own integer limit stands between
#: them and an overflow, and a limit checked one step off lets one of the two through.
INT64_EDGE = (2**63, 2**63 + 1)
#: Every amount TXN-005 sends, by the name its failure shows.
EDGE_AMOUNTS = {
    HUGE_AMOUNT * 10: "10**401",
    -HUGE_AMOUNT * 10: "-10**401",
    INT64_EDGE[0]: "2**63",
    INT64_EDGE[1]: "2**63+1",
}


@check(
    "TXN-005",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "a creation refuses an amount or answers that amount, however large (10**401, -10**401, "
    "2**63, 2**63+1): never another amount; in the reference profile never a 5xx (RC-4) "
    "(cashin and cashout)",
    "Response: the transaction creation response [...] amount: the requested amount.",
)
def a_creation_answers_the_amount_sent_however_large(target: Target) -> None:
    """An amount of 402 digits is refused by any bound; a parser that shortens what it cannot
    hold must not turn it into a small amount that the creation then accepts. A float's
    ``Infinity`` or ``null`` answer is not another amount: only a finite one below it is.
    2**63 and 2**63 + 1 are answered as sent, as a double holds them (a target that parses JSON
    numbers as doubles may answer 2**63 for both), or refused. The reference profile also
    demands a 4xx, never a 5xx, for all of them: RC-4 answers client input with a 4xx, and a 5xx
    is where an unchecked overflow shows."""
    kinds = creatable_kinds(target)
    found = Findings()
    for kind in kinds:
        for amount, name in EDGE_AMOUNTS.items():
            reply = target.create(
                kind, target.need_writer(kind), amount=amount, key=target.fresh_key()
            )
            problem = _amount_problem(target, reply, amount)
            if problem:
                found.add(f"{kind.lower()} of amount {name} answered {problem}", reply)
    found.verdict("refused (4xx), or answered the amount sent")


def _amount_problem(target: Target, reply: Reply, sent: int) -> str | None:
    """What is wrong with the answer to a creation of ``sent``, or None."""
    if target.reference and reply.status >= 500:
        return f"{reply.status}, expected a 4xx (RC-4: never a 5xx on client input)"
    if not reply.ok:
        return None
    answered = reply.get("amount")
    number = isinstance(answered, (int, float)) and not isinstance(answered, bool)
    if abs(sent) > HUGE_AMOUNT:
        # Infinity or no number is not another amount; a finite one below it is.
        shortened = number and math.isfinite(answered) and abs(answered) < HUGE_AMOUNT
        return f"{reply.status} with amount {answered!r}" if shortened else None
    same = number and (answered == sent or answered == float(sent))
    return None if same else f"{reply.status} with amount {answered!r}"
