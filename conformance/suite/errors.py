"""The document's "Errors", rule 2 (ERR-001..007); rule 1, idempotency, is ``idempotency.py``.

Malformed input never breaks the server, nor does input that is odd but well framed; the
reference error catalogue, body limits, and a body that stalls (its exchange on a bare socket:
``conformance.stalled_body``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.checks import Findings, check, set_up_early
from conformance.stalled_body import Stall, judge, start_stall
from paysuite_core.driver.api import AUTHORIZE, CASHIN, CASHOUT, EVENTS, find_path
from paysuite_core.results.outcome import CouldNotCheck, expect, not_applicable, precondition
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application

MALFORMED = {
    "truncated JSON": '{"amount": 100, "number": ',
    "not JSON": "amount=100&number=0781234567",
    "a JSON array": "[1, 2, 3]",
    "JSON null": "null",
    "a JSON string": '"cashin"',
    "an empty body": "",
}


@check(
    "ERR-001",
    "SHOULD",
    Section.ERRORS_2,
    "malformed input is rejected with a 4xx, never a 5xx",
    "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
)
def malformed_input_is_a_4xx_never_a_5xx(target: Target) -> None:
    # Each creation path with an application that may create its kind: a body is judged, not
    # a privilege refused before the body is read.
    paths: list[tuple[str, Application | None]] = [
        (path, app)
        for path, kind in ((CASHIN, "CASHIN"), (CASHOUT, "CASHOUT"))
        if (app := target.writer(kind)) is not None
    ]
    if not paths:
        not_applicable("no application may cashin or cashout")
    found = Findings()
    number = json.dumps(target.number())
    for path, app in (*paths, (AUTHORIZE, None)):
        cases = dict(MALFORMED)
        if app is not None:
            # Not JSON, though lenient parsers take them: NaN passes every bound comparison.
            cases["amount NaN"] = f'{{"amount": NaN, "number": {number}}}'
            cases["amount Infinity"] = f'{{"amount": Infinity, "number": {number}}}'
        for label, body in cases.items():
            # The token taken anew for each request: a short-lived one must not expire midway
            # and turn every later probe into a vacuous 401.
            reply = target.client.post(
                path,
                content=body,
                token=None if app is None else target.token(app),
                headers={"Idempotency-Key": target.fresh_key()},
            )
            if not reply.rejected:
                found.add(f"POST {path} with {label} answered {reply.status}", reply)
    found.verdict(
        prefix="malformed input not rejected with a 4xx: ", limit=6, shown=4, actual="none"
    )


#: RC-29: request bodies up to this many bytes are served, larger ones answered 413.
BODY_LIMIT = 64 * 1024


def _just_over(maximum: float) -> float:
    """The smallest whole amount over ``maximum``."""
    return int(maximum) + 1


def _padded_body(target: Target, size: int) -> str:
    """A valid cashin body of exactly ``size`` bytes: an unknown field (ignored, RC-30) pads it."""
    head = {"amount": target.amount(), "number": target.number(), "padding": ""}
    bare = len(json.dumps(head))
    head["padding"] = "x" * (size - bare)
    return json.dumps(head)


#: RC-4's catalogue: the status and code each provocation of ``_provoke`` is answered.
CATALOGUE: dict[str, tuple[int, str]] = {
    "malformed JSON": (400, "malformed_json"),
    "amount as text": (400, "validation_error"),
    "33-character key": (400, "invalid_idempotency_key"),
    "no Authorization": (401, "missing_token"),
    "garbage token": (401, "invalid_token"),
    "wrong secret": (401, "invalid_credentials"),
    "unknown ref": (404, "transaction_not_found"),
    "'Bearer' alone": (401, "missing_token"),
    "a valid token under the Basic scheme": (401, "missing_token"),
    "a bare value that is no token": (401, "invalid_token"),
    "an empty key": (400, "invalid_idempotency_key"),
    "a key with a control character": (400, "invalid_idempotency_key"),
    "a key sent twice": (400, "ambiguous_idempotency_key"),
    "an amount over the maximum": (400, "validation_error"),
    "a JSON array body": (400, "malformed_json"),
    "Content-Encoding: gzip on plain bytes": (400, "malformed_json"),
    "a key of bytes that are not UTF-8": (400, "invalid_idempotency_key"),
    "a query key of escapes that are not UTF-8": (400, "invalid_idempotency_key"),
    "a body naming amount twice": (400, "duplicate_key"),
    "a number off the configured pattern": (400, "validation_error"),
    "an X-Webhook-Mode of 65 characters": (400, "validation_error"),
    "a list filter sent twice": (400, "ambiguous_parameter"),
    "limit sent twice, the same value": (400, "ambiguous_parameter"),
    "a body over 64 KiB": (413, "payload_too_large"),
    "a JavaScript body": (415, "unsupported_media_type"),
    "unknown route": (404, "not_found"),
    "wrong method": (405, "method_not_allowed"),
    "reused key": (409, "idempotency_key_reused"),
    "read-only cashin": (403, "insufficient_privilege"),
}


def _provoke(target: Target) -> list[tuple[str, int, str, Reply]]:
    """(what, expected status, expected code, reply) for each entry of the RC-4 catalogue."""
    writer = target.app("read-write")
    if writer is None:
        not_applicable("no read-write application configured")
    basic = target.token(writer)  # for the Basic probe; every other request takes it anew
    key = target.fresh_key()
    number = target.number()
    first = target.create("CASHIN", writer, number=number, key=key)
    precondition(first.ok, f"cashin answered {first.status}", first)
    client, create = target.client, target.create

    def token() -> str:
        return target.token(writer)

    replies = {
        "malformed JSON": client.post(CASHIN, content="{", token=token()),
        "amount as text": client.post(
            CASHIN, json={"amount": "x", "number": number}, token=token()
        ),
        "33-character key": create("CASHIN", writer, key="k" * 33),
        "no Authorization": client.get(EVENTS),
        "garbage token": client.get(EVENTS, headers={"Authorization": "Bearer x.y.z"}),
        "wrong secret": target.authorize(writer, secret="wrong"),
        "unknown ref": client.get(find_path("00000000-0000-4000-8000-000000000000"), token=token()),
        "'Bearer' alone": client.get(EVENTS, headers={"Authorization": "Bearer"}),
        "a valid token under the Basic scheme": client.get(
            EVENTS, headers={"Authorization": f"Basic {basic}"}
        ),
        "a bare value that is no token": client.get(EVENTS, headers={"Authorization": "abc"}),
        "an empty key": create("CASHIN", writer, key=""),
        "a key with a control character": create("CASHIN", writer, key="ab\x01cd", key_in="query"),
        "a key sent twice": client.post(
            CASHIN,
            json={"amount": target.amount(), "number": number},
            params={"Idempotency-Key": [target.fresh_key(), target.fresh_key()]},
            token=token(),
        ),
        "an amount over the maximum": create(
            "CASHIN", writer, amount=_just_over(target.need_config().amount.max)
        ),
        "a JSON array body": client.post(CASHIN, content="[1, 2, 3]", token=token()),
        "Content-Encoding: gzip on plain bytes": _gzip_on_plain_bytes(target, CASHIN, writer),
        "a key of bytes that are not UTF-8": _key_not_utf8(target, CASHIN, writer),
        "a query key of escapes that are not UTF-8": client.post(
            f"{CASHIN}?Idempotency-Key=ab%FF{target.fresh_key()[:8]}",
            json=_valid_body(target),
            token=token(),
        ),
        "a body naming amount twice": client.post(
            CASHIN,
            content=_amount_twice(target, number),
            headers={"Idempotency-Key": target.fresh_key()},
            token=token(),
        ),
        "a number off the configured pattern": create(
            "CASHIN", writer, number="hello", key=target.fresh_key()
        ),
        "an X-Webhook-Mode of 65 characters": create(
            "CASHIN", writer, key=target.fresh_key(), webhook_mode="m" * 65
        ),
        "a list filter sent twice": client.get(
            EVENTS, params={"status": ["success", "failed"]}, token=token()
        ),
        "limit sent twice, the same value": client.get(
            EVENTS, params={"limit": ["5", "5"]}, token=token()
        ),
        "a body over 64 KiB": client.post(
            CASHIN, content=_padded_body(target, BODY_LIMIT + 1), token=token()
        ),
        "a JavaScript body": client.post(
            CASHIN,
            json={"amount": target.amount(), "number": number},
            headers={"Content-Type": "application/javascript"},
            token=token(),
        ),
        "unknown route": client.get("/no/such/route", token=token()),
        "wrong method": client.get(CASHIN, token=token()),
        "reused key": create("CASHIN", writer, number=number, key=key),
    }
    reader = target.app("read")
    if reader is not None:
        replies["read-only cashin"] = create("CASHIN", reader, key=target.fresh_key())
    return [(what, *CATALOGUE[what], reply) for what, reply in replies.items()]


@check(
    "ERR-002",
    "SHOULD",
    Section.ERRORS_2,
    'error bodies are {"status", "code", "message"} (RC-3)',
    "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
    "reference",
)
def error_bodies_are_status_code_message(target: Target) -> None:
    found = Findings()
    for what, _, _, reply in _provoke(target):
        body = reply.body
        if not (
            isinstance(body, dict)
            and body.get("status") == reply.status
            and isinstance(body.get("code"), str)
            and isinstance(body.get("message"), str)
            and body.get("message")
        ):
            found.add(f"{what}: {reply.status} {reply.text[:120]!r}", reply)
    prefix = 'error bodies not {"status", "code", "message"} (RC-3): '
    found.verdict(prefix=prefix, limit=5, shown=3, actual="none")


@check(
    "ERR-003",
    "SHOULD",
    Section.ERRORS_2,
    "error statuses and codes follow the catalogue (RC-4, RC-5, RC-41, RC-42); a 405 names "
    "the allowed methods in Allow, a 404 has no Allow (RC-32)",
    "Error response bodies, HTTP error status codes and error codes, including those of the "
    "rejection in rule 1: not shown.",
    "reference",
)
def error_statuses_and_codes_follow_the_catalogue(target: Target) -> None:
    """The status and code of each provocation, and for an unknown route and a wrong method the
    ``Allow`` header too: a 405 must name the route's methods (RFC 9110, 15.5.6), a 404 names
    none. The document shows no error status, so this is the reference profile's alone."""
    found = Findings()
    for what, status, code, reply in _provoke(target):
        problem = None
        if reply.status != status or reply.get("code") != code:
            problem = f"{what}: {reply.status} {reply.get('code')!r}, expected {status} {code!r}"
        elif what in ALLOW:
            problem = _allow_problem(reply, ALLOW[what])
            problem = problem and f"{what}: {reply.status} {problem}"
        if problem:
            found.add(problem, reply)
    found.verdict(prefix="RC-4 catalogue: ", limit=6, shown=4, actual="none")


#: RC-32: the methods a provocation's ``Allow`` header names (``wrong method`` is a GET of
#: cashin, a POST route), and None where the answer carries no ``Allow`` (an unknown route).
ALLOW: dict[str, frozenset[str] | None] = {
    "wrong method": frozenset({"POST"}),
    "unknown route": None,
}


def _allow_problem(reply: Reply, methods: frozenset[str] | None) -> str | None:
    """What is wrong with ``reply``'s ``Allow`` header, given the methods it must name (exactly
    these, HEAD and OPTIONS aside) or None when it must carry none (even an empty one)."""
    values = reply.headers.get_list("allow")
    if methods is None:
        return f"with an Allow header {', '.join(values)!r}, expected none" if values else None
    if not values:
        return f"without an Allow header, expected one naming {', '.join(sorted(methods))}"
    named = {token.strip() for value in values for token in value.split(",") if token.strip()}
    if named - {"HEAD", "OPTIONS"} != methods:
        return f"with Allow {', '.join(values)!r}, expected {', '.join(sorted(methods))}"
    return None


@check(
    "ERR-004",
    "SHOULD",
    Section.ERRORS_2,
    "odd but well-framed requests get a 2xx or a 4xx, never a 5xx: a chunked body, an unknown "
    "content coding, a key that is not text, a lone surrogate, a huge offset",
    "Error response bodies, HTTP error status codes and error codes [...]: not shown. [RFC 9110 "
    "§15.6: a 5xx says the server failed; a request it cannot serve is the client's 4xx.]",
)
def odd_requests_are_answered_2xx_or_4xx(target: Target) -> None:
    """Each request is well framed HTTP that a client or a gateway may send; the server may
    serve it or refuse it, but not fail on it, nor answer a status outside 2xx and 4xx. A
    connection closed instead of an answer refuses it too (a framework may drop a body it
    cannot decode): that is noted, not judged."""
    from paysuite_core.driver.http import TargetUnreachable  # not at import: --list stays light

    client = target.client
    reader = target.writer() or target.need_reader()
    probes: list[tuple[str, Callable[[], Reply]]] = [
        (
            "GET /events/transactions with offset 2**63",
            lambda: client.get(EVENTS, params={"offset": str(2**63)}, token=target.token(reader)),
        ),
        (
            "authorize with a client_id holding a lone surrogate",
            lambda: client.post(
                AUTHORIZE, content='{"client_id": "\\ud800x", "client_secret": "x"}'
            ),
        ),
    ]
    for path, kind in ((CASHIN, "CASHIN"), (CASHOUT, "CASHOUT")):
        app = target.writer(kind)
        if app is not None:
            probes += _odd_creations(target, path, app)
    bad: list[tuple[str, Reply]] = []
    for what, send in probes:
        try:
            reply = send()
        except TargetUnreachable as exc:
            target.note(f"ERR-004: {what}: the connection closed without an answer ({exc})")
            continue
        if not (reply.ok or reply.rejected):
            bad.append((what, reply))
    expect(
        not bad,
        "; ".join(f"{what} answered {reply.status}" for what, reply in bad),
        *[reply for _, reply in bad][:4],
        expected="a 2xx (served) or a 4xx (refused)",
        actual=", ".join(str(reply.status) for _, reply in bad),
    )


def _odd_creations(
    target: Target, path: str, app: Application
) -> list[tuple[str, Callable[[], Reply]]]:
    """ERR-004's creations on ``path``: a valid body, oddly framed or with an odd key."""
    return [
        (
            f"POST {path} with a chunked body",
            lambda: target.client.post(
                path,
                json=_valid_body(target),
                chunked=True,
                headers={"Idempotency-Key": target.fresh_key()},
                token=target.token(app),
            ),
        ),
        (
            f"POST {path} with Content-Encoding: gzip on a plain body",
            lambda: _gzip_on_plain_bytes(target, path, app),
        ),
        (
            f"POST {path} with an Idempotency-Key of bytes that are not UTF-8",
            lambda: _key_not_utf8(target, path, app),
        ),
    ]


def _valid_body(target: Target) -> dict[str, object]:
    return {"amount": target.amount(), "number": target.number()}


def _gzip_on_plain_bytes(target: Target, path: str, app: Application) -> Reply:
    """A valid creation whose body claims a gzip coding it does not have (ERR-003, ERR-004)."""
    return target.client.post(
        path,
        json=_valid_body(target),
        headers={
            "Content-Encoding": "gzip",
            "Idempotency-Key": target.fresh_key(),
            "Connection": "close",  # the server may drop what it could not read
        },
        token=target.token(app),
    )


def _amount_twice(target: Target, number: str) -> str:
    """A cashin body naming ``amount`` twice, each value valid alone (RC-42): two meanings."""
    first, second = target.amount(), target.amount()
    return f'{{"amount": {first}, "amount": {second}, "number": {json.dumps(number)}}}'


def _key_not_utf8(target: Target, path: str, app: Application) -> Reply:
    """A valid creation whose Idempotency-Key holds bytes that are not UTF-8 (ERR-003, -004)."""
    return target.client.post(
        path,
        json=_valid_body(target),
        headers={"Idempotency-Key": b"\xff\xfe" + target.fresh_key()[:8].encode()},
        token=target.token(app),
    )


@check(
    "ERR-005",
    "SHOULD",
    Section.ERRORS_2,
    "a body of 64 KiB is served and one byte more is refused with 413 (RC-29)",
    "Rate limits, amount bounds and maximum page size: not shown.",
    "reference",
)
def a_body_of_64_kib_is_served(target: Target) -> None:
    app = target.writer("CASHIN")
    if app is None:
        not_applicable("no application may cashin")
    at = target.client.post(
        CASHIN,
        content=_padded_body(target, BODY_LIMIT),
        headers={"Idempotency-Key": target.fresh_key()},
        token=target.token(app),
    )
    over = target.client.post(
        CASHIN,
        content=_padded_body(target, BODY_LIMIT + 1),
        headers={"Idempotency-Key": target.fresh_key()},
        token=target.token(app),
    )
    expect(
        at.ok and over.status == 413,
        f"a body of {BODY_LIMIT} bytes answered {at.status}, one of {BODY_LIMIT + 1} bytes "
        f"{over.status}",
        at,
        over,
        expected=f"{BODY_LIMIT} bytes served (2xx); {BODY_LIMIT + 1} bytes refused with 413",
        actual=f"{at.status}; {over.status}",
    )


#: ERR-006: digits of the integer in the unknown field: one more than Python's default limit on
#: converting text to int (``sys.get_int_max_str_digits``, 4300), where a parser may give up.
HUGE_INTEGER_DIGITS = 4301


@check(
    "ERR-006",
    "SHOULD",
    Section.ERRORS_2,
    "a valid cashin with an unknown field holding a 4301-digit integer is served: unknown "
    "fields are ignored (RC-30)",
    "All bodies are JSON. [...] Body: amount (number, required), number (string, required).",
    "reference",
)
def an_unknown_field_holding_a_huge_integer_is_ignored(target: Target) -> None:
    """RC-30 ignores unknown fields, whatever they hold: a JSON number of any length is valid
    JSON (RFC 8259 sets no limit), so the body is well formed and its known fields valid. A
    parser that converts every integer it meets refuses this one as malformed, and a client's
    payment with it."""
    app = target.writer("CASHIN")
    if app is None:
        not_applicable("no application may cashin")
    body = _valid_body(target)
    text = json.dumps(body)[:-1] + ', "extra": 1' + "0" * (HUGE_INTEGER_DIGITS - 1) + "}"
    reply = target.client.post(
        CASHIN,
        content=text,
        headers={"Idempotency-Key": target.fresh_key()},
        token=target.token(app),
    )
    expect(
        reply.ok and reply.get("status") == "pending",
        f"a valid cashin with an unknown field holding a {HUGE_INTEGER_DIGITS}-digit integer "
        f"answered {reply.status}",
        reply,
        expected="served like the same body without the field (2xx, a pending transaction)",
        actual=f"{reply.status} {reply.text[:120]}",
    )


@set_up_early("ERR-007")
def stall_a_body(target: Target) -> None:
    """Stall ERR-007's body when the run starts: its wait passes while the other checks run."""
    stall = start_stall(target)
    if stall is not None:
        target.early["ERR-007"] = stall


@check(
    "ERR-007",
    "SHOULD",
    Section.ERRORS_2,
    "a request body that stalls gets 408 request_timeout (RC-4) within the body time-out, "
    "and the connection is closed",
    "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
    "reference",
)
def a_stalled_body_gets_408_and_a_closed_connection(target: Target) -> None:
    """A cashin whose body stops short of its ``Content-Length``: the reference answers 408
    ``request_timeout`` once its body time-out (10 s) has passed, then closes the connection
    (what is left of the body would be read as the next request). A target that never answers
    holds the client as long as it waits; this check waits the time-out and a grace, no more."""
    from paysuite_core.bounded_http import in_words

    stall = target.early.pop("ERR-007", None)
    if not isinstance(stall, Stall):
        try:
            stall = start_stall(target)
        except OSError as exc:
            raise CouldNotCheck(f"the stalled request could not be sent: {in_words(exc)}") from None
    if stall is None:
        not_applicable("no application may cashin")
    seen = stall.wait(target.client.stopped, target.client.check_deadline)
    evidence = target.current
    if evidence is not None:
        evidence.add(stall.exchange)
    judge(seen, stall)
