"""The document's "Errors", rule 1, and the Idempotency-Key of "Limits" and "Endpoints:
1. Cashin" (IDEM-001..007): a key executes once, whatever the path and the timing.

Every proof counts ``transaction:created`` events for a customer number used by this check
alone, so "not executed twice" is observed, not inferred from a status code; and only its own
events: a ref its creations were answered, or the kind and amount of one of its own requests
(a configured list of numbers is shared with other clients).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.api import kind_path, reuse_problems
from conformance.checks import Section, check
from conformance.outcome import expect, not_applicable, precondition

if TYPE_CHECKING:
    from conformance.http import Reply
    from conformance.target import Target


def _writer(target: Target, *kinds: str):
    app = target.app("read-write")
    if app is None and len(kinds) == 1:
        app = target.writer(kinds[0])
    if app is None:
        not_applicable(f"no application may {' and '.join(k.lower() for k in kinds)}")
    return app


def _refs(*replies: Reply) -> set[str]:
    """The refs the check's own creations were answered: its executions, whatever their kind."""
    return {str(r.get("ref")) for r in replies if r.ok and isinstance(r.body, dict)}


def _reuse(target: Target, first_kind: str, second_kind: str, key_in: str) -> list[str]:
    """Two requests with one key; describe what went wrong (empty when conformant)."""
    app = (
        _writer(target, first_kind, second_kind)
        if first_kind != second_kind
        else _writer(target, first_kind)
    )
    number = target.number()
    seen = target.known_refs(app, number)
    amount = target.amount()
    key = target.fresh_key()
    first = target.create(first_kind, app, number=number, amount=amount, key=key, key_in=key_in)
    precondition(first.ok, f"the first {first_kind.lower()} answered {first.status}", first)
    # The same request again (a client's retry): the document says it is rejected.
    second = target.create(second_kind, app, number=number, amount=amount, key=key, key_in=key_in)
    created = target.created_events_for_number(
        app, number, seen, expect=1, sent={(first_kind, amount), (second_kind, amount)},
        own_refs=_refs(first, second),
    )  # fmt: skip
    refs = [str(e.get("data", {}).get("ref")) for e in created]
    problems = reuse_problems(second_kind, key_in, second.status, refs, number)
    if problems:
        expect(False, "; ".join(problems), first, second)
    return problems


@check(
    "IDEM-001",
    "MUST",
    Section.ERRORS_1,
    "a reused Idempotency-Key header is rejected and the transaction is not executed twice",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
)
def a_reused_key_is_rejected_and_not_executed_twice(configured: Target) -> None:
    _reuse(configured, "CASHIN", "CASHIN", "header")
    if configured.writer("CASHOUT") is not None:
        _reuse(configured, "CASHOUT", "CASHOUT", "header")


@check(
    "IDEM-002",
    "MUST",
    Section.ERRORS_1,
    "a key used by cashin is rejected on cashout (and the reverse)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
)
def a_key_used_by_cashin_is_rejected_on_cashout(configured: Target) -> None:
    target = configured
    if target.app("read-write") is None:
        not_applicable("no read-write application (cashin and cashout with one key)")
    _reuse(target, "CASHIN", "CASHOUT", "header")
    _reuse(target, "CASHOUT", "CASHIN", "header")


@check(
    "IDEM-003",
    "MUST",
    Section.LIMITS,
    "an Idempotency-Key of 33 characters is rejected; one of 32 is accepted",
    "Idempotency-Key length: at most 32 characters (cashin and cashout).",
)
def a_key_over_32_characters_is_rejected(configured: Target) -> None:
    target = configured
    app = _writer(target, "CASHIN")
    number = target.number()
    seen = target.known_refs(app, number)
    long_key = (target.fresh_key() + "x")[:33]  # a hex uuid is 32 characters: one more
    amount = target.amount()
    too_long = target.create("CASHIN", app, number=number, amount=amount, key=long_key)
    expect(
        too_long.rejected, f"a 33-character key answered {too_long.status}, expected 4xx", too_long
    )
    created = target.created_events_for_number(
        app, number, seen, sent={("CASHIN", amount)}, own_refs=_refs(too_long)
    )
    expect(
        not created,
        f"a request with a 33-character key created {len(created)} transaction(s)",
        too_long,
    )
    exact = target.create("CASHIN", app, key=target.fresh_key()[:32].ljust(32, "k"))
    expect(exact.ok, f"a 32-character key answered {exact.status}, expected a 2xx", exact)


@check(
    "IDEM-004",
    "SHOULD",
    Section.ENDPOINT_CASHIN,
    "the Idempotency-Key query parameter is honoured",
    "The examples also pass it as a query parameter named Idempotency-Key.",
)
def the_query_parameter_key_is_honoured(configured: Target) -> None:
    _reuse(configured, "CASHIN", "CASHIN", "query")


@check(
    "IDEM-005",
    "MUST",
    Section.ERRORS_1,
    "concurrent requests with one key create exactly one transaction",
    "Cashin and cashout requests accept an optional idempotency key so that one request "
    "executes at most once.",
)
def concurrent_requests_with_one_key_create_one_transaction(configured: Target) -> None:
    import asyncio

    from conformance.http import async_requests

    target = configured
    app = _writer(target, "CASHIN")
    number = target.number()
    seen = target.known_refs(app, number)
    key = target.fresh_key()
    token = target.pair(app, fresh=True).access
    amount = target.amount()
    calls = [
        {
            "method": "POST",
            "path": kind_path("CASHIN"),
            "json": {"amount": amount, "number": number},
            "headers": {"Idempotency-Key": key},
            "token": token,
        }
        for _ in range(50)
    ]
    sent = asyncio.run(
        async_requests(
            target.base_url, calls, target.current, target.limits,
            throttle=target.throttle, deadline=target.client.check_deadline,
        )
    )  # fmt: skip
    replies = [reply for reply in sent if reply is not None]
    precondition(replies, "none of 50 concurrent requests got an answer")
    accepted = [r for r in replies if r.ok]
    odd = [r for r in replies if not r.ok and not r.rejected]
    created = target.created_events_for_number(
        app, number, seen, expect=1, sent={("CASHIN", amount)}, own_refs=_refs(*accepted)
    )
    unanswered = len(sent) - len(replies)
    if unanswered or odd:
        # Refusing or failing some of 50 simultaneous requests is about load, not this rule
        # (PROP-001 and ERR-001 judge 5xx); what the key let execute is what counts.
        target.note(f"{unanswered} got no answer, {len(odd)} answered 5xx or other")
    precondition(
        accepted or created or not (unanswered or odd),
        f"no request was accepted and nothing created: {unanswered} got no answer, "
        f"{len(odd)} answered neither 2xx nor 4xx",
        *odd[:2],
    )
    problems = []
    if len(accepted) > 1 or (len(accepted) == 0 and len(replies) == len(sent) and not odd):
        problems.append(f"{len(accepted)} of 50 concurrent requests with one key were accepted")
    if len(created) != 1:
        problems.append(f"{len(created)} transactions were created for number {number}")
    expect(
        not problems,
        "; ".join(problems),
        *(accepted[:3] + odd[:2]),
        expected="exactly one request accepted and one transaction created",
        actual="; ".join(problems),
    )


@check(
    "IDEM-006",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "without a key, two identical requests create two transactions",
    "Idempotency-Key: Unique string, maximum length 32. Generated by the service when omitted.",
)
def without_a_key_each_request_creates_a_transaction(configured: Target) -> None:
    target = configured
    app = _writer(target, "CASHIN")
    number = target.number()
    seen = target.known_refs(app, number)
    amount = target.amount()
    first = target.create("CASHIN", app, number=number, amount=amount)
    second = target.create("CASHIN", app, number=number, amount=amount)
    expect(
        first.ok and second.ok,
        f"two requests without a key answered {first.status} and {second.status}",
        first,
        second,
    )
    precondition(
        first.get("ref") != second.get("ref"),
        f"both requests returned ref {first.get('ref')} (FMT-001: refs are unique)",
        first,
        second,
    )
    created = target.created_events_for_number(
        app, number, seen, expect=2, sent={("CASHIN", amount)}, own_refs=_refs(first, second)
    )
    expect(
        len(created) == 2,
        f"{len(created)} transactions recorded for two keyless requests",
        first,
        second,
    )


@check(
    "IDEM-007",
    "SHOULD",
    Section.ERRORS_1,
    "a key is scoped to its merchant: another merchant may use it (RC-6)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected. [Whose keys are compared: not shown.]",
    "reference",
)
def a_key_is_scoped_to_its_merchant(configured: Target) -> None:
    target = configured
    writers = {}
    for app in target.apps("read-write", "cashin"):
        writers.setdefault(app.merchant, app)
    if len(writers) < 2:
        not_applicable("no cashin-capable applications of two merchants configured")
    first, second = list(writers.values())[:2]
    key = target.fresh_key()
    one = target.create("CASHIN", first, key=key)
    precondition(one.ok, f"the first merchant's cashin answered {one.status}", one)
    other = target.create("CASHIN", second, key=key)
    expect(
        other.ok,
        f"merchant {second.merchant}'s cashin with a key merchant {first.merchant} used answered "
        f"{other.status}; RC-6 scopes keys to the merchant",
        one,
        other,
        expected="2xx: keys of different merchants never collide",
        actual=str(other.status),
    )
