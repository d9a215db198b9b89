"""The ``Idempotency-Key``: which key a creation has, and storing a creation under it.

Enforces Errors, rule 1 (a reused key is rejected and nothing is executed twice), Limits (a key
is at most 32 characters), Endpoints 1. Cashin (the key may come as a header or as a query
parameter) and RC-6 (a key is scoped to its merchant). Checked by IDEM-001..IDEM-007.

The uniqueness itself is the store's: the key's row is the first insert of a creation, in the
same SQL transaction as the transaction and its event (``stub_server.store.transactions``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote_plus, unquote_to_bytes

from aiohttp import web

from stub_server.errors import ApiError, ambiguous
from stub_server.rules.fields import is_text
from stub_server.store import KeyReused, NewTransaction, Store

MAX_KEY_LENGTH = 32
#: The merchant column of every idempotency row under ``global-keys`` (variant ``lenient``): one
#: scope for the whole service. Rows written per merchant stay apart from it.
GLOBAL_KEY_SCOPE = "*"

#: Stores a creation and waits for its commit; raises the 409 when its key was used.
Persist = Callable[[NewTransaction], Awaitable[None]]


@dataclass
class KeyRule:
    """Where a key is read from and what a valid one is.

    ``read_query``: the query parameter counts (RC-6); ``max_length``: None accepts any length;
    ``empty_is_absent``: the ``empty-key-absent`` behaviour (variant ``lenient``).
    """

    read_query: bool = True
    max_length: int | None = MAX_KEY_LENGTH
    empty_is_absent: bool = False

    def key_of(self, request: web.Request) -> str:
        """The key that scopes this create: the header's, else the query parameter's (RC-6).

        Every key the client sent is validated, the losing one too: a 40-character query key
        beside a valid header is still a request the document says to reject. Under
        ``empty_is_absent`` an empty key counts as not sent, so a key is generated.
        """
        sources = [("header", request.headers.getall("Idempotency-Key", []))]
        if self.read_query and request.query_string:
            _refuse_undecodable_query_key(request.rel_url.raw_query_string)
            sources.append(("query parameter", request.query.getall("Idempotency-Key", [])))
        keys: list[str] = []
        for where, values in sources:
            if len(values) > 1:  # which one would the client expect us to honour? refuse both
                raise ambiguous(
                    "Idempotency-Key", len(values), where, code="ambiguous_idempotency_key"
                )
            keys += values
        if self.empty_is_absent:
            keys = [key for key in keys if key]
        for key in keys:
            self._check(key)
        return keys[0] if keys else uuid.uuid4().hex

    def _check(self, key: str) -> None:
        if key == "":
            raise invalid_key("must not be empty")
        if not is_text(key):
            raise invalid_key("must be UTF-8 text")
        control = first_control(key)
        if control is not None:
            raise invalid_key(f"must not contain control characters (U+{control:04X})")
        if self.max_length is not None and len(key) > self.max_length:
            raise invalid_key(f"must be at most {self.max_length} characters, got {len(key)}")


def invalid_key(problem: str) -> ApiError:
    return ApiError(400, "invalid_idempotency_key", f"Idempotency-Key: {problem}")


def _refuse_undecodable_query_key(raw_query: str) -> None:
    """A query key whose escapes are not UTF-8 (``ab%FFcd``) is refused like such a header
    key: the parsed query replaces each bad byte with U+FFFD, so ``ab%FFcd`` and ``ab%FEcd``
    would be one key and the second refused as a reuse of a key never sent (RC-42)."""
    for pair in raw_query.split("&"):
        name, _, value = pair.partition("=")
        if unquote_plus(name) != "Idempotency-Key":
            continue
        try:
            unquote_to_bytes(value.replace("+", " ")).decode("utf-8")
        except UnicodeDecodeError:
            raise invalid_key("must be UTF-8 text") from None


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def first_control(text: str) -> int | None:
    """The code point of the first control character (C0, DEL, C1) in ``text``, if any: a key
    with a NUL or a newline in it is a client bug or an injection, never a deliberate key."""
    found = _CONTROL.search(text)
    return None if found is None else ord(found.group())


def key_reused(key: str) -> ApiError:
    """The 409 of a key already used in its scope."""
    return ApiError(409, "idempotency_key_reused", f"Idempotency-Key {key!r} was already used")


def strict_insert(store: Store) -> Persist:
    """The rule: the key's row goes in first and a duplicate creates nothing (409)."""

    async def persist(new: NewTransaction) -> None:
        try:
            committed = store.create_transaction(new, key_mode="strict")
        except KeyReused:
            raise key_reused(new.key) from None
        await committed

    return persist
