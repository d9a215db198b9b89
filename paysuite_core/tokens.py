"""Authorize and refresh: the only module of paysuite that obtains or renews a token
(``tests/test_architecture.py`` keeps it the only one).

Every part of paysuite needs tokens and they differ only in how a request travels, so each hands
in a ``Send`` (a context manager per exchange) and this module does the rest: the document's
bodies and paths, the token pair, when to renew, the 401-renew rule. Refresh is a GET on either
``/auth/agents/refresh/{token}`` (the document's heading) or ``/auth/refresh/{token}`` (its
examples and the SDKs): the first one a target serves is remembered. ``expires`` is whatever the
target sends (RC-8), else the JWT's ``exp``, else the configured lifetime. After a 401, or
shortly before expiry, a flow refreshes, and authorizes again only when the refresh is refused
(never an authorize storm: ``min_authorize_interval_s``). A flow never uses a pair again once
its refresh token was spent: a refresh answers a new pair, and a target may revoke the old
access token with it (the document does not say; the stub's ``revoke-on-refresh`` variant does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol

from paysuite_core import guarded_json
from paysuite_core.api_types import JsonObject
from paysuite_core.target_config import Application, HttpAction
from paysuite_core.throttle import Throttle, send_honouring

AUTHORIZE_PATH = "/auth/agents/authorize"
#: The document's heading first, then the path of its examples and of the published SDKs.
REFRESH_PATHS = ("/auth/agents/refresh/{token}", "/auth/refresh/{token}")
SDK_REFRESH_PATH = REFRESH_PATHS[1]
JSON_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
#: The document's refresh request carries Accept only.
REFRESH_HEADERS: dict[str, str | None] = {"Accept": "application/json", "Content-Type": None}


def no_api_at(base_url: str) -> str:
    """What a 404 on the authorize path means, worded once for every pre-flight.

    The document fixes the path, so a target that has no such route is not being reached at
    the API's root: the base URL's path is wrong (``/apix``, a missing ``/api``), and pointing
    at the credentials would send the reader to the wrong line of the configuration.
    """
    return f"no API at {base_url} (404 on {AUTHORIZE_PATH}): check base_url's path"


class AuthError(RuntimeError):
    """The target did not give a token; the message says why, ``answer`` is what came back."""

    def __init__(self, message: str, answer: object = None) -> None:
        super().__init__(message)
        self.answer = answer


class Answer(Protocol):
    """What a transport hands back: a status and a body that may be JSON.

    ``problem`` (when present and set) means neither can be trusted. ``success()`` and
    ``failure(why)``, when the transport has them, receive this module's verdict (Locust counts
    an authorize that returned no token pair as a failure).
    """

    status: int

    def json(self) -> Any: ...


@dataclass(frozen=True)
class Request:
    """One exchange this module wants made, relative to the target's base URL."""

    method: str
    path: str
    name: str  # "authorize" or "refresh": Locust's request name, a transport's label
    headers: Mapping[str, str | None]
    json: object = None


#: Makes one exchange; yields None when there was no answer (the transport already said why).
Send = Callable[[Request], AbstractContextManager[Answer | None]]


@dataclass
class TokenPair:
    access: str
    refresh: str | None
    expires: object  # as the target sent it
    obtained_at: float  # clock time
    expires_at: float  # clock time


# --- the requests ----------------------------------------------------------------------------
def authorize_request(
    app: Application, *, secret: str | None = None, at: HttpAction | None = None
) -> Request:
    """The authorize exchange; ``at``: a route of the target's own with authorize's body and
    answer (``short_lived_pair.authorize``), its absolute URL instead of the document's path."""
    body = {
        "client_id": app.client_id,
        "client_secret": app.client_secret if secret is None else secret,
    }
    if at is not None:
        return Request(at.method, at.url_template, "authorize", JSON_HEADERS, body)
    return Request("POST", AUTHORIZE_PATH, "authorize", JSON_HEADERS, body)


def refresh_request(refresh_token: str, template: str = REFRESH_PATHS[0]) -> Request:
    return Request("GET", template.replace("{token}", refresh_token), "refresh", REFRESH_HEADERS)


def authorize(send: Send, app: Application, *, secret: str | None = None) -> Answer | None:
    """One authorize exchange, judged by nobody: for checks that look at the answer itself."""
    with send(authorize_request(app, secret=secret)) as answer:
        return answer


def refresh(send: Send, refresh_token: str, template: str = REFRESH_PATHS[0]) -> Answer | None:
    """One refresh exchange on ``template``, judged by nobody (see ``authorize``)."""
    with send(refresh_request(refresh_token, template)) as answer:
        return answer


# --- reading the answer ----------------------------------------------------------------------
def parse_expires(value: object, access: str, now: float, fallback_ttl_s: float) -> float:
    """Clock time at which the access token expires, from whatever shape ``expires`` has.

    The document says string, the live service sends integer Unix seconds (RC-8); a small number
    is read as a lifetime in seconds. Without a usable value the JWT's ``exp`` claim decides, and
    without that the configured ``access_token_ttl_s``.
    """
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
            except ValueError:
                value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) if value > 1e9 else now + float(value)
    exp = token_exp(access)  # an opaque token is fine: the configured TTL decides
    return exp if exp is not None else now + fallback_ttl_s


def token_claims(token: str | None) -> dict[str, Any] | None:
    """A JWT's claims, read without verifying it (a judge reads them, it does not
    authenticate); None for an opaque or malformed token."""
    if not token:
        return None
    try:
        import jwt

        claims = jwt.decode(token, options={"verify_signature": False, "verify_exp": False})
    except Exception:  # an opaque or malformed token simply has no claims
        return None
    return claims if isinstance(claims, dict) else None


def token_exp(token: str | None) -> float | None:
    """A JWT's ``exp`` (read, not verified); None for an opaque token or one without it."""
    exp = (token_claims(token) or {}).get("exp")
    return float(exp) if isinstance(exp, (int, float)) else None


def pair_problem(answer: Answer | None) -> tuple[JsonObject | None, str]:
    """The token pair in ``answer`` and "", or None and why there is none."""
    if answer is None:
        return None, "no answer"
    problem = getattr(answer, "problem", None)
    if problem:
        return None, str(problem)
    if not 200 <= answer.status < 300:
        return None, f"status {answer.status}"
    try:
        data = answer.json()
    except (ValueError, TypeError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("access"), str):
        return None, "token pair without an access token (body is not a JSON token pair)"
    return data, ""


def _verdict(answer: Answer | None, why: str) -> None:
    if answer is None:
        return
    if why:
        if getattr(answer, "problem", None) is None and hasattr(answer, "failure"):
            answer.failure(why)
    elif hasattr(answer, "success"):
        answer.success()


# --- the flow --------------------------------------------------------------------------------
@dataclass
class TokenFlow:
    """One application's token pair, kept valid: authorize once, then refresh.

    ``trust_expires``: renew by the ``expires`` the target sent (a load test follows the
    target); when false, by ``fallback_ttl_s`` from the configuration (a conformance run must
    not let a wrong ``expires``, a defect of its own check, break every other check).
    ``renew_fraction``: renew once this fraction of the lifetime has passed; by default 10% of
    the lifetime before expiry, between 1 s and 60 s. ``authorize_at``: authorize on that
    route instead of the document's (a declared ``short_lived_pair``).
    """

    send: Send
    app: Application
    fallback_ttl_s: float = 900.0
    trust_expires: bool = True
    renew_fraction: float | None = None
    min_authorize_interval_s: float = 0.0
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    authorize_at: HttpAction | None = None
    pair: TokenPair | None = None
    authorizes: int = 0
    refreshes: int = 0
    _last_authorize: float = field(default=-1e18, repr=False)

    #: Index into REFRESH_PATHS of the path the target serves, learned once per process.
    learned_refresh: ClassVar[int] = 0

    # -- public ----------------------------------------------------------------------------
    def access(self) -> str:
        """A valid access token: authorized on first use, renewed when due."""
        if self.pair is None:
            self.authorize()
        elif self.due():
            self.renew()
        assert self.pair is not None
        return self.pair.access

    def headers(self) -> dict[str, str]:
        """JSON headers with the bearer token, for an authenticated call."""
        return {**JSON_HEADERS, "Authorization": f"Bearer {self.access()}"}

    def due(self) -> bool:
        pair = self.pair
        if pair is None:
            return True
        lifetime = max(pair.expires_at - pair.obtained_at, 0.0)
        if self.renew_fraction is not None:
            return self.clock() - pair.obtained_at >= lifetime * self.renew_fraction
        margin = max(1.0, min(60.0, lifetime * 0.1)) if lifetime > 2 else 0.0
        return self.clock() >= pair.expires_at - margin

    def renew(self) -> None:
        """The 401-renew rule (also used near expiry): refresh, authorize only if refused."""
        if self.pair is not None and self.pair.refresh and self._refresh(self.pair.refresh):
            return
        self.authorize()

    def spent(self, refresh_token: str) -> bool:
        """A refresh made outside the flow (a conformance check judging refresh) used
        ``refresh_token``: when it is the refresh token of the flow's pair, the pair is dropped,
        whatever the refresh answered (its access token may be revoked now), and the next use
        authorizes anew. The new pair is not taken over: it is what the refresh checks judge,
        and a refresh that answers another application's pair must not reach any other check.
        Returns whether the pair was dropped."""
        if self.pair is None or self.pair.refresh != refresh_token:
            return False
        self.pair = None
        return True

    def authorize(self) -> Answer | None:
        """Authorize now (rate-limited by ``min_authorize_interval_s``); raises AuthError."""
        since = self.clock() - self._last_authorize
        if since < self.min_authorize_interval_s:
            if self.pair is not None:
                return None  # never a storm: keep the current token, the next 401 will tell
            self.sleep(self.min_authorize_interval_s - since)
        self._last_authorize = self.clock()
        with self.send(authorize_request(self.app, at=self.authorize_at)) as answer:
            self.authorizes += 1
            data, why = pair_problem(answer)
            _verdict(answer, why)
        if data is None:
            raise AuthError(
                f"no access token for application {self.app.client_id}: authorize failed ({why})",
                answer,
            )
        self._store(data)
        return answer

    # -- internals -------------------------------------------------------------------------
    def _refresh(self, refresh_token: str) -> bool:
        for attempt in range(len(REFRESH_PATHS)):
            index = (TokenFlow.learned_refresh + attempt) % len(REFRESH_PATHS)
            with self.send(refresh_request(refresh_token, REFRESH_PATHS[index])) as answer:
                self.refreshes += 1
                if (
                    answer is not None
                    and answer.status in (404, 405)
                    and not getattr(answer, "problem", None)
                ):
                    _verdict(answer, f"refresh path {REFRESH_PATHS[index]} not served")
                    continue
                data, why = pair_problem(answer)
                _verdict(answer, why)
            if data is None:
                return False
            TokenFlow.learned_refresh = index
            self._store(data)
            return True
        return False

    def _store(self, data: JsonObject) -> None:
        now = self.clock()
        access = str(data["access"])
        refresh_token = data.get("refresh")
        expires_at = (
            parse_expires(data.get("expires"), access, now, self.fallback_ttl_s)
            if self.trust_expires
            else now + self.fallback_ttl_s
        )
        self.pair = TokenPair(
            access=access,
            refresh=refresh_token if isinstance(refresh_token, str) and refresh_token else None,
            expires=data.get("expires"),
            obtained_at=now,
            expires_at=expires_at,
        )


# --- a transport for plain clients -----------------------------------------------------------
@dataclass
class PlainAnswer:
    """An answer from a client that keeps no statistics."""

    status: int
    body: bytes
    location: str | None = None
    problem: str | None = None

    def json(self) -> Any:
        return guarded_json.loads(self.body)


def httpx_send(client: Any, base_url: str, *, throttle: Throttle | None = None) -> Send:
    """A ``Send`` over an ``httpx.Client`` (or any client with httpx's ``request``).

    ``throttle``: a 429 is sent again as the run's throttle allows (``paysuite_core.throttle``);
    one it no longer retries is the answer (the flow then says the authorize failed: 429).
    """
    base = base_url.rstrip("/")

    @contextmanager
    def send(request: Request) -> Iterator[Answer | None]:
        headers = {k: v for k, v in request.headers.items() if v is not None}
        response = send_honouring(
            throttle,
            lambda: client.request(
                request.method, base + request.path, json=request.json, headers=headers
            ),
            lambda answer: int(answer.status_code),
            lambda answer: answer.headers,
            give_up=lambda answer: answer,
        )
        yield PlainAnswer(response.status_code, response.content, response.headers.get("location"))

    return send
