"""The document's "Authentication" section, with "Endpoints: 5. Authorize an application" and
"6. Refresh tokens" (AUTH-001..013).

The token pair, bad credentials, requests without or with a bad token, refresh (either path,
rotation), the access token's expiry and ``expires``.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from conformance.api import AUTHORIZE, CASHIN, CASHOUT, EVENTS, REFRESH_PATHS, find_path
from conformance.checks import Section, check
from conformance.jwt_forgeries import forgeries, is_jwt, parts
from conformance.outcome import expect, fail, not_applicable, precondition

if TYPE_CHECKING:
    from conformance.http import Reply
    from conformance.target import Target


def _claims_problem(token: object) -> str | None:
    """A JWT's ``exp``/``iat``, when present, must describe a token that works now."""
    decoded = parts(token) if isinstance(token, str) else None
    if decoded is None:
        return None
    claims = decoded[1]
    now = time.time()
    exp, iat = claims.get("exp"), claims.get("iat")
    if exp is not None and (not isinstance(exp, (int, float)) or exp <= now):
        return f"exp {exp!r} is not a future Unix time (now {now:.0f})"
    if iat is not None and (not isinstance(iat, (int, float)) or iat > now + 300):
        return f"iat {iat!r} is not a past Unix time (now {now:.0f})"
    return None


def _reads_ok(target: Target, token: str) -> Reply:
    return target.client.get(EVENTS, token=None, headers={"Authorization": f"Bearer {token}"})


class Probe:
    """Problems found by sending protected operations with a bad Authorization, and the proof."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.proof: list[Reply] = []

    def verdict(self) -> None:
        expect(not self.problems, "; ".join(self.problems), *self.proof[:6])


def _protected_probe(
    target: Target, authorization: str | None, label: str, probe: Probe | None = None
) -> Probe:
    """Send every protected operation with ``authorization``; record each one not rejected.

    Creations use fresh numbers, and afterwards the suite counts (with a valid token) that no
    transaction was created for them: a 4xx that still executes is not a rejection.
    """
    probe = probe or Probe()
    app = target.writer()
    assert app is not None
    _, created = target.created("CASHIN", app)
    numbers: list[tuple[str, Reply]] = []
    numbers_seen: dict[str, set[str]] = {}
    headers = {"Authorization": authorization}
    for path in (CASHIN, CASHOUT):
        number = target.number()
        numbers_seen[number] = target.known_refs(app, number)
        reply = target.client.post(
            path,
            json={"amount": target.amount(), "number": number},
            headers=dict(headers, **{"Idempotency-Key": target.fresh_key()}),
        )
        numbers.append((number, reply))
        if not reply.rejected:
            probe.problems.append(
                f"POST {path} with {label} answered {reply.status}, expected a 4xx"
            )
            probe.proof.append(reply)
    for path in (find_path(created["ref"]), EVENTS):
        reply = target.client.get(path, headers=headers)
        if not reply.rejected:
            probe.problems.append(f"GET {path} with {label} answered {reply.status}, not 4xx")
            probe.proof.append(reply)
    for number, reply in numbers:
        if target.created_events_for_number(app, number, numbers_seen[number]):
            probe.problems.append(
                f"{reply.exchange.method} {reply.exchange.url} with {label} created a transaction"
            )
            probe.proof.append(reply)
    return probe


def _require_writer(target: Target) -> None:
    if target.writer() is None:
        not_applicable("no read-write or cashin application configured")


@check(
    "AUTH-001",
    "MUST",
    Section.ENDPOINT_AUTHORIZE,
    "authorize returns the token pair (access JWT, refresh, expires)",
    "The token is obtained by posting the application's client_id and client_secret to the "
    "authorize endpoint. The response carries access, refresh and expires.",
)
def authorize_returns_the_token_pair(configured: Target) -> None:
    target = configured
    app = target.reader()
    assert app is not None
    reply = target.authorize(app)
    expect(reply.ok, f"authorize answered {reply.status}, expected a 2xx", reply)
    expect(isinstance(reply.body, dict), "the token pair is not a JSON object", reply)
    for name in ("access", "refresh", "expires"):
        expect(name in reply.body, f"the token pair has no {name!r}", reply)
    expect(
        is_jwt(reply.get("access")),
        "access is not a JWT (header.claims.signature)",
        reply,
        expected="a JWT: base64url header with alg, claims, signature",
        actual=repr(reply.get("access"))[:80],
    )
    problem = _claims_problem(reply.get("access"))
    expect(problem is None, f"the access token's claims: {problem}", reply)
    expect(
        isinstance(reply.get("refresh"), str) and reply.get("refresh"),
        "refresh is not a non-empty string",
        reply,
    )
    expires = reply.get("expires")
    expect(
        isinstance(expires, (str, int)) and not isinstance(expires, bool),
        f"expires is {type(expires).__name__}; the document says string (integer tolerated)",
        reply,
    )
    listing = _reads_ok(target, reply.get("access"))
    expect(
        listing.ok,
        f"the new access token was refused by the events list: {listing.status}",
        reply,
        listing,
    )


@check(
    "AUTH-002",
    "MUST",
    Section.AUTHENTICATION_2,
    "authorize with a wrong client_secret is rejected",
    "The token is obtained by posting the application's client_id and client_secret to the "
    "authorize endpoint.",
)
def authorize_with_a_wrong_secret_is_rejected(configured: Target) -> None:
    target = configured
    app = target.reader()
    assert app is not None
    reply = target.authorize(app, secret=app.client_secret + "x")
    expect(reply.rejected, f"a wrong client_secret answered {reply.status}, expected 4xx", reply)
    expect(not reply.get("access"), "a wrong client_secret still got an access token", reply)


@check(
    "AUTH-003",
    "MUST",
    Section.AUTHENTICATION_2,
    "authorize with an unknown client_id is rejected",
    "Clients authenticate with an application (a client_id and client_secret pair) and "
    "exchange it for a JWT access token.",
)
def authorize_with_an_unknown_client_id_is_rejected(target: Target) -> None:
    reply = target.client.post(
        AUTHORIZE, json={"client_id": f"unknown-{uuid.uuid4().hex}", "client_secret": "nope"}
    )
    expect(reply.rejected, f"an unknown client_id answered {reply.status}, expected 4xx", reply)
    expect(not reply.get("access"), "an unknown client_id got an access token", reply)


@check(
    "AUTH-004",
    "MUST",
    Section.AUTHENTICATION_3,
    "every protected operation rejects a request without Authorization",
    "Authorize and refresh are called without an Authorization header. The transaction and "
    "event endpoints require it.",
)
def protected_operations_reject_a_missing_authorization(configured: Target) -> None:
    _require_writer(configured)
    _protected_probe(configured, None, "no Authorization header").verdict()


@check(
    "AUTH-005",
    "MUST",
    Section.AUTHENTICATION_1,
    "every protected operation rejects a malformed bearer token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def protected_operations_reject_a_malformed_bearer_token(configured: Target) -> None:
    _require_writer(configured)
    probe = Probe()
    for value in ("Bearer not-a-jwt", "Bearer", "Bearer a.b.c"):
        _protected_probe(configured, value, repr(value), probe)
    probe.verdict()


@check(
    "AUTH-006",
    "SHOULD",
    Section.AUTHENTICATION_1,
    "a valid token under another scheme (Basic, Token) is rejected; a bare token is noted",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>. [The document tells the client what to send; the live service accepts "
    "a bare token, which its JavaScript SDK sends.]",
    "reference",
)
def a_token_under_another_scheme_is_rejected(configured: Target) -> None:
    """Another scheme is refused; a bare token is the live service's choice, noted not judged."""
    _require_writer(configured)
    app = configured.writer()
    assert app is not None
    token = configured.token(app)
    bare = configured.client.get(EVENTS, headers={"Authorization": token})
    configured.note(
        "bare token (no 'Bearer '): "
        + ("accepted, as the live service" if bare.ok else f"refused ({bare.status})")
    )
    probe = Probe()
    for value in (f"Token {token}", f"Basic {token}"):
        label = value.split(" ")[0] + " <valid access token>"
        _protected_probe(configured, value, label, probe)
    probe.verdict()


@check(
    "AUTH-007",
    "MUST",
    Section.AUTHENTICATION_1,
    "every protected operation rejects a tampered or unsigned token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def protected_operations_reject_tampered_or_unsigned_tokens(configured: Target) -> None:
    _require_writer(configured)
    app = configured.writer()
    assert app is not None
    token = configured.pair(app, fresh=True).access
    probe = Probe()
    for name, forged in forgeries(token).items():
        _protected_probe(configured, f"Bearer {forged}", f"a token with {name}", probe)
    probe.verdict()


#: AUTH-008: ``exp`` is a whole second (NumericDate), so a token may outlive its ttl by < 1 s.
EXP_GRANULARITY_S = 1.0
#: AUTH-008: past that, before the expired token is sent (timer and scheduling jitter).
EXPIRY_SLACK_S = 0.25


@check(
    "AUTH-008",
    "MUST",
    Section.AUTHENTICATION_4,
    "an access token past its lifetime is rejected everywhere; a refreshed one works",
    "Access tokens typically last 15 minutes. After that the client obtains a new pair "
    "through the refresh endpoint with its refresh token, without using the client_secret "
    "again.",
)
def an_expired_access_token_is_rejected_a_refreshed_one_works(configured: Target) -> None:
    target = configured
    assert target.config is not None
    ttl = float(target.config.access_token_ttl_s)
    if ttl > target.max_wait_s:
        not_applicable(f"access_token_ttl_s {ttl:g} exceeds max_wait_s {target.max_wait_s:g}")
    _require_writer(target)
    app = target.writer()
    assert app is not None
    pair = target.pair(app, fresh=True)
    before = _reads_ok(target, pair.access)
    precondition(before.ok, f"a fresh access token was refused: {before.status}", before)
    # exp has a one-second granularity (RFC 7519 NumericDate): minted after the request left,
    # the token has expired ttl + 1 s after its answer came; a little slack on top.
    time.sleep(ttl + EXP_GRANULARITY_S + EXPIRY_SLACK_S)
    probe = _protected_probe(target, f"Bearer {pair.access}", "an expired access token")
    problems = probe.problems
    refreshed = None
    for template in REFRESH_PATHS:
        reply = target.refresh(pair.refresh, template)
        if reply.ok and isinstance(reply.get("access"), str):
            refreshed = reply
            break
    if refreshed is None:
        fail(
            "after the access token expired, no refresh path returned a new pair; "
            + "; ".join(problems)
        )
    assert refreshed is not None
    after = _reads_ok(target, refreshed.get("access"))
    if not after.ok:
        problems.append(f"the refreshed access token was refused: {after.status}")
    expect(not problems, "; ".join(problems), *probe.proof[:4], refreshed, after)


@check(
    "AUTH-009",
    "MUST",
    Section.ENDPOINT_REFRESH,
    "refresh without Authorization returns a working pair (at least one refresh path)",
    "Method and path: GET {base_url}/auth/agents/refresh/{refresh_token}. [...] its examples "
    "call GET {base_url}/auth/refresh/{refresh_token}. [...] Headers: Accept. No "
    "Authorization header. Response: the token pair.",
)
def refresh_without_authorization_returns_a_working_pair(configured: Target) -> None:
    target = configured
    app = target.reader()
    assert app is not None
    working, notes, proof = [], [], []
    for template in REFRESH_PATHS:
        pair = target.pair(app, fresh=True)  # a fresh pair per path: rotation may apply
        reply = target.refresh(pair.refresh, template)
        proof.append(reply)
        if not reply.ok:
            notes.append(f"{template}: {reply.status}")
            continue
        body = reply.body if isinstance(reply.body, dict) else {}
        missing = [k for k in ("access", "refresh", "expires") if k not in body]
        if missing:
            notes.append(f"{template}: the pair lacks {', '.join(missing)}")
            continue
        if not is_jwt(body["access"]) or _claims_problem(body["access"]):
            notes.append(
                f"{template}: the new access is not a working JWT "
                f"({_claims_problem(body['access']) or repr(body['access'])[:40]})"
            )
            continue
        if not isinstance(body["refresh"], str) or not body["refresh"]:
            notes.append(f"{template}: the new refresh is {body['refresh']!r}")
            continue
        listing = _reads_ok(target, body["access"])
        proof.append(listing)
        if not listing.ok:
            notes.append(f"{template}: the refreshed access token was refused ({listing.status})")
            continue
        working.append(template)
    expect(
        working,
        "no refresh path returned a working token pair: " + "; ".join(notes),
        *proof,
        expected="a new token pair (JWT access that the events list takes) on either path",
        actual="; ".join(notes),
    )
    configured.note("refresh paths serving a pair: " + ", ".join(working))


@check(
    "AUTH-010",
    "MUST",
    Section.AUTHENTICATION_1,
    "a refresh token is not accepted as an access token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def a_refresh_token_is_not_an_access_token(configured: Target) -> None:
    _require_writer(configured)
    app = configured.writer()
    assert app is not None
    pair = configured.pair(app, fresh=True)
    _protected_probe(configured, f"Bearer {pair.refresh}", "a refresh token").verdict()


@check(
    "AUTH-011",
    "SHOULD",
    Section.ENDPOINT_REFRESH,
    "both refresh paths are served (RC-9)",
    "Which shape is authoritative is unresolved in the reference; an implementation may "
    "serve both.",
    "reference",
)
def both_refresh_paths_are_served(configured: Target) -> None:
    target = configured
    app = target.reader()
    assert app is not None
    for template in REFRESH_PATHS:
        pair = target.pair(app, fresh=True)
        reply = target.refresh(pair.refresh, template)
        expect(
            reply.ok and isinstance(reply.get("access"), str),
            f"GET {template} answered {reply.status} without a token pair",
            reply,
        )


@check(
    "AUTH-012",
    "SHOULD",
    Section.ENDPOINT_REFRESH,
    "a used refresh token stops working: rotation (RC-10)",
    "After that the client obtains a new pair through the refresh endpoint with its refresh token.",
    "reference",
)
def a_used_refresh_token_stops_working(configured: Target) -> None:
    target = configured
    app = target.reader()
    assert app is not None
    pair = target.pair(app, fresh=True)
    first = target.refresh(pair.refresh, REFRESH_PATHS[1])
    if not first.ok:
        first = target.refresh(pair.refresh, REFRESH_PATHS[0])
    precondition(first.ok, f"refresh answered {first.status} (AUTH-009)", first)
    again = target.refresh(pair.refresh, REFRESH_PATHS[1])
    expect(
        again.rejected,
        f"the refresh token was accepted a second time ({again.status}); RC-10 rotates it",
        first,
        again,
    )


@check(
    "AUTH-013",
    "SHOULD",
    Section.AUTHENTICATION_4,
    "expires is an integer, the Unix time of the access token's expiry (RC-8)",
    "Format and unit of expires: not shown.",
    "reference",
)
def expires_is_the_unix_time_of_expiry(configured: Target) -> None:
    target = configured
    assert target.config is not None
    app = target.reader()
    assert app is not None
    reply = target.authorize(app)
    expires = reply.get("expires")
    expect(
        isinstance(expires, int) and not isinstance(expires, bool),
        f"expires is {expires!r}, RC-8 chooses an integer (Unix seconds)",
        reply,
    )
    expected = time.time() + float(target.config.access_token_ttl_s)
    expect(
        abs(expires - expected) < 120,
        f"expires {expires} is not now + access_token_ttl_s ({expected:.0f})",
        reply,
    )
