"""The document's "Errors", rule 2 (ERR-001..003); rule 1, idempotency, is ``idempotency.py``.

Malformed input never breaks the server; the reference error catalogue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.api import AUTHORIZE, CASHIN, CASHOUT, EVENTS, find_path
from conformance.checks import Section, check
from conformance.outcome import expect, not_applicable, precondition

if TYPE_CHECKING:
    from conformance.http import Reply
    from conformance.target import Target

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
def malformed_input_is_a_4xx_never_a_5xx(configured: Target) -> None:
    target = configured
    # Each creation path with an application that may create its kind: a body is judged, not
    # a privilege refused before the body is read.
    paths = [
        (path, target.token(app))
        for path, kind in ((CASHIN, "CASHIN"), (CASHOUT, "CASHOUT"))
        if (app := target.writer(kind)) is not None
    ]
    if not paths:
        not_applicable("no application may cashin or cashout")
    problems, proof = [], []
    for path, auth in (*paths, (AUTHORIZE, None)):
        for label, body in MALFORMED.items():
            reply = target.client.post(
                path, content=body, token=auth, headers={"Idempotency-Key": target.fresh_key()}
            )
            if not reply.rejected:
                problems.append(f"POST {path} with {label} answered {reply.status}")
                proof.append(reply)
    expect(
        not problems,
        "malformed input not rejected with a 4xx: " + "; ".join(problems[:6]),
        *proof[:4],
    )


def _provoke(target: Target) -> list[tuple[str, int, str, Reply]]:
    """(what, expected status, expected code, reply) for each entry of the RC-4 catalogue."""
    writer = target.app("read-write")
    if writer is None:
        not_applicable("no read-write application configured")
    token = target.token(writer)
    key = target.fresh_key()
    number = target.number()
    first = target.create("CASHIN", writer, number=number, key=key)
    precondition(first.ok, f"cashin answered {first.status}", first)
    client = target.client
    cases = [
        ("malformed JSON", 400, "malformed_json", client.post(CASHIN, content="{", token=token)),
        (
            "amount as text",
            400,
            "validation_error",
            client.post(CASHIN, json={"amount": "x", "number": number}, token=token),
        ),
        (
            "33-character key",
            400,
            "invalid_idempotency_key",
            target.create("CASHIN", writer, key="k" * 33),
        ),
        ("no Authorization", 401, "missing_token", client.get(EVENTS)),
        (
            "garbage token",
            401,
            "invalid_token",
            client.get(EVENTS, headers={"Authorization": "Bearer x.y.z"}),
        ),
        ("wrong secret", 401, "invalid_credentials", target.authorize(writer, secret="wrong")),
        (
            "unknown ref",
            404,
            "transaction_not_found",
            client.get(find_path("00000000-0000-4000-8000-000000000000"), token=token),
        ),
        ("unknown route", 404, "not_found", client.get("/no/such/route", token=token)),
        ("wrong method", 405, "method_not_allowed", client.get(CASHIN, token=token)),
        (
            "reused key",
            409,
            "idempotency_key_reused",
            target.create("CASHIN", writer, number=number, key=key),
        ),
    ]
    reader = target.app("read")
    if reader is not None:
        cases.append(
            (
                "read-only cashin",
                403,
                "insufficient_privilege",
                target.create("CASHIN", reader, key=target.fresh_key()),
            )
        )
    return cases


@check(
    "ERR-002",
    "SHOULD",
    Section.ERRORS_2,
    'error bodies are {"status", "code", "message"} (RC-3)',
    "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
    "reference",
)
def error_bodies_are_status_code_message(configured: Target) -> None:
    problems, proof = [], []
    for what, _, _, reply in _provoke(configured):
        body = reply.body
        if not (
            isinstance(body, dict)
            and body.get("status") == reply.status
            and isinstance(body.get("code"), str)
            and isinstance(body.get("message"), str)
            and body.get("message")
        ):
            problems.append(f"{what}: {reply.status} {reply.text[:120]!r}")
            proof.append(reply)
    expect(
        not problems,
        'error bodies not {"status", "code", "message"} (RC-3): ' + "; ".join(problems[:5]),
        *proof[:3],
    )


@check(
    "ERR-003",
    "SHOULD",
    Section.ERRORS_2,
    "error statuses and codes follow the catalogue (RC-4, RC-5)",
    "Error response bodies, HTTP error status codes and error codes, including those of the "
    "rejection in rule 1: not shown.",
    "reference",
)
def error_statuses_and_codes_follow_the_catalogue(configured: Target) -> None:
    problems, proof = [], []
    for what, status, code, reply in _provoke(configured):
        if reply.status != status or reply.get("code") != code:
            problems.append(
                f"{what}: {reply.status} {reply.get('code')!r}, expected {status} {code!r}"
            )
            proof.append(reply)
    expect(not problems, "RC-4 catalogue: " + "; ".join(problems[:6]), *proof[:4])
