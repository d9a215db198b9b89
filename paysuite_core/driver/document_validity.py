"""Which generated requests the interface document itself makes invalid.

schemathesis generates negative data from the spec, and the spec is stricter than the document:
it carries the reference stub's choices (amount bounds, the phone pattern, filter enums, a
non-empty key, media types). In the seed profile a target may rightly accept what only those
choices forbid, so a "negative case accepted" failure counts only when this module finds a rule
of the document the request breaks. Each rule below quotes the sentence it stands on.
"""

from __future__ import annotations

from collections.abc import Mapping

from paysuite_core.tokens import AUTHORIZE_PATH, REFRESH_PATHS

MAX_KEY_LENGTH = 32
CREATIONS = ("/transactions/cashin", "/transactions/cashout")
AUTHORIZE = AUTHORIZE_PATH
REFRESHES = tuple(path.replace("{token}", "{refresh_token}") for path in REFRESH_PATHS)
FIND = "/transactions/find/{ref}"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _creation_body(body: object) -> str | None:
    # "Body: amount (number, required), number (string, required)."
    if not isinstance(body, Mapping):
        return "the body is not a JSON object with amount and number"
    if "amount" not in body:
        return "amount is missing (required)"
    if "number" not in body:
        return "number is missing (required)"
    if not _is_number(body["amount"]):
        return f"amount {body['amount']!r} is not a number"
    if not isinstance(body["number"], str):
        return f"number {body['number']!r} is not a string"
    return None


def _authorize_body(body: object) -> str | None:
    # "Body: client_id (string, required), client_secret (string, required)."
    if not isinstance(body, Mapping):
        return "the body is not a JSON object with client_id and client_secret"
    for name in ("client_id", "client_secret"):
        if name not in body:
            return f"{name} is missing (required)"
        if not isinstance(body[name], str):
            return f"{name} {body[name]!r} is not a string"
    return None


def _key(container: Mapping[str, object] | None, where: str) -> str | None:
    # "Idempotency-Key: Unique string, maximum length 32."
    for name, value in (container or {}).items():
        if str(name).lower() != "idempotency-key":
            continue
        if isinstance(value, str) and len(value) > MAX_KEY_LENGTH:
            return f"the {where} Idempotency-Key has {len(value)} characters (at most 32)"
    return None


def violation(path: str, body: object, headers: Mapping[str, object] | None,
              query: Mapping[str, object] | None, path_parameters: Mapping[str, object] | None,
              has_body: bool = True) -> str | None:  # fmt: skip
    """The document rule the request breaks, or ``None`` when only reference choices object.

    ``path`` is the operation's path template. Unknown refs and refresh tokens are invalid by
    the document (a ref names a transaction the service generated; a refresh token is one the
    service issued), so any negative value there counts.
    """
    if path in CREATIONS:
        return (
            (_creation_body(body) if has_body else "the body is missing")
            or _key(headers, "header")
            or _key(query, "query")
        )
    if path == AUTHORIZE:
        return _authorize_body(body) if has_body else "the body is missing"
    if path == FIND:
        return f"ref {(path_parameters or {}).get('ref')!r} names no transaction"
    if path in REFRESHES:
        token = (path_parameters or {}).get("refresh_token")
        return f"refresh token {token!r} was never issued"
    return None  # the events list: every filter is optional, any value may match nothing
