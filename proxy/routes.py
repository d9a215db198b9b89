"""Which operation of the document an exchange is, read from its method and URL.

The proxy does not know the target's base path (``/api`` on the live service, anything on
another), so a path matches an operation when it *ends* with the operation's path template of
the spec; the longest template wins. A path that matches none (``/merchants/me``, the stub's
sandbox, a typo) is not an operation of the document: it is forwarded and recorded, not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import parse_qsl, unquote, urlsplit

from paysuite_core.driver.api import CASHIN, CASHOUT, EVENTS
from paysuite_core.driver.document_validity import AUTHORIZE, FIND, REFRESHES
from paysuite_core.exchange import Exchange
from paysuite_core.specfile import load_spec
from paysuite_core.tokens import token_claims

#: The document's operations by spec path template, with the proxy's short name for each.
OPERATION_NAMES: dict[str, str] = {
    CASHIN: "cashin",
    CASHOUT: "cashout",
    FIND: "find",
    EVENTS: "events",
    AUTHORIZE: "authorize",
    **{path: "refresh" for path in REFRESHES},
}
#: "The transaction and event endpoints require it" (Authentication, 3).
PROTECTED = frozenset({"cashin", "cashout", "find", "events"})
CREATIONS = frozenset({"cashin", "cashout"})


@dataclass(frozen=True)
class Route:
    """An exchange placed in the document: its operation, template and parameters."""

    operation: str  # cashin | cashout | find | events | authorize | refresh
    template: str  # the spec's path template, e.g. /transactions/find/{ref}
    method: str  # lower case, as the spec's keys
    path_params: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)  # first value of each name

    @property
    def protected(self) -> bool:
        return self.operation in PROTECTED

    @property
    def creation(self) -> bool:
        return self.operation in CREATIONS

    @property
    def kind(self) -> str:
        return "CASHIN" if self.operation == "cashin" else "CASHOUT"


@cache
def _patterns() -> tuple[tuple[re.Pattern[str], str, frozenset[str]], ...]:
    spec = load_spec()
    found = []
    for template, item in (spec.get("paths") or {}).items():
        if template not in OPERATION_NAMES or not isinstance(item, dict):
            continue
        methods = frozenset(m for m in item if m in ("get", "post", "put", "patch", "delete"))
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        found.append((re.compile(f"(?:^|.*?)({regex})/?$"), template, methods))
    found.sort(key=lambda entry: len(entry[1]), reverse=True)
    return tuple(found)


def route_of(exchange: Exchange) -> Route | None:
    """The document's operation ``exchange`` is, or None (another path, or another method)."""
    parts = urlsplit(exchange.url)
    method = exchange.method.lower()
    for pattern, template, methods in _patterns():
        match = pattern.match(parts.path)
        if match is None or method not in methods:
            continue
        params = {
            name: unquote(value)
            for name, value in match.groupdict().items()
            if isinstance(value, str)
        }
        query: dict[str, str] = {}
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            query.setdefault(name, value)
        return Route(OPERATION_NAMES[template], template, method, params, query)
    return None


def idempotency_key(exchange: Exchange, route: Route) -> str | None:
    """The creation's key: the header, else the query parameter the examples use."""
    header = exchange.request_header("Idempotency-Key")
    if header is not None:
        return header
    for name, value in route.query.items():
        if name.lower() == "idempotency-key":
            return value
    return None


def bearer_token(exchange: Exchange) -> str | None:
    """The credential of the Authorization header (``Bearer X``, or a bare token as paypack-js
    sends it and the live service accepts)."""
    value = exchange.request_header("Authorization")
    if not value:
        return None
    scheme, sep, credential = value.strip().partition(" ")
    if sep and scheme.lower() == "bearer":
        return credential.strip() or None
    return None if sep else value.strip()


PROCESSED = "transaction:processed"
CREATED = "transaction:created"


def ok(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


def answered_at(exchange: Exchange) -> float:
    return exchange.started + exchange.elapsed_ms / 1000


def merchant_of(exchange: Exchange) -> str | None:
    """Whose request this is: the token's merchant claim, else the token itself (one token, one
    merchant), else None (no credential: nobody's key)."""
    token = bearer_token(exchange)
    claims = token_claims(token)
    if claims and isinstance(claims.get("merchant"), str):
        return f"merchant:{claims['merchant']}"
    return f"token:{token}" if token else None


def forwarded_url(target: str, raw_path: str) -> str:
    """Where a request for ``raw_path`` goes: appended to ``target``, except that a target given
    as the API's base URL (``http://host/api``, as a configuration file writes it) is not doubled
    when the client's path already starts with that path (``/api/...``): the client was pointed
    at the proxy's ``/api`` as it would be at the target's."""
    target = target.rstrip("/")
    prefix = urlsplit(target).path
    path = raw_path.split("?", 1)[0]
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        return target[: len(target) - len(prefix)] + raw_path
    return target + raw_path
