"""The document's "Authentication" section, with "Endpoints: 5. Authorize an application" and
"6. Refresh tokens" (AUTH-001..018).

The token pair, bad credentials (a client_secret matches byte for byte), requests without or with
a bad token, the ``Bearer`` scheme in any case, refresh (each path a target serves: what it
returns, what it refuses, rotation), the access token's expiry and ``expires``, and (reference
profile) the stub's limit on authorize attempts, the one rate limit the suite judges.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.checks import Findings, check, set_up_early
from conformance.jwt_forgeries import forgeries, is_jwt, parts
from paysuite_core.driver.api import (
    AUTHORIZE,
    CASHIN,
    CASHOUT,
    EVENTS,
    REFRESH_PATHS,
    data_of,
    find_path,
    kind_path,
)
from paysuite_core.results.outcome import (
    CouldNotCheck,
    exchanges_of,
    expect,
    fail,
    not_applicable,
    precondition,
)
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.http import RecordingClient, Reply
    from paysuite_core.driver.target import Target, TokenPair
    from paysuite_core.target_config import Application


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


class Probe(Findings):
    """Problems found by sending protected operations with a bad Authorization, and the proof.

    ``answer``: the exact (status, code) each refusal must be, when the check demands one (the
    reference profile's catalogue, RC-4; a code of None: the status alone); otherwise any 4xx
    is a refusal."""

    def __init__(self, answer: tuple[int, str | None] | None = None) -> None:
        super().__init__()
        self.answer = answer

    def judge(self, what: str, reply: Reply) -> None:
        """Record ``reply`` to ``what`` when it is no refusal, or not the demanded one."""
        if not reply.rejected:
            self.problems.append(f"{what} answered {reply.status}, expected a 4xx")
        elif self.answer is not None and (
            reply.status != self.answer[0]
            or (self.answer[1] is not None and reply.get("code") != self.answer[1])
        ):
            status, code = self.answer
            wanted = f"{status} {code!r}" if code is not None else str(status)
            self.problems.append(
                f"{what} answered {reply.status} {reply.get('code')!r}, expected {wanted} (RC-4)"
            )
        else:
            return
        self.proof.append(reply)


def _protected_probe(
    target: Target, authorization: str | None, label: str, probe: Probe | None = None
) -> Probe:
    """Send every protected operation with ``authorization``; record each one not rejected.

    Creations use fresh numbers, and afterwards the suite counts (with a valid token) that no
    transaction was created for them: a 4xx that still executes is not a rejection. With only a
    read application (what production access often is) the reads are probed alone, on a ref the
    application can see: the rule is the same on every operation the configuration reaches.
    """
    probe = probe or Probe()
    writer = target.writer()
    if writer is None:
        reader = target.need_reader()
        target.note("creations not probed: no configured application may create")
        ref = _a_visible_ref(target, reader)
    else:
        _, created = target.created("CASHIN", writer)
        ref = created["ref"]
        _probe_creations(target, writer, authorization, label, probe)
    for path in (find_path(ref), EVENTS):
        reply = target.client.get(path, headers={"Authorization": authorization})
        probe.judge(f"GET {path} with {label}", reply)
    return probe


def _probe_creations(
    target: Target, app: Application, authorization: str | None, label: str, probe: Probe
) -> None:
    """Cashin and cashout with ``authorization``: each must be rejected and create nothing."""
    numbers: list[tuple[str, Reply]] = []
    numbers_seen: dict[str, set[str]] = {}
    for path in (CASHIN, CASHOUT):
        number = target.number()
        numbers_seen[number] = target.known_refs(app, number)
        reply = target.client.post(
            path,
            json={"amount": target.amount(), "number": number},
            headers={"Authorization": authorization, "Idempotency-Key": target.fresh_key()},
        )
        numbers.append((number, reply))
        probe.judge(f"POST {path} with {label}", reply)
    for number, reply in numbers:
        if target.created_events_for_number(app, number, numbers_seen[number]):
            probe.add(
                f"{reply.exchange.method} {reply.exchange.url} with {label} created a transaction",
                reply,
            )


def _a_visible_ref(target: Target, app: Application) -> str:
    """A ref ``app`` may read (the newest listed), or an unknown one when none is listed."""
    return _a_listed_ref(target, app) or str(uuid.uuid4())


def _a_listed_ref(target: Target, app: Application) -> str | None:
    """A ref on the first page of ``app``'s events list, or None."""
    listing = target.list_events(app)
    records = listing.get("transactions") if listing.ok else None
    for record in records if isinstance(records, list) else []:
        ref = record.get("data", {}).get("ref") if isinstance(record, dict) else None
        if isinstance(ref, str) and ref:
            return ref
    return None


def _refresh_token(pair: TokenPair, app: Application) -> str:
    if not pair.refresh:
        raise CouldNotCheck(f"authorize gave application {app.client_id} no refresh token")
    return pair.refresh


def fresh_refresh_token(target: Target, app: Application) -> str:
    """The refresh token of a pair authorized just now for the caller alone (``own_pair``):
    rotation may have spent an older one, and spending it must not touch the run's session."""
    return _refresh_token(target.own_pair(app), app)


def refreshed_pairs(target: Target, app: Application) -> Iterator[tuple[str, Reply]]:
    """A pair refreshed on each refresh path that serves one: (path template, its answer).

    Each path gets a pair of its own, authorized just before (rotation may spend a refresh
    token), and is refreshed only when the caller asks for the next one, so that the caller
    uses each refreshed token at once (a target may give access tokens a few seconds of life).
    A path that answers no token pair (404 where it is not served) is left out: AUTH-009 judges
    the paths themselves, the checks calling this judge what a served pair may do.
    """
    for template in REFRESH_PATHS:
        reply = target.refresh(fresh_refresh_token(target, app), template)
        access = reply.get("access") if reply.ok else None
        if isinstance(access, str) and access:
            yield template, reply


def _secret_variants(secret: str) -> dict[str, str]:
    """Secrets that differ from ``secret`` by one thing a lax comparison would overlook."""
    variants = {
        "the secret with one character more": secret + "x",
        "the secret in another letter case": secret.swapcase(),
        "the secret without its last character": secret[:-1],
        "the secret with a trailing space": secret + " ",
        "the secret with a trailing newline": secret + "\n",
    }
    return {label: value for label, value in variants.items() if value != secret}


@check(
    "AUTH-001",
    "MUST",
    Section.ENDPOINT_AUTHORIZE,
    "authorize returns the token pair (access JWT, refresh, expires)",
    "The token is obtained by posting the application's client_id and client_secret to the "
    "authorize endpoint. The response carries access, refresh and expires.",
)
def authorize_returns_the_token_pair(target: Target) -> None:
    app = target.need_reader()
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
    "authorize with a wrong client_secret is rejected: another case, a prefix, trailing whitespace",
    "The token is obtained by posting the application's client_id and client_secret to the "
    "authorize endpoint.",
)
def authorize_with_a_wrong_secret_is_rejected(target: Target) -> None:
    """The secret is compared byte for byte: another case, a prefix, a trailing space or
    newline is another secret (a comparison that lowercases, trims or stops early is not)."""
    app = target.need_reader()
    found = Findings()
    for label, secret in _secret_variants(app.client_secret).items():
        reply = target.authorize(app, secret=secret)
        if not reply.rejected or reply.get("access"):
            found.add(
                f"{label} answered {reply.status}"
                + (" with an access token" if reply.get("access") else ", expected a 4xx"),
                reply,
            )
    found.verdict("every client_secret other than the application's, byte for byte, refused (4xx)")


@check(
    "AUTH-003",
    "MUST",
    Section.AUTHENTICATION_2,
    "authorize with an unknown client_id is rejected",
    "Clients authenticate with an application (a client_id and client_secret pair) and "
    "exchange it for a JWT access token.",
)
def authorize_with_an_unknown_client_id_is_rejected(bare_target: Target) -> None:
    reply = bare_target.client.post(
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
def protected_operations_reject_a_missing_authorization(target: Target) -> None:
    _protected_probe(target, None, "no Authorization header").verdict(shown=6, actual="none")


@check(
    "AUTH-005",
    "MUST",
    Section.AUTHENTICATION_1,
    "every protected operation rejects a malformed bearer token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def protected_operations_reject_a_malformed_bearer_token(target: Target) -> None:
    probe = Probe()
    for value in ("Bearer not-a-jwt", "Bearer", "Bearer a.b.c"):
        _protected_probe(target, value, repr(value), probe)
    probe.verdict(shown=6, actual="none")


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
def a_token_under_another_scheme_is_rejected(target: Target) -> None:
    """Another scheme is refused; a bare token is the live service's choice, noted not judged."""
    app = target.writer() or target.need_reader()
    token = target.token(app)
    bare = target.client.get(EVENTS, headers={"Authorization": token})
    target.note(
        "bare token (no 'Bearer '): "
        + ("accepted, as the live service" if bare.ok else f"refused ({bare.status})")
    )
    probe = Probe()
    for value in (f"Token {token}", f"Basic {token}"):
        label = value.split(" ")[0] + " <valid access token>"
        _protected_probe(target, value, label, probe)
    probe.verdict(shown=6, actual="none")


@check(
    "AUTH-007",
    "MUST",
    Section.AUTHENTICATION_1,
    "every protected operation rejects a tampered or unsigned token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def protected_operations_reject_tampered_or_unsigned_tokens(target: Target) -> None:
    app = target.writer() or target.need_reader()
    token = target.pair(app, fresh=True).access
    probe = Probe()
    for name, forged in forgeries(token).items():
        _protected_probe(target, f"Bearer {forged}", f"a token with {name}", probe)
    probe.verdict(shown=6, actual="none")


@dataclass
class ExpiryClock:
    """AUTH-008's token pairs (one per refresh path, as rotation may apply) and when they were
    issued, with the read that showed the first one working while fresh."""

    app: Application
    pairs: list[TokenPair]
    fresh: Reply
    started: float


def start_expiry_clock(target: Target, app: Application | None = None) -> ExpiryClock:
    """Issue AUTH-008's pairs now."""
    app = app or target.writer() or target.need_reader()
    pairs = [target.short_lived_pair(app) for _ in REFRESH_PATHS]
    started = time.monotonic()
    return ExpiryClock(app, pairs, _reads_ok(target, pairs[0].access), started)


@set_up_early("AUTH-008")
def issue_the_expiry_pairs(target: Target) -> None:
    """AUTH-008 runs last on pairs issued when the run starts: the token ages while every other
    check runs instead of in a wait of its own (unless the TTL is too long to wait for)."""
    config = target.config
    if config is not None and config.expiry_ttl_s() is not None:
        target.early["AUTH-008"] = start_expiry_clock(target)


#: AUTH-008: ``exp`` is a whole second (NumericDate), so a token may outlive its ttl by < 1 s.
EXP_GRANULARITY_S = 1.0
#: AUTH-008: past that, before the expired token is sent (timer and scheduling jitter).
EXPIRY_SLACK_S = 0.25
#: AUTH-008, reference profile: RC-4's status for a well-signed token past its ``exp``. The
#: status alone: AUTH-008 is a MUST, and a body without RC-4's ``code`` (the go-error-body
#: variant) is ERR-002's and ERR-003's to name, not a broken expiry.
EXPIRED: tuple[int, str | None] = (401, None)


@check(
    "AUTH-008",
    "MUST",
    Section.AUTHENTICATION_4,
    "an access token past its lifetime is rejected everywhere; a refreshed one works",
    "Access tokens typically last 15 minutes. After that the client obtains a new pair "
    "through the refresh endpoint with its refresh token, without using the client_secret "
    "again.",
)
def an_expired_access_token_is_rejected_a_refreshed_one_works(target: Target) -> None:
    """One wait serves every path: a pair per refresh path is authorized before it, and after it
    each path that answers a pair must answer one that works (at least one path must)."""
    config = target.need_config()
    ttl = config.expiry_ttl_s()
    if ttl is None:
        not_applicable(
            f"access_token_ttl_s {float(config.access_token_ttl_s):g} exceeds max_wait_s "
            f"{target.max_wait_s:g} and no short_lived_pair is declared"
            if config.short_lived_pair is None
            else f"access_token_ttl_s {float(config.access_token_ttl_s):g} and short_lived_pair's "
            f"{float(config.short_lived_pair.access_token_ttl_s):g} exceed max_wait_s "
            f"{target.max_wait_s:g}"
        )
    app = target.writer() or target.need_reader()
    clock = target.early.pop("AUTH-008", None)
    early = clock is not None and clock.app == app
    outcome = _expire_and_refresh(target, clock if early else start_expiry_clock(target, app), ttl)
    if early and not outcome.served:
        # The pairs were issued when the run started, and the application has authorized anew
        # many times since: a target that keeps one live refresh token per application has
        # rightly dropped them. Judged again on pairs the check issues and waits for itself.
        outcome = _expire_and_refresh(target, start_expiry_clock(target, app), ttl)
    if not outcome.served:
        fail(
            "after the access token expired, no refresh path returned a new pair; "
            + "; ".join(outcome.problems),
            *outcome.probe.proof[:4],
        )
    expect(
        not outcome.problems,
        "; ".join(outcome.problems),
        *outcome.probe.proof[:4],
        *outcome.proof,
    )


@dataclass
class _Expired:
    """What AUTH-008 saw: the expired token's probe, the paths that refreshed, what went wrong."""

    probe: Probe
    served: list[str]
    problems: list[str]
    proof: list[Reply]


def _expire_and_refresh(target: Target, clock: ExpiryClock, ttl: float) -> _Expired:
    """Wait out the clock's access token, probe it everywhere, refresh on each path."""
    precondition(
        clock.fresh.ok, f"a fresh access token was refused: {clock.fresh.status}", clock.fresh
    )
    # exp has a one-second granularity (RFC 7519 NumericDate): minted after the request left,
    # the token has expired ttl + 1 s after its answer came; a little slack on top. A clock
    # started with the run has aged while the other checks ran: that is not waited again.
    left = ttl + EXP_GRANULARITY_S + EXPIRY_SLACK_S - (time.monotonic() - clock.started)
    if left > 0:
        time.sleep(left)
    # The first access token worked while fresh (a target may remember a token it verified),
    # the last one was never sent: each is refused on expiry, both ways a target may take.
    # Refused with 401 in the reference profile (RC-4); any 4xx in the seed one.
    probe = Probe(EXPIRED if target.reference else None)
    worked = "an expired access token that worked fresh"
    _protected_probe(target, f"Bearer {clock.pairs[0].access}", worked, probe)
    if len(clock.pairs) > 1:
        unused = _reads_ok(target, clock.pairs[-1].access)
        probe.judge(f"GET {EVENTS} with an expired access token never sent before", unused)
    outcome = _Expired(probe, [], probe.problems, [])
    for template, pair in zip(REFRESH_PATHS, clock.pairs, strict=True):
        reply = target.refresh(_refresh_token(pair, clock.app), template)
        if not (reply.ok and isinstance(reply.get("access"), str)):
            continue  # a path the target does not serve (AUTH-009 judges the paths)
        outcome.served.append(template)
        after = _reads_ok(target, reply.get("access"))
        if not after.ok:
            outcome.problems.append(
                f"the access token refreshed on GET {template} was refused: {after.status}"
            )
            outcome.proof.extend((reply, after))
    return outcome


@check(
    "AUTH-009",
    "MUST",
    Section.ENDPOINT_REFRESH,
    "refresh without Authorization returns a working pair (at least one path; every path "
    "that answers a pair)",
    "Method and path: GET {base_url}/auth/agents/refresh/{refresh_token}. [...] its examples "
    "call GET {base_url}/auth/refresh/{refresh_token}. [...] Headers: Accept. No "
    "Authorization header. Response: the token pair.",
)
def refresh_without_authorization_returns_a_working_pair(target: Target) -> None:
    """Either path may be the one served; but a path that answers 2xx answers "the token pair",
    so a broken pair on one path is not excused by a working one on the other. Whether the
    refreshed pair's own access token still works is noted, never judged (``_old_access_note``)."""
    app = target.need_reader()
    working, notes, proof = [], [], []
    broken: list[str] = []
    old_access: str | None = None
    for template in REFRESH_PATHS:
        pair = target.own_pair(app)
        reply = target.refresh(_refresh_token(pair, app), template)
        proof.append(reply)
        if not reply.ok:
            notes.append(f"{template}: {reply.status}")
            continue
        problem = _refreshed_pair_problem(target, reply, proof)
        if problem:
            broken.append(f"GET {template} answered {reply.status} but {problem}")
            continue
        working.append(template)
        old_access = old_access or pair.access
    expect(
        working and not broken,
        "; ".join(broken) or "no refresh path returned a working token pair: " + "; ".join(notes),
        *proof,
        expected="a new token pair (JWT access that the events list takes) on either path, and "
        "on every path that answers 2xx",
        actual="; ".join(broken + notes),
    )
    target.note("refresh paths serving a pair: " + ", ".join(working))
    if old_access is not None:
        target.note(_old_access_note(target, old_access))


def _old_access_note(target: Target, access: str) -> str:
    """Whether the access token of a pair whose refresh token was used still reads. The
    document says a refresh "obtains a new pair" and no more: keeping the old access token
    until it expires and revoking it at once are both conformant, so this is a finding to
    show, and the suite never uses a refreshed pair's access token again (``Target.own_pair``)."""
    reply = _reads_ok(target, access)
    if reply.ok:
        return "the access token of a refreshed pair: still accepted (until it expires)"
    if reply.status == 401:
        return "the access token of a refreshed pair: revoked (401 once its refresh token was used)"
    return f"the access token of a refreshed pair: the events list answered {reply.status}"


def _refreshed_pair_problem(target: Target, reply: Reply, proof: list[Reply]) -> str | None:
    """What is wrong with the pair a refresh answered 2xx with, or None when it works."""
    body = reply.body if isinstance(reply.body, dict) else {}
    missing = [k for k in ("access", "refresh", "expires") if k not in body]
    if missing:
        return f"the pair lacks {', '.join(missing)}"
    if not is_jwt(body["access"]) or _claims_problem(body["access"]):
        return (
            "the new access is not a working JWT "
            f"({_claims_problem(body['access']) or repr(body['access'])[:40]})"
        )
    if not isinstance(body["refresh"], str) or not body["refresh"]:
        return f"the new refresh is {body['refresh']!r}"
    listing = _reads_ok(target, body["access"])
    proof.append(listing)
    if not listing.ok:
        return f"the refreshed access token was refused by the events list ({listing.status})"
    return None


@check(
    "AUTH-010",
    "MUST",
    Section.AUTHENTICATION_1,
    "a refresh token is not accepted as an access token",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>.",
)
def a_refresh_token_is_not_an_access_token(target: Target) -> None:
    app = target.writer() or target.need_reader()
    pair = target.pair(app, fresh=True)
    _protected_probe(target, f"Bearer {pair.refresh}", "a refresh token").verdict(
        shown=6, actual="none"
    )


@check(
    "AUTH-011",
    "SHOULD",
    Section.ENDPOINT_REFRESH,
    "both refresh paths are served (RC-9)",
    "Which shape is authoritative is unresolved in the reference; an implementation may "
    "serve both.",
    "reference",
)
def both_refresh_paths_are_served(target: Target) -> None:
    app = target.need_reader()
    for template in REFRESH_PATHS:
        reply = target.refresh(fresh_refresh_token(target, app), template)
        expect(
            reply.ok and isinstance(reply.get("access"), str),
            f"GET {template} answered {reply.status} without a token pair",
            reply,
        )


@check(
    "AUTH-012",
    "SHOULD",
    Section.ENDPOINT_REFRESH,
    "a used refresh token stops working, at once and for the rest of the run: rotation (RC-10)",
    "After that the client obtains a new pair through the refresh endpoint with its refresh token.",
    "reference",
)
def a_used_refresh_token_stops_working(target: Target) -> None:
    """Judged at once and again at the end of the run on a token spent when it started: a
    target that forgets its spent tokens (a clean-up of expired ones that drops them all) lets
    one work again a while later."""
    token = fresh_refresh_token(target, target.need_reader())
    first = _refresh_on_either_path(target, token)
    precondition(first.ok, f"refresh answered {first.status} (AUTH-009)", first)
    again = target.refresh(token, REFRESH_PATHS[1])
    expect(
        again.rejected,
        f"the refresh token was accepted a second time ({again.status}); RC-10 rotates it",
        first,
        again,
    )
    spent = target.early.pop("AUTH-012", None)
    if isinstance(spent, SpentRefresh):
        # A run of a few checks (``--only``) comes here at once: give the target's
        # housekeeping a moment to run between the spending and the reuse.
        time.sleep(max(0.0, SPENT_MIN_AGE_S - (time.monotonic() - spent.at)))
        later = target.refresh(spent.token, REFRESH_PATHS[1])
        age = time.monotonic() - spent.at
        expect(
            later.rejected,
            f"a refresh token spent {age:.0f} s before (when the run started) was accepted "
            f"again ({later.status}); RC-10 rotates it for good",
            spent.first,
            later,
        )


#: AUTH-012: how old the token spent when the run started is, at least, when it is tried again
#: (a full run is far past it; the stub forgets expired spent tokens once a second).
SPENT_MIN_AGE_S = 2.0


@dataclass
class SpentRefresh:
    """AUTH-012's refresh token, spent when the run started."""

    token: str
    first: Reply
    at: float


def _refresh_on_either_path(target: Target, token: str) -> Reply:
    first = target.refresh(token, REFRESH_PATHS[1])
    return first if first.ok else target.refresh(token, REFRESH_PATHS[0])


@set_up_early("AUTH-012")
def spend_a_refresh_token(target: Target) -> None:
    """Spend a refresh token when the run starts, for AUTH-012 to try again at its end."""
    token = fresh_refresh_token(target, target.need_reader())
    first = _refresh_on_either_path(target, token)
    if first.ok:
        target.early["AUTH-012"] = SpentRefresh(token, first, time.monotonic())


@check(
    "AUTH-013",
    "SHOULD",
    Section.AUTHENTICATION_4,
    "expires is an integer, the Unix time of the access token's expiry (RC-8)",
    "Format and unit of expires: not shown.",
    "reference",
)
def expires_is_the_unix_time_of_expiry(target: Target) -> None:
    config = target.need_config()
    app = target.need_reader()
    reply = target.authorize(app)
    expires = reply.get("expires")
    expect(
        isinstance(expires, int) and not isinstance(expires, bool),
        f"expires is {expires!r}, RC-8 chooses an integer (Unix seconds)",
        reply,
    )
    expected = time.time() + float(config.access_token_ttl_s)
    expect(
        abs(expires - expected) < 120,
        f"expires {expires} is not now + access_token_ttl_s ({expected:.0f})",
        reply,
    )


def _a_reader_of(target: Target, merchant: str, fallback: Application) -> Application | None:
    """An application of ``merchant`` that may read: read-write or read, or (reference profile,
    RC-12) ``fallback`` itself; None when the document leaves its reading open."""
    reader = target.app("read-write", merchant=merchant) or target.app("read", merchant=merchant)
    if reader is None and target.reference:
        return fallback
    return reader


@check(
    "AUTH-014",
    "MUST",
    Section.ENDPOINT_REFRESH,
    "a refreshed pair acts for the same application's merchant: it finds that merchant's "
    "transaction, and another merchant's refreshed pair does not (each refresh path)",
    "After that the client obtains a new pair through the refresh endpoint with its refresh "
    "token, without using the client_secret again. [...] Response: the token pair.",
)
def a_refreshed_pair_is_the_same_merchants(target: Target) -> None:
    """A refresh renews the application's own pair: a pair for another application (another
    merchant's) is a session taken over. Judged where the configuration can see it: a reader of
    the transaction's merchant finds it with its refreshed token, and an application of another
    merchant, refreshed, neither finds nor lists it."""
    owner = target.need_writer("CASHIN")
    _, created = target.created("CASHIN", owner)
    ref = created["ref"]
    reader = _a_reader_of(target, owner.merchant, owner)
    other = next((a for a in target.apps() if a.merchant != owner.merchant), None)
    if reader is None and other is None:
        not_applicable(
            f"no application that may read merchant {owner.merchant}'s transactions and none "
            "of a second merchant"
        )
    findings, judged = Findings(), False
    if reader is not None:
        before = target.find(ref, reader)
        precondition(before.ok, f"find answered {before.status} (FIND-001)", before)
        for template, reply in refreshed_pairs(target, reader):
            if not _reads_ok(target, reply.get("access")).ok:
                continue  # a pair that works nowhere is AUTH-009's finding, not a merchant's
            judged = True
            found = target.find(ref, reader, token=reply.get("access"))
            if not found.ok:
                findings.add(
                    f"the {reader.privilege} application's token refreshed on GET {template} "
                    f"did not find its merchant's transaction ({found.status})",
                    reply,
                    found,
                )
    if other is not None:
        seen, replies = _sees(target, other, ref, target.token(other))
        precondition(
            not seen,
            f"merchant {other.merchant}'s authorized token already {seen} merchant "
            f"{owner.merchant}'s transaction (ISO-001, ISO-002)",
            *replies,
        )
        for template, reply in refreshed_pairs(target, other):
            judged = True
            seen, replies = _sees(target, other, ref, reply.get("access"))
            if seen:
                findings.add(
                    f"merchant {other.merchant}'s token refreshed on GET {template} {seen} "
                    f"merchant {owner.merchant}'s transaction",
                    reply,
                    *replies,
                )
    precondition(judged, "no refresh path returned a working token pair (AUTH-009)")
    findings.verdict("a refreshed pair that acts for its own application's merchant only")


def _sees(target: Target, app: Application, ref: str, token: str) -> tuple[str, list[Reply]]:
    """Whether ``token`` (of ``app``) reaches transaction ``ref``: "found" (find answered it),
    "listed" (the list by ``ref`` shows it) or "" (neither); and the two replies."""
    found = target.find(ref, app, token=token)
    listed = target.client.get(EVENTS, token=token, params={"ref": ref})
    records = listed.get("transactions") if listed.ok else None
    items = records if isinstance(records, list) else []
    refs = [data_of(e).get("ref") for e in items if isinstance(e, dict)]
    return ("found" if found.ok else "listed" if ref in refs else ""), [found, listed]


def _refresh_candidates(pair: TokenPair) -> dict[str, str]:
    """What the refresh endpoint must refuse, by name: the access token, forgeries of the
    refresh token (or, when it is opaque, one character changed), and garbage."""
    refresh = str(pair.refresh or "")
    candidates = {"an access token": pair.access}
    if parts(refresh) is not None:
        for name, forged in forgeries(refresh).items():
            candidates[f"a refresh token with {name}"] = forged
    elif len(refresh) > 2:
        index = len(refresh) // 2
        flipped = "A" if refresh[index] != "A" else "B"
        candidates["a refresh token with one character changed"] = (
            refresh[:index] + flipped + refresh[index + 1 :]
        )
    candidates["garbage"] = "not-a-token"
    candidates["a three-segment non-JWT"] = "a.b.c"
    return candidates


@check(
    "AUTH-015",
    "MUST",
    Section.ENDPOINT_REFRESH,
    "refresh refuses an access token, a tampered or unsigned refresh token and garbage "
    "(each refresh path)",
    "After that the client obtains a new pair through the refresh endpoint with its refresh "
    "token, without using the client_secret again.",
)
def refresh_refuses_what_is_not_a_refresh_token(target: Target) -> None:
    """Only the application's own refresh token renews its pair: a refresh that takes an access
    token makes a 15-minute token last for ever, and one that takes a forgery hands a pair to
    whoever writes one. Refused means no token pair came back (any status but a 2xx with
    ``access``); on a path the target does not serve, everything is refused."""
    app = target.need_reader()
    pair = target.own_pair(app)  # a lax target may take a forgery for this pair's refresh token
    found = Findings()
    for template in REFRESH_PATHS:
        for label, token in _refresh_candidates(pair).items():
            reply = target.refresh(token, template)
            if reply.ok and reply.get("access"):
                found.add(f"GET {template} with {label} answered a token pair", reply)
    found.verdict("no token pair for anything but a refresh token the target issued", shown=6)


@check(
    "AUTH-016",
    "SHOULD",
    Section.AUTHENTICATION_1,
    "the Bearer scheme is matched case-insensitively (bearer, BEARER) on every protected operation",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>. [RFC 9110 §11.1: the auth-scheme is a case-insensitive token; RFC 6750 "
    "§2.1 uses it for Bearer.]",
)
def the_bearer_scheme_is_case_insensitive(target: Target) -> None:
    """A client that writes ``bearer`` follows HTTP; refusing it is an interoperability bug,
    not a document rule (a SHOULD)."""
    _every_operation_accepts(target, ("bearer {}", "BEARER {}")).verdict(
        "'bearer <token>' and 'BEARER <token>' accepted like 'Bearer <token>'", shown=6
    )


@check(
    "AUTH-017",
    "SHOULD",
    Section.AUTHENTICATION_1,
    "a bare access token (no scheme) is accepted on every protected operation (RC-33)",
    "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
    "<ACCESS_TOKEN>. [The live service accepts a bare token, which its JavaScript SDK sends.]",
    "reference",
)
def a_bare_token_is_accepted(target: Target) -> None:
    """RC-33 follows the live service, so that paypack-js works against the stub."""
    _every_operation_accepts(target, ("{}",)).verdict(
        "'Authorization: <access token>' accepted like 'Bearer <access token>' (RC-33)", shown=6
    )


def _every_operation_accepts(target: Target, spellings: tuple[str, ...]) -> Findings:
    """Send each operation the configuration may perform once with each spelling of the
    Authorization value (``{}`` stands for the access token): the creations with a writer of
    their kind, find and the list with an application that may read (read-write or read; any,
    by RC-12, in the reference profile). Returns what was refused, with the proof."""
    writers = [(kind, target.writer(kind)) for kind in ("CASHIN", "CASHOUT")]
    reader = target.app("read-write") or target.app("read")
    if reader is None and target.reference:
        reader = target.reader()
    if reader is None and not any(app for _, app in writers):
        not_applicable("no application configured")
    found = Findings()

    def accepted(reply: Reply, what: str, label: str) -> None:
        if not reply.ok:
            found.add(f"{what} with {label} answered {reply.status}", reply)

    reads: list[tuple[str, Application]] = []
    if reader is not None:
        maker = target.writer("CASHIN")
        if maker is not None and maker.merchant == reader.merchant:
            ref: str | None = target.created("CASHIN", maker)[1]["ref"]
        else:
            ref = _a_listed_ref(target, reader)
        reads = [(EVENTS, reader)] + ([(find_path(ref), reader)] if ref else [])
    for spelling in spellings:
        label = repr(spelling.format("<access token>"))
        for kind, app in writers:
            if app is not None:
                reply = target.client.post(
                    kind_path(kind),
                    json={"amount": target.amount(), "number": target.number()},
                    headers={
                        "Authorization": spelling.format(target.token(app)),
                        "Idempotency-Key": target.fresh_key(),
                    },
                )
                accepted(reply, f"POST {kind_path(kind)}", label)
        for path, app in reads:
            reply = target.client.get(
                path, headers={"Authorization": spelling.format(target.token(app))}
            )
            accepted(reply, f"GET {path}", label)
    return found


#: RC-38 as the stub documents it (docs/stub.md, ``authorize_limits``, the defaults): at most
#: 20 authorize attempts per client_id that need a secret check, 2 more a second; a secret is
#: hashed (and counted) up to this length, a longer one is refused before anything else.
RC38_PER_CLIENT_BURST = 20
RC38_MAX_SECRET_CHARS = 1024
#: A refusal's ``Retry-After`` (whole seconds): an attempt comes back within 0.5 s at 2 a second.
RC38_MAX_RETRY_AFTER_S = 1
#: How many authorizes each burst sends in a row: past the allowance, so that a count that
#: should not be kept (a verified pair's, an over-long secret's) shows as a 429.
RC38_VERIFIED_BURST = 40
RC38_LONG_SECRET_BURST = 30
#: The same once the application is limited: a count kept shows at once, however slowly the
#: target checks secrets.
RC38_WHILE_LIMITED = 10
#: The wrong-secret flood: at most this many in a row, until the first 429.
RC38_FLOOD = 2 * RC38_PER_CLIENT_BURST
#: The wrong secrets hold a lone surrogate: valid JSON (``\\ud800``), no UTF-8 text, so no
#: application's secret; the stub counts such an attempt like any other and refuses it without
#: the 0.1 s hash, so an allowance is spent before it refills, however busy the machine, and
#: the check costs the run no hashing.
RC38_WRONG_SECRET = "w" * (RC38_MAX_SECRET_CHARS - 1) + "\ud800"
RC38_LONG_SECRET = "x" * (RC38_MAX_SECRET_CHARS + 1)


@check(
    "AUTH-018",
    "SHOULD",
    Section.ENDPOINT_AUTHORIZE,
    "authorize attempts are limited (RC-38): a verified pair never; a secret over 1024 "
    "characters is refused unhashed and never counted; a flood of wrong secrets gets 429 with "
    "Retry-After",
    "Rate limits, amount bounds and maximum page size: not shown. [The stub limits the "
    "authorize attempts that need a secret check, per client_id and per peer.]",
    "reference",
)
def authorize_attempts_are_limited(target: Target) -> None:
    """The one check about a rate limit: its authorizes bypass the run's throttle, so it sees
    every 429. The correct credentials and an over-long secret are sent in bursts, then wrong
    secrets until the application is limited, then the first two again: neither may be limited
    while the client_id is. What it leaves behind is harmless to the checks after it: one of the
    application's attempts comes back within 0.5 s (a later check that sends it a wrong secret
    waits out one 429 at most), and a third of the peer's allowance (60, 10 more a second) is
    spent, back within two seconds. Each part stops at its first wrong answer."""
    app = target.need_reader()
    verified = target.authorize(app)
    precondition(
        verified.ok and verified.get("access"),
        f"authorize answered {verified.status} to the correct credentials (AUTH-001)",
        verified,
    )
    client = target.client.sibling(throttled=False)
    found = Findings()
    try:
        burst = "in a row"
        _verified_pair_is_never_limited(client, app, RC38_VERIFIED_BURST, burst, found)
        _long_secret_is_not_counted(client, app.client_id, RC38_LONG_SECRET_BURST, burst, found)
        _wrong_secret_flood_is_limited(client, app.client_id, found)
        spent = "once wrong secrets had it limited"
        _verified_pair_is_never_limited(client, app, RC38_WHILE_LIMITED, spent, found)
        _long_secret_is_not_counted(client, app.client_id, RC38_WHILE_LIMITED, spent, found)
    finally:
        client.close()
    found.verdict(
        f"correct credentials never limited; a client_secret of "
        f"{RC38_MAX_SECRET_CHARS + 1} characters answered 401, never counted nor limited; "
        f"wrong secrets in a row limited with 429 and Retry-After of at most "
        f"{RC38_MAX_RETRY_AFTER_S} s (RC-38)",
        shown=6,
    )


def _authorize_body(client_id: str, secret: str) -> dict[str, str]:
    return {"client_id": client_id, "client_secret": secret}


def _first_unexpected(
    client: RecordingClient, body: dict[str, str], count: int, expected: Callable[[Reply], bool]
) -> tuple[int, Reply] | None:
    """Send ``body`` to authorize ``count`` times in a row; the first answer that is not
    ``expected``, with how many had been sent, or None."""
    for sent in range(1, count + 1):
        reply = client.post(AUTHORIZE, json=body)
        if not expected(reply):
            return sent, reply
    return None


def _verified_pair_is_never_limited(
    client: RecordingClient, app: Application, count: int, when: str, found: Findings
) -> None:
    """Correct credentials, already verified, are never counted nor limited: each gets a pair
    (a stub that counted them would lock an application out with its own secret)."""
    body = _authorize_body(app.client_id, app.client_secret)
    unexpected = _first_unexpected(client, body, count, lambda r: bool(r.ok and r.get("access")))
    if unexpected is not None:
        sent, reply = unexpected
        found.add(
            f"the correct credentials, authorized {sent} times {when}, answered "
            f"{reply.status} the last time: a verified pair is never limited",
            reply,
        )


def _long_secret_is_not_counted(
    client: RecordingClient, client_id: str, count: int, when: str, found: Findings
) -> None:
    """A secret over the hashed length is refused before the limit and the hash: it stays 401
    (never a 429, never a 503 of the queue of secret checks)."""
    body = _authorize_body(client_id, RC38_LONG_SECRET)
    unexpected = _first_unexpected(client, body, count, lambda r: r.status == 401)
    if unexpected is not None:
        sent, reply = unexpected
        found.add(
            f"a client_secret of {RC38_MAX_SECRET_CHARS + 1} characters, sent {sent} times "
            f"{when}, answered {reply.status} the last time, expected 401 every time: it "
            "is refused unhashed and not counted",
            reply,
        )


def _wrong_secret_flood_is_limited(
    client: RecordingClient, client_id: str, found: Findings
) -> None:
    """Wrong secrets of exactly the hashed length, one after the other: 401 up to what is left
    of the allowance, then 429 with a short ``Retry-After``."""
    wrong = _authorize_body(client_id, RC38_WRONG_SECRET)
    reply: Reply | None = None
    for sent in range(1, RC38_FLOOD + 1):
        reply = client.post(AUTHORIZE, json=wrong)
        if reply.status == 429:
            problem = _retry_after_problem(reply)
            if problem:
                found.add(f"the 429 of the flood {problem}", reply)
            return
        if reply.status not in (401, 503):
            found.add(
                f"a wrong client_secret, sent {sent} times in a row, answered {reply.status} "
                "the last time, expected 401 (503 when the queue of secret checks is full), "
                "then 429",
                reply,
            )
            return
    found.add(
        f"{RC38_FLOOD} wrong secrets in a row for one client_id were never limited; RC-38 "
        f"allows {RC38_PER_CLIENT_BURST} and then answers 429",
        *([reply] if reply is not None else []),
    )


def _retry_after_problem(reply: Reply) -> str | None:
    """What is wrong with a 429's ``Retry-After``, or None: RC-38 sends whole seconds, at most
    the time the default allowance takes to give one attempt back."""
    value = reply.headers.get("Retry-After")
    if value is None:
        return "has no Retry-After"
    seconds = _retry_after_seconds(reply)
    if seconds is None or not 1 <= seconds <= RC38_MAX_RETRY_AFTER_S:
        return (
            f"has Retry-After {value!r}, expected whole seconds from 1 to {RC38_MAX_RETRY_AFTER_S}"
        )
    return None


#: AUTH-019: past a 429's ``Retry-After``, before the attempt is sent again (the 429's own
#: transit and timer jitter; a limit refilled on time has the attempt back by then).
RC38_RETRY_MARGIN_S = 0.25


@check(
    "AUTH-019",
    "SHOULD",
    Section.ENDPOINT_AUTHORIZE,
    "a 429 of authorize says when to retry (RC-38): once its Retry-After has passed, the attempt "
    "is not refused 429 again; wrong secrets in a row never get a 5xx but 503 busy",
    "Rate limits, amount bounds and maximum page size: not shown. [The stub limits the "
    "authorize attempts that need a secret check, per client_id and per peer.]",
    "reference",
)
def authorize_retry_after_says_when_to_retry(target: Target) -> None:
    """Whatever the target's limits (AUTH-018 judges the stub's default numbers): wrong secrets
    for a client_id of the check's own, one after the other, until the first 429; then, its
    ``Retry-After`` waited out, the same attempt once more, which must not be refused 429. A
    client_id nobody has keeps the flood off every configured application (RC-38 limits unknown
    ones too), and its requests bypass the run's throttle to see the 429s. What is left behind:
    the flood's share of the peer's allowance, back within the wait."""
    body = _authorize_body(f"conform-{uuid.uuid4().hex}", RC38_WRONG_SECRET)
    client = target.client.sibling(throttled=False)
    try:
        limited = _flood_until_limited(client, body)
        seconds = _retry_after_seconds(limited)
        if seconds is None:
            raise CouldNotCheck(
                f"the 429 has Retry-After {limited.headers.get('Retry-After')!r}, not whole "
                "seconds (AUTH-018 judges its form)",
                exchanges_of([limited]),
            )
        if seconds > target.max_wait_s:
            not_applicable(f"Retry-After {seconds} s exceeds max_wait_s {target.max_wait_s:g}")
        time.sleep(seconds + RC38_RETRY_MARGIN_S)
        again = client.post(AUTHORIZE, json=body)
    finally:
        client.close()
    expect(
        again.status != 429 and not _server_error(again),
        f"after the 429's Retry-After: {seconds} had passed (and {RC38_RETRY_MARGIN_S} s more), "
        f"the same attempt answered {again.status}: Retry-After did not say when to retry",
        limited,
        again,
        expected="401 (a wrong secret), the attempt no longer limited",
        actual=str(again.status),
    )


def _server_error(reply: Reply) -> bool:
    """A 5xx other than RC-38's ``503 busy`` (a full queue of secret checks)."""
    return reply.status >= 500 and reply.status != 503


def _flood_until_limited(client: RecordingClient, body: dict[str, str]) -> Reply:
    """Send ``body`` to authorize until the first 429 (at most ``RC38_FLOOD`` times); the 429.
    Any 5xx but 503 on the way fails (RC-4: never a 500 on client input)."""
    found = _first_unexpected(
        client, body, RC38_FLOOD, lambda r: r.status != 429 and not _server_error(r)
    )
    if found is None:
        not_applicable(
            f"{RC38_FLOOD} wrong secrets in a row for an unknown client_id were never limited: "
            "no 429 to retry after (AUTH-018 judges whether authorize is limited)"
        )
    sent, reply = found
    expect(
        not _server_error(reply),
        f"a wrong client_secret, sent {sent} times in a row, answered {reply.status} the "
        "last time, expected 401 (503 when the queue of secret checks is full), then 429",
        reply,
    )
    return reply


def _retry_after_seconds(reply: Reply) -> int | None:
    """The ``Retry-After`` of ``reply`` in whole seconds, or None when it is not that."""
    text = (reply.headers.get("Retry-After") or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None


#: AUTH-020: how long past a spent refresh token's own expiry its pair's revoked access token is
#: watched, when that access token outlives the run's wait: a target that forgets its spent
#: tokens once expired does so at its next clean-up (the stub's runs once a second).
REVOKED_PAST_REFRESH_EXPIRY_S = 3.0
#: AUTH-020: the pause between two looks at the revoked token; in the last
#: ``REVOKED_LATE_WINDOW_S`` before the watch ends, the shorter one: a record dropped a moment
#: too early leaves the token working only for that moment.
REVOKED_POLL_S = 0.25
REVOKED_LATE_POLL_S = 0.02
REVOKED_LATE_WINDOW_S = 1.2


@check(
    "AUTH-020",
    "SHOULD",
    Section.ENDPOINT_REFRESH,
    "an access token revoked when its pair's refresh token was used stays refused until it "
    "expires (RC-10)",
    "After that the client obtains a new pair through the refresh endpoint with its refresh token.",
    "reference",
)
def a_revoked_access_token_stays_refused(target: Target) -> None:
    """RC-10 lets a target keep the old access token until it expires or revoke it at once
    (AUTH-009 notes which); one that revokes it must not let it work again later, e.g. once it
    forgets the spent refresh token at that token's own expiry. Watched while it lives, when the
    run may wait that long, or else past the refresh token's expiry when that comes first and
    soon enough; otherwise not applicable, decided before anything is spent (a target with the
    ordinary lifetimes never has an old access token sent again)."""
    app = target.need_reader()
    pair = target.own_pair(app)
    refresh = _refresh_token(pair, app)
    until = _revocation_watch_end(target, pair)
    spent = _refresh_on_either_path(target, refresh)
    precondition(spent.ok, f"refresh answered {spent.status} (AUTH-009)", spent)
    at_once = _reads_ok(target, pair.access)
    if at_once.ok:
        not_applicable(
            "the access token of a refreshed pair still works (kept until it expires, as RC-10 "
            "allows): nothing revoked to watch"
        )
    precondition(
        at_once.status == 401,
        f"the access token of a refreshed pair answered {at_once.status}, neither 2xx nor 401",
        at_once,
    )
    spent_at = time.monotonic()
    worked = _first_accepted(target, pair.access, until)
    if worked is not None:
        later = time.monotonic() - spent_at
        left = _seconds_left(pair.access)
        before = f", {left:.1f} s before it expires" if left is not None else ""
        fail(
            f"the access token revoked by its pair's refresh (401 at once) was accepted "
            f"{later:.1f} s later ({worked.status}){before}: a revoked token works again",
            spent,
            at_once,
            worked,
        )


def _revocation_watch_end(target: Target, pair: TokenPair) -> float:
    """Until when (``time.monotonic``) AUTH-020 watches the just authorized ``pair``'s access
    token once revoked: its expiry, or shortly past the refresh token's when that comes first;
    the check is not applicable when neither is within ``max_wait_s``."""
    access_left = _seconds_left(pair.access)
    if access_left is None:
        access_left = pair.expires_at - pair.obtained_at
    refresh_left = _seconds_left(pair.refresh) if pair.refresh else None
    left = access_left
    if left > target.max_wait_s and refresh_left is not None:
        left = min(refresh_left + REVOKED_PAST_REFRESH_EXPIRY_S, access_left)
    if left > target.max_wait_s:
        not_applicable(
            f"the access token lives {access_left:.0f} s and the refresh token expires later or "
            f"says not when (no JWT exp): both past max_wait_s {target.max_wait_s:g}"
        )
    return time.monotonic() + left


def _seconds_left(token: str) -> float | None:
    """How long the JWT ``token`` lives from now by its ``exp``, or None when it says not."""
    decoded = parts(token)
    exp = decoded[1].get("exp") if decoded is not None else None
    if isinstance(exp, (int, float)) and not isinstance(exp, bool):
        return float(exp) - time.time()
    return None


def _first_accepted(target: Target, access: str, until: float) -> Reply | None:
    """Read with ``access`` until ``until`` (``time.monotonic``); the first 2xx answer, or None."""
    while True:
        reply = _reads_ok(target, access)
        if reply.ok:
            return reply
        left = until - time.monotonic()
        if left <= 0:
            return None
        time.sleep(
            min(left, REVOKED_LATE_POLL_S if left < REVOKED_LATE_WINDOW_S else REVOKED_POLL_S)
        )
