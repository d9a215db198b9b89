#!/usr/bin/env python3
"""An independent implementation of the Payments Transactions Service, a fixture for self-tests.

Why it exists: the conformance suite had only ever been run against the project's own stub and
variants sharing its code, so a check that merely encodes one of the stub's choices would never
have been noticed. This server was written from the interface document and what the live
service does (docs/reference-choices.md) alone (nothing under ``stub_server/`` was read or
imported), and wherever the document is silent it takes the live service's choice or another
defensible one rather than the stub's:

* base path ``/api``; refresh served only on ``GET /api/auth/refresh/{refresh_token}`` (the path
  every published SDK calls); refresh tokens are reusable until they expire (no rotation);
* creations answer 201; ``expires`` is an integer (Unix seconds); timestamps carry nanosecond
  fractions (``...T10:00:00.123456789Z``), the find ``timestamp`` a numeric ``+00:00`` offset;
* a confirmed transaction reads ``successful`` (the spelling of the document's event sample);
* the events list is oldest first, 10 per page by default, ``limit``/``offset`` honoured; the
  envelope echoes only the filters that were given;
* idempotency keys are global (not per merchant), reuse answers 409 and executes nothing, an
  empty key counts as absent, a key over 32 characters is a 400;
* ``Authorization: <token>`` without ``Bearer`` is accepted, like the live service does for
  paypack-js;
* error bodies are ``{"status": <int>, "message": <str>}``, what the live Go SDK decodes;
* the customer is simulated by ``POST /sim/customer/{ref}?action=confirm|cancel`` (outside
  ``/api``), an endpoint shape no other implementation in the project uses.

``--defect NAME`` switches on exactly one deliberate bug (see ``DEFECTS``) so that the self-tests
can prove the suite fails the right check, and only that one.

Run: ``python tests/foreign/independent.py --port 0 --config-out FILE [--access-ttl S]
[--defect NAME]``. It prints ``listening on http://127.0.0.1:PORT`` once the target
configuration has been written, and stops promptly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import math
import os
import secrets
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import jwt
import yaml
from aiohttp import web

#: The ``expired-token-grace`` defect's leeway past an access token's exp.
TOKEN_LEEWAY_S = 5
#: How long the time defects' caches keep what they remember (seconds).
KEY_MEMORY_S = 3.0
SETTLED_CACHE_S = 2.0
#: The deliberate gap of the race defects, between what they read and what they write.
RACE_GAP_S = 0.02

#: Every deliberate defect, one line each. Each changes one behaviour and nothing else.
DEFECTS: dict[str, str] = {
    "key-reuse-executes": "a reused idempotency key answers 409 but still creates a transaction",
    "expired-token-accepted": "the access token's exp claim is not checked",
    "wrong-kind-on-cashout": "a cashout is stored and answered with kind CASHIN",
    "client-filter-ignored": "the events list ignores its client filter",
    "processed-twice": "a second customer action changes the status and records another event",
    "find-other-merchant": "find ignores merchant isolation",
    "no-created-event": "creation records no transaction:created event",
    "refresh-dead": "refresh answers 401 to every refresh token",
    "read-only-can-create": "a read-only application may cash in and cash out",
    "total-wrong": "the envelope's total is the number of events on the page",
    "duplicate-event-ids": "every event of a transaction carries the same event_id",
    "bearer-ignored": "any Authorization value, even garbage, authenticates as the first app",
    "long-key-accepted": "idempotency keys longer than 32 characters are accepted",
    "cashin-can-cashout": "a cashin application may also cash out",
    "missing-number-accepted": "a creation without number is accepted (client stored empty)",
    "find-timestamp-z": "find answers timestamp with a Z suffix instead of a numeric offset",
    "events-leak-merchants": "the events list shows every merchant's events",
    "text-errors": "error responses are text/plain instead of JSON",
    "bad-json-500": "a body that is not JSON makes cashin and cashout answer 500",
    # -- authentication and privileges --
    "secret-case-insensitive": "authorize compares the client_secret ignoring letter case",
    "secret-trimmed": "authorize strips whitespace around the client_secret it is given",
    "refresh-accepts-access": "refresh takes any valid token of the service, an access token too",
    "refresh-signature-unchecked": "refresh reads the refresh token's claims unverified",
    "refresh-by-privilege": "refresh issues the pair of the first application with the token's "
    "privilege (for M2's read-write application, M1's)",
    "refresh-merchant-app": "refresh issues the pair of the merchant's first application "
    "(read-write), whatever the token's privilege",
    "bearer-case-sensitive": "only the exact word 'Bearer' is taken as the scheme: "
    "'bearer <token>' is refused",
    "agents-refresh-unusable": "/auth/agents/refresh/{token} is served too, but the access token "
    "it answers is signed with a key the API does not take",
    "kind-filter-leaks-merchants": "with a kind filter the events list drops its merchant scope",
    "status-filter-leaks-merchants": "with a status filter the events list drops its merchant "
    "scope",
    "refresh-merchant-last-app": "refresh issues the pair of the merchant's last application "
    "(M1's cashout one), whatever the token's privilege",
    # -- creations and idempotency: a rule on one kind or one channel --
    "cashout-long-key-accepted": "the 32-character key limit is checked on cashin only",
    "cashout-query-key-ignored": "cashout ignores the Idempotency-Key query parameter",
    "cashout-key-race": "cashout checks the key, awaits a balance look-up, then records the key",
    "cashout-keyless-replayed": "a keyless cashout repeating an earlier one's amount and number "
    "is answered that cashout's response (same ref) and executes nothing",
    "cashout-missing-amount-accepted": "a cashout without amount is accepted (stored as 0)",
    "both-channel-keys-joined": "a key in both header and query is recorded as the two values "
    "joined by a comma (as repeated fields combine), matching neither alone",
    "differing-keys-ignored": "when the header and query keys differ, the request is treated "
    "as keyless (a key is generated)",
    "keys-case-insensitive": "idempotency keys are compared case-insensitively (lower-cased)",
    "keys-stripped": "idempotency keys are compared with surrounding whitespace removed",
    "query-key-any-length": "the 32-character limit is checked on the header only",
    "query-key-race": "a query-parameter key is checked, then recorded after an await",
    "reuse-names-ref": "the 409 for a reused key names the transaction that used it (its ref), "
    "whichever merchant that was",
    "key-channels-apart": "header keys and query keys are kept apart: a key used in one channel "
    "may be used again in the other",
    # -- find, the events list, fields/formats and the lifecycle --
    "total-counts-transactions": "the envelope's total counts the matching transactions, "
    "not their events",
    "cashout-reuses-cashin-ref": "a cashout answers and stores the ref of the merchant's "
    "previous cashin",
    "envelope-event-kind-underscore": "the envelope always carries amount, client, kind, ref, "
    "status and the event kind, this one spelled event_kind",
    "events-dated-at-creation": "every event's created_at is its transaction's creation time",
    "snapshot-created-at-is-event-time": "an event's data.created_at is the event's own time, "
    "not the transaction's creation",
    "find-timestamp-now": "find answers timestamp as the moment of the lookup",
    "cashout-created-event-says-cashin": "a cashout's transaction:created event records "
    "kind CASHIN (the cashin's event code, copied)",
    "cashout-amount-negative": "a cashout is stored with a negative amount: find and its "
    "events show -amount (the creation answer the amount sent)",
    "cashout-not-processed": "the customer's confirm or cancel of a cashout is answered but "
    "the cashout stays pending",
    "find-records-event": "each find of a pending transaction records another "
    "transaction:created event",
    "failed-filter-misses": "the status filter looks for the internal word cancelled when "
    "asked for failed, so status=failed lists nothing",
    # -- what the mutation score showed unseen --
    "pending-fails-on-its-own": "a transaction nobody acts on fails half a second after its "
    "creation (a time-out in the wrong unit)",
    "huge-amount-shortened": "an integer amount of more than 400 digits is read as 410",
    "chunked-body-500": "a creation whose body comes chunked (no Content-Length) answers 500",
    "nan-amount-accepted": "an amount of NaN (taken by a lenient JSON parser) is accepted",
    "non-ascii-key-refused": "an idempotency key that is not ASCII (clé-...) is refused with a "
    "400, in either channel",
    # -- issue 30: new kinds, each breaking a rule of the document; no check was written for them
    # (tests/foreign/model_defects.py gives each its kind) --
    # concurrency across operations: each request right alone, wrong together
    "pooled-ref-race": "a creation takes the ref pre-drawn for the merchant's customer, then "
    "awaits drawing the next: two for one customer at once share a ref (the later overwrites)",
    "created-event-lost-race": "a customer's events are a document read, awaited, then written "
    "back with the created event: of two creations for one customer at once, one event is lost",
    "key-channels-race": "header and query keys live in two stores, the other channel's read "
    "before an await: one key sent at once in the header and in the query executes twice",
    "customer-answers-race": "the customer's confirm or cancel checks pending, then awaits "
    "before recording: a confirm and a cancel at the same instant are both recorded",
    "total-across-await": "the events list counts total, awaits, then reads the page anew: a "
    "creation landing between makes total disagree with the events listed",
    # time: right now, wrong a few seconds later
    "key-forgotten-after-3s": "an idempotency key is remembered 3 s only (a cache lifetime in "
    "the wrong unit): its reuse after that executes",
    "settled-status-reverts": "find reads a processed status from a cache that drops it 2 s "
    "after processing, then falls back to the creation's record: pending",
    "expired-token-grace": f"access tokens are verified with a {TOKEN_LEEWAY_S} s leeway past "
    "exp: an expired token keeps working that long",
    "snapshot-goes-live": "an event older than 2 s is rendered from the transaction as it is "
    "now: a created event's snapshot later shows the final status",
    # identity through other spellings: another spelling reaches what the canonical is refused
    "find-upper-ref-any-merchant": "find retries a ref that is not lower case in a "
    "case-insensitive index without the merchant scope",
    "trailing-slash-no-privilege": "POST /transactions/cashin/ and /transactions/cashout/ (a "
    "trailing slash) are served without the privilege check",
    "ref-filter-case-any-merchant": "a ref filter not in lower case is matched "
    "case-insensitively over every merchant's events",
    "client-filter-250-any-merchant": "a client filter with the country code (250...) is "
    "matched on its last 9 digits over every merchant's events",
    # consistency of derived values
    "total-kind-status-drops-kind": "with both a kind and a status filter, total counts the "
    "events of that status of every kind (the page is right)",
    "event-id-by-row": "event_id is derived from the event's row in the result (ref and "
    "position): the same event has another id under another filter",
    "listed-amount-rounded": "the events' data.amount is stored rounded to a whole number "
    "(the creation answer and find keep the amount sent)",
    "processed-snapshot-before-status": "the processed event's snapshot is taken before the "
    "status is set: it reads pending",
}

#: Other conformant choices where the document is silent, switched on with ``--choice NAME``
#: (any number of them): more ways to be right that the suite must not call wrong.
CHOICES: dict[str, str] = {
    "normalize-numbers": "customer numbers are stored and answered in international form "
    "(250 + the 9 significant digits), and the client filter matches any notation",
    "strict-filters": "filter values are validated: status pending|successful|failed, kind "
    "CASHIN|CASHOUT, ref a UUID, client digits; anything else is a 400",
    "local-offsets": "creation created_at, find timestamp and data timestamps are written "
    "with a +02:00 offset (Kigali), as the live service's samples show; event created_at in UTC",
    "problem-json": "errors are RFC 9457 problem details (application/problem+json)",
    "framework-errors": "a path or method no route serves gets the web framework's own "
    "plain-text 404/405 (the API's own errors stay JSON)",
    "async-events": "events are recorded 0.8 s after the request was answered (an outbox)",
    "rate-limit": "each application (the client_id of its token or of the authorize body) gets "
    "a burst of 40 requests refilled at 25 a second; beyond it 429 with Retry-After: 1 and a "
    "JSON error body (the customer simulator is not limited)",
}
#: How late the ``async-events`` choice records an event.
ASYNC_EVENT_DELAY_S = 0.8

DEFAULT_ACCESS_TTL_S = 900
REFRESH_TTL_S = 5 * 24 * 3600  # the live service: refresh exp = iat + 5 days
MAX_KEY_LENGTH = 32
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100
MAX_AMOUNT = 10**15  # beyond this a float fee would lose meaning; the document gives no bound
FEE_RATE = 0.023  # the live service: fee 2.3 for amount 100
STATUS_CONFIRMED = "successful"
STATUS_CANCELLED = "failed"
NUMBER_PATTERN = "^07[2389][0-9]{7}$"

#: Which transaction kinds each privilege may create; every privilege may read.
CREATE_RIGHTS: dict[str, frozenset[str]] = {
    "read": frozenset(),
    "read-write": frozenset({"CASHIN", "CASHOUT"}),
    "cashin": frozenset({"CASHIN"}),
    "cashout": frozenset({"CASHOUT"}),
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """A client error, answered as ``{"status", "message"}`` with that HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def utc_text(ns: int, suffix: str = "Z") -> str:
    """ISO 8601 in UTC with a nanosecond fraction, as the live service's Go encoder writes it."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{fraction:09d}{suffix}"


KIGALI = timezone(timedelta(hours=2))


def local_text(ns: int) -> str:
    """The same instant written with the +02:00 offset of the live service's samples."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, KIGALI).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{fraction:09d}+02:00"


def significant(number: str) -> str:
    """The last 9 digits: the customer, whichever notation the number was written in."""
    digits = "".join(ch for ch in number if ch.isascii() and ch.isdigit())
    return digits[-9:]


def as_number(value: float) -> int | float:
    """Integral floats are answered as JSON integers, like an amount of 100 in the samples."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


@dataclass
class App:
    """A merchant application as the dashboard would create it."""

    client_id: str
    client_secret: str
    privilege: str
    merchant: str


@dataclass
class Transaction:
    """One cashin or cashout; status moves pending -> successful | failed exactly once."""

    ref: str
    kind: str
    amount: int | float
    client: str
    merchant: str
    fee: int | float
    status: str
    created_ns: int
    processed_ns: int | None = None
    shared_event_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    stamp: Callable[[int], str] = utc_text

    def snapshot(self) -> dict[str, Any]:
        """The event ``data`` object: the transaction as it is at the moment of the event."""
        data: dict[str, Any] = {
            "ref": self.ref,
            "kind": self.kind,
            "fee": self.fee,
            "merchant": self.merchant,
            "client": self.client,
            "amount": self.amount,
            "status": self.status,
            "created_at": self.stamp(self.created_ns),
        }
        if self.processed_ns is not None:
            data["processed_at"] = self.stamp(self.processed_ns)
        return data


@dataclass
class Event:
    """One recorded stage of a transaction, kept in recording order (the list is oldest first)."""

    event_id: str
    event_kind: str
    created_ns: int
    merchant: str
    data: dict[str, Any]
    #: The transaction it belongs to (read only by the ``snapshot-goes-live`` defect).
    txn: Transaction | None = None

    def render(self, event_id: str | None = None) -> dict[str, Any]:
        """``event_id``: what the ``event-id-by-row`` defect names it instead of its own id."""
        return {
            "event_id": self.event_id if event_id is None else event_id,
            "event_kind": self.event_kind,
            "created_at": utc_text(self.created_ns),
            "data": dict(self.data),
        }


class State:
    """All in memory: a restart forgets everything, which the self-tests never rely on."""

    def __init__(
        self, access_ttl_s: int, defect: str | None, choices: frozenset[str] = frozenset()
    ) -> None:
        self.access_ttl_s = access_ttl_s
        self.defect = defect
        self.choices = choices
        self.secret = secrets.token_bytes(32)
        self.apps: dict[str, App] = {}
        self.app_order: list[str] = []
        self.transactions: dict[str, Transaction] = {}
        self.events: list[Event] = []
        self.used_keys: set[str] = set()
        #: The ref each key created (the ``reuse-names-ref`` defect names it).
        self.key_refs: dict[str, str] = {}
        #: Keyless cashouts by merchant, amount and number (``cashout-keyless-replayed``).
        self.keyless_cashouts: dict[tuple[str, Any, str], Transaction] = {}
        self.last_cashin: dict[str, str] = {}
        #: When each key was first used (``key-forgotten-after-3s``).
        self.key_times: dict[str, float] = {}
        #: The keys of each channel apart (``key-channels-race``).
        self.channel_keys: dict[str, set[str]] = {"header": set(), "query": set()}
        #: The next ref pre-drawn for each merchant's customer (``pooled-ref-race``).
        self.ref_pool: dict[tuple[str, str], str] = {}
        self.lock = asyncio.Lock()

    def has(self, defect: str) -> bool:
        return self.defect == defect

    def chose(self, choice: str) -> bool:
        return choice in self.choices

    def add_app(self, privilege: str, merchant: str) -> App:
        app = App(
            client_id=f"app-{secrets.token_hex(8)}",
            client_secret=secrets.token_urlsafe(24),
            privilege=privilege,
            merchant=merchant,
        )
        self.apps[app.client_id] = app
        self.app_order.append(app.client_id)
        return app

    def token_pair(self, app: App, key: bytes | None = None) -> dict[str, Any]:
        """A fresh pair; claims as the live service's (id, merchant, perm, sub, iat, exp).
        ``key``: what the access token is signed with (the service's own key by default)."""
        iat = int(time.time())
        base = {"id": app.client_id, "merchant": app.merchant, "perm": app.privilege, "iat": iat}
        access_exp = iat + self.access_ttl_s
        access_key = self.secret if key is None else key
        access = jwt.encode({**base, "sub": "access", "exp": access_exp}, access_key, "HS256")
        refresh_exp = iat + REFRESH_TTL_S
        refresh = jwt.encode({**base, "sub": "refresh", "exp": refresh_exp}, self.secret, "HS256")
        return {"access": access, "refresh": refresh, "expires": access_exp}

    def decode(
        self,
        token: str,
        subject: str,
        *,
        verify_exp: bool = True,
        verify_signature: bool = True,
        leeway: int = 0,
    ) -> App:
        """The application a token of that subject names, or a 401."""
        try:
            claims = jwt.decode(
                token,
                self.secret,
                algorithms=["HS256"],
                leeway=leeway,
                options={
                    "verify_exp": verify_exp,
                    "verify_signature": verify_signature,
                    "require": ["exp", "iat", "sub", "id"],
                },
            )
        except jwt.ExpiredSignatureError:
            raise ApiError(401, f"{subject} token expired") from None
        except jwt.InvalidTokenError:
            raise ApiError(401, f"invalid {subject} token") from None
        lax = subject == "refresh" and self.has("refresh-accepts-access")
        if claims.get("sub") != subject and not lax:
            raise ApiError(401, f"a {subject} token is required")
        app = self.apps.get(str(claims.get("id")))
        if app is None:
            raise ApiError(401, "the token's application no longer exists")
        return app

    def key_used(self, key: str, channel: str) -> bool:
        """Whether ``key`` (sent in ``channel``, header or query) was used before."""
        if self.has("key-channels-race"):
            return key in self.channel_keys[channel]
        if self.has("key-forgotten-after-3s"):
            first = self.key_times.get(key)
            return first is not None and time.monotonic() - first <= KEY_MEMORY_S
        return key in self.used_keys

    def remember_key(self, key: str, channel: str) -> None:
        self.used_keys.add(key)
        self.key_times[key] = time.monotonic()
        self.channel_keys[channel].add(key)

    def record(self, txn: Transaction, event_kind: str, at_ns: int) -> None:
        event = self.make_event(txn, event_kind, at_ns)
        if self.chose("async-events"):
            asyncio.get_running_loop().call_later(ASYNC_EVENT_DELAY_S, self.events.append, event)
        else:
            self.events.append(event)

    def make_event(self, txn: Transaction, event_kind: str, at_ns: int) -> Event:
        """The event of that stage, with the transaction's snapshot as it is now."""
        event_id = txn.shared_event_id if self.has("duplicate-event-ids") else str(uuid.uuid4())
        data = txn.snapshot()
        if self.has("listed-amount-rounded"):
            data["amount"] = round(txn.amount)
        if event_kind == "transaction:created" and self.has("cashout-created-event-says-cashin"):
            data["kind"] = "CASHIN"
        if self.has("snapshot-created-at-is-event-time"):
            data["created_at"] = txn.stamp(at_ns)
        if self.has("events-dated-at-creation"):
            at_ns = txn.created_ns
        return Event(event_id, event_kind, at_ns, txn.merchant, data, txn)

    def render_listed(self, event: Event, position: int) -> dict[str, Any]:
        """An event as the list shows it at ``position`` (0 for the first match, before
        paging): the defects that render it otherwise than it was recorded act here."""
        if self.has("event-id-by-row"):
            row = f"{event.data.get('ref')}/{position}"
            return event.render(str(uuid.uuid5(uuid.NAMESPACE_URL, row)))
        rendered = event.render()
        age_ns = time.time_ns() - event.created_ns
        if self.has("snapshot-goes-live") and event.txn and age_ns > SETTLED_CACHE_S * 1e9:
            rendered["data"] = event.txn.snapshot()
        return rendered

    def process(self, txn: Transaction, action: str) -> None:
        """The customer's confirm or cancel: the status, then its processed event."""
        status = STATUS_CONFIRMED if action == "confirm" else STATUS_CANCELLED
        txn.processed_ns = time.time_ns()
        if self.has("processed-snapshot-before-status"):
            self.record(txn, "transaction:processed", txn.processed_ns)
            txn.status = status
            return
        txn.status = status
        self.record(txn, "transaction:processed", txn.processed_ns)

    def fail_the_stale(self) -> None:
        """The ``pending-fails-on-its-own`` defect: a pending transaction older than half a
        second fails, as if the customer had cancelled it."""
        if not self.has("pending-fails-on-its-own"):
            return
        now = time.time_ns()
        for txn in self.transactions.values():
            if txn.status == "pending" and now - txn.created_ns > 500_000_000:
                txn.status = STATUS_CANCELLED
                txn.processed_ns = now
                self.record(txn, "transaction:processed", now)

    def create(
        self, app: App, kind: str, amount: int | float, number: str, ref: str | None = None
    ) -> Transaction:
        """Must be called under ``lock`` once every check has passed: it always executes.
        ``ref``: the one drawn beforehand (``pooled-ref-race``), else a new one."""
        if kind == "CASHOUT" and self.has("wrong-kind-on-cashout"):
            kind = "CASHIN"
        now = time.time_ns()
        ref = ref or str(uuid.uuid4())
        if kind == "CASHOUT" and self.has("cashout-reuses-cashin-ref"):
            ref = self.last_cashin.get(app.merchant, ref)
        elif kind == "CASHIN":
            self.last_cashin[app.merchant] = ref
        if kind == "CASHOUT" and self.has("cashout-amount-negative"):
            amount = -amount
        txn = Transaction(
            ref=ref,
            kind=kind,
            amount=amount,
            client="250" + significant(number) if self.chose("normalize-numbers") else number,
            merchant=app.merchant,
            fee=as_number(round(float(amount) * FEE_RATE, 2)),
            status="pending",
            created_ns=now,
            stamp=local_text if self.chose("local-offsets") else utc_text,
        )
        self.transactions[txn.ref] = txn
        # created-event-lost-race: the handler records it, outside the lock
        if not self.has("no-created-event") and not self.has("created-event-lost-race"):
            self.record(txn, "transaction:created", now)
        return txn

    async def draw_ref(self, merchant: str, number: str) -> str:
        """The ``pooled-ref-race`` defect: the ref pre-drawn for the merchant's customer (the id
        of the prompt their phone will show), then, after an await (a sequence in a database),
        the next one drawn in its place."""
        ref = self.ref_pool.setdefault((merchant, number), str(uuid.uuid4()))
        await asyncio.sleep(RACE_GAP_S)
        self.ref_pool[merchant, number] = str(uuid.uuid4())
        return ref

    async def append_created_late(self, txn: Transaction) -> None:
        """The ``created-event-lost-race`` defect: the customer's events are one document, read,
        awaited, written back with the created event (last writer wins)."""

        def customers(event: Event) -> bool:
            return event.merchant == txn.merchant and event.data.get("client") == txn.client

        read = [e for e in self.events if customers(e)]
        await asyncio.sleep(RACE_GAP_S)
        others = [e for e in self.events if not customers(e)]
        created = self.make_event(txn, "transaction:created", txn.created_ns)
        self.events = sorted([*others, *read, created], key=lambda e: e.created_ns)


# --- request helpers ------------------------------------------------------------------------


def state_of(request: web.Request) -> State:
    return request.app[STATE_KEY]


def authenticate(request: web.Request) -> App:
    """The application behind the Authorization header: ``Bearer <t>`` or the bare ``<t>``."""
    state = state_of(request)
    header = request.headers.get("Authorization", "").strip()
    if not header:
        raise ApiError(401, "missing Authorization header")
    if state.has("bearer-ignored"):
        return state.apps[state.app_order[0]]
    scheme, _, rest = header.partition(" ")
    if rest:
        exact = state.has("bearer-case-sensitive")
        if scheme != "Bearer" and (exact or scheme.lower() != "bearer"):
            raise ApiError(401, "unsupported authorization scheme")
        token = rest.strip()
    else:
        token = header  # paypack-js sends the token without "Bearer "
    leeway = TOKEN_LEEWAY_S if state.has("expired-token-grace") else 0
    verify_exp = not state.has("expired-token-accepted")
    return state.decode(token, "access", verify_exp=verify_exp, leeway=leeway)


async def json_object(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object, whatever media type was declared (the live service is lax)."""
    state = state_of(request)
    if request.content_length is None and state.has("chunked-body-500") and request.can_read_body:
        raise RuntimeError("deliberate defect: a body without Content-Length")
    try:
        raw = await request.read()
    except web.RequestPayloadError:  # e.g. Content-Encoding: gzip on bytes that are not
        raise ApiError(400, "the body cannot be decoded") from None
    parse_int = _shortened_int if state.has("huge-amount-shortened") else int
    try:
        payload = json.loads(raw, parse_int=parse_int) if raw.strip() else None
    except ValueError:
        if state_of(request).has("bad-json-500") and request.path.startswith("/api/transactions"):
            raise RuntimeError("deliberate defect: unparsed body") from None
        raise ApiError(400, "the body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise ApiError(400, "the body must be a JSON object")
    return payload


def _shortened_int(text: str) -> int:
    """The ``huge-amount-shortened`` defect: past 400 digits, a number stands for 410."""
    return 410 if len(text) > 400 else int(text)


def idempotency_key(request: web.Request, kind: str = "CASHIN") -> str | None:
    """The key from the header, else the query parameter the examples use; empty is absent."""
    state = state_of(request)
    header = request.headers.get("Idempotency-Key") or None
    query = request.query.get("Idempotency-Key") or None
    if kind == "CASHOUT" and state.has("cashout-query-key-ignored"):
        query = None
    key = header or query
    unlimited = (
        state.has("long-key-accepted")
        or (kind == "CASHOUT" and state.has("cashout-long-key-accepted"))
        or (header is None and state.has("query-key-any-length"))
    )
    if key is not None and len(key) > MAX_KEY_LENGTH and not unlimited:
        raise ApiError(400, f"Idempotency-Key is longer than {MAX_KEY_LENGTH} characters")
    if key is not None and not key.isascii() and state.has("non-ascii-key-refused"):
        raise ApiError(400, "Idempotency-Key must be ASCII")
    return _defective_key(state, key, header, query)


def _defective_key(
    state: State, key: str | None, header: str | None, query: str | None
) -> str | None:
    """The key as each idempotency defect would record it (unchanged without one)."""
    if header is not None and query is not None:
        if state.has("both-channel-keys-joined"):
            return f"{header},{query}"
        if state.has("differing-keys-ignored") and header != query:
            return None
    if key is not None and state.has("keys-case-insensitive"):
        return key.lower()
    if key is not None and state.has("keys-stripped"):
        return key.strip() or None
    if key is not None and header is None and state.has("key-channels-apart"):
        return f"query:{key}"
    return key


def racy_key(request: web.Request, kind: str) -> bool:
    """Whether a race defect records this request's key after an await (outside the lock)."""
    state = state_of(request)
    from_query = not request.headers.get("Idempotency-Key") and bool(
        request.query.get("Idempotency-Key")
    )
    return (kind == "CASHOUT" and state.has("cashout-key-race")) or (
        from_query and state.has("query-key-race")
    )


def valid_amount(value: Any, state: State) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(400, "amount must be a number")
    if isinstance(value, float) and math.isnan(value) and state.has("nan-amount-accepted"):
        return value
    if not math.isfinite(value) or value <= 0:
        raise ApiError(400, "amount must be greater than 0")
    if value > MAX_AMOUNT:
        raise ApiError(400, f"amount must not exceed {MAX_AMOUNT}")
    return as_number(value)


def valid_number(value: Any, state: State) -> str:
    if value is None and state.has("missing-number-accepted"):
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "number must be a non-empty string")
    return value


# --- handlers -------------------------------------------------------------------------------


def key_channel(request: web.Request) -> str:
    """Where the request's key came from: the header wins when both are sent."""
    return "header" if request.headers.get("Idempotency-Key") else "query"


def check_rights(state: State, app: App, kind: str) -> None:
    """A 403 unless the application's privilege may create that kind."""
    rights = CREATE_RIGHTS[app.privilege]
    if state.has("read-only-can-create") and app.privilege == "read":
        rights = frozenset({"CASHIN", "CASHOUT"})
    if state.has("cashin-can-cashout") and app.privilege == "cashin":
        rights = rights | {"CASHOUT"}
    if kind not in rights:
        raise ApiError(403, f"the {app.privilege} privilege cannot create a {kind}")


async def racy_key_steps(request: web.Request, kind: str, key: str, channel: str) -> str | None:
    """What the race defects do with a key before the lock: a 409, or the key to check under
    the lock (``None`` once a race defect has recorded it itself)."""
    state = state_of(request)
    if racy_key(request, kind):
        if key in state.used_keys:
            raise ApiError(409, "this Idempotency-Key has already been used")
        await asyncio.sleep(RACE_GAP_S)  # the deliberate gap between the check and the record
        state.used_keys.add(key)
        return None
    if state.has("key-channels-race"):
        other = "query" if channel == "header" else "header"
        if key in state.channel_keys[other]:
            raise ApiError(409, "this Idempotency-Key has already been used")
        await asyncio.sleep(RACE_GAP_S)  # the other channel's store, read before the await
    return key


async def create(request: web.Request, kind: str, privileged: bool = True) -> web.Response:
    """Cashin or cashout: every check first, then key and creation atomically under the lock.
    ``privileged=False``: the ``trailing-slash-no-privilege`` defect's routes, which forget the
    privilege check."""
    state = state_of(request)
    app = authenticate(request)
    if privileged:
        check_rights(state, app, kind)
    key = idempotency_key(request, kind)
    payload = await json_object(request)
    if (
        kind == "CASHOUT"
        and "amount" not in payload
        and state.has("cashout-missing-amount-accepted")
    ):
        amount: int | float = 0
    else:
        amount = valid_amount(payload.get("amount"), state)
    number = valid_number(payload.get("number"), state)
    replay = (app.merchant, amount, number)
    replayed = key is None and kind == "CASHOUT" and state.has("cashout-keyless-replayed")
    if replayed:
        txn = state.keyless_cashouts.get(replay)
        if txn is not None:
            return web.json_response(creation_body(txn), status=201)
    channel = key_channel(request)
    if key is not None:
        key = await racy_key_steps(request, kind, key, channel)
    ref = await state.draw_ref(app.merchant, number) if state.has("pooled-ref-race") else None
    async with state.lock:
        if key is not None and state.key_used(key, channel):
            if state.has("key-reuse-executes"):
                state.create(app, kind, amount, number)
            message = "this Idempotency-Key has already been used"
            if state.has("reuse-names-ref"):
                message += f" by transaction {state.key_refs.get(key)}"
            raise ApiError(409, message)
        if key is not None:
            state.remember_key(key, channel)
        txn = state.create(app, kind, amount, number, ref)
        if key is not None:
            state.key_refs[key] = txn.ref
    if state.has("created-event-lost-race"):
        await state.append_created_late(txn)
    if replayed:
        state.keyless_cashouts.setdefault(replay, txn)
    # The amount sent (stored too, but for the cashout-amount-negative defect).
    return web.json_response(creation_body(txn, amount), status=201)


def creation_body(txn: Transaction, amount: int | float | None = None) -> dict[str, Any]:
    """The creation response: the transaction as it was created (``amount``: as it was sent)."""
    return {
        "amount": txn.amount if amount is None else amount,
        "created_at": txn.stamp(txn.created_ns),
        "kind": txn.kind,
        "ref": txn.ref,
        "status": txn.status,
    }


async def cashin(request: web.Request) -> web.Response:
    return await create(request, "CASHIN")


async def cashout(request: web.Request) -> web.Response:
    return await create(request, "CASHOUT")


async def cashin_slash(request: web.Request) -> web.Response:
    return await create(request, "CASHIN", privileged=False)


async def cashout_slash(request: web.Request) -> web.Response:
    return await create(request, "CASHOUT", privileged=False)


async def find(request: web.Request) -> web.Response:
    state = state_of(request)
    app = authenticate(request)
    state.fail_the_stale()
    ref = request.match_info["ref"]
    txn = state.transactions.get(ref)
    anywhere = state.has("find-other-merchant")
    if txn is None and ref != ref.lower() and state.has("find-upper-ref-any-merchant"):
        txn, anywhere = state.transactions.get(ref.lower()), True
    if txn is None or (txn.merchant != app.merchant and not anywhere):
        raise ApiError(404, "no transaction with this ref")  # the same answer: no existence leak
    status = txn.status
    settled_ns = time.time_ns() - (txn.processed_ns or time.time_ns())
    if state.has("settled-status-reverts") and settled_ns > SETTLED_CACHE_S * 1e9:
        status = "pending"  # the creation's record, once the settled cache dropped it
    suffix = "Z" if state.has("find-timestamp-z") else "+00:00"
    moment = time.time_ns() if state.has("find-timestamp-now") else txn.created_ns
    timestamp = (
        local_text(moment)
        if state.chose("local-offsets") and not state.has("find-timestamp-z")
        else utc_text(moment, suffix)
    )
    if state.has("find-records-event") and txn.status == "pending":
        state.record(txn, "transaction:created", time.time_ns())
    return web.json_response(
        {
            "amount": txn.amount,
            "client": txn.client,
            "fee": txn.fee,
            "kind": txn.kind,
            "merchant": txn.merchant,
            "ref": txn.ref,
            "status": status,
            "timestamp": timestamp,
        }
    )


def page_param(request: web.Request, name: str, default: int, minimum: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ApiError(400, f"{name} must be an integer") from None
    if value < minimum:
        raise ApiError(400, f"{name} must be at least {minimum}")
    return value


def check_filters(request: web.Request) -> None:
    """The ``strict-filters`` choice: a filter value this service cannot hold is a 400."""
    query = request.query
    if query.get("status") not in (None, "pending", "successful", "failed"):
        raise ApiError(400, "status must be pending, successful or failed")
    if query.get("kind") not in (None, "CASHIN", "CASHOUT"):
        raise ApiError(400, "kind must be CASHIN or CASHOUT")
    ref = query.get("ref")
    if ref is not None:
        try:
            uuid.UUID(ref)
        except ValueError:
            raise ApiError(400, "ref must be a UUID") from None
    client = query.get("client")
    if client is not None and not significant(client):
        raise ApiError(400, "client must be a phone number")


def snapshot_filters(
    request: web.Request, echoed: dict[str, Any]
) -> tuple[list[Callable[[Event], bool]], bool]:
    """The client, kind and ref filters (echoed into ``echoed``), and whether one of them was
    spelled so that a spelling defect matches it over every merchant's events."""
    state = state_of(request)
    tests: list[Callable[[Event], bool]] = []
    spelled_otherwise = False
    for name in ("client", "kind", "ref"):
        value = request.query.get(name)
        if value is None:
            continue
        echoed[name] = value
        if name == "client" and state.has("client-filter-ignored"):
            continue
        international = value.startswith(("250", "+250"))
        if name == "client" and (
            state.chose("normalize-numbers")
            or (international and state.has("client-filter-250-any-merchant"))
        ):
            spelled_otherwise = not state.chose("normalize-numbers")
            tests.append(partial(_client_is, wanted=significant(value)))
        elif name == "ref" and value != value.lower() and state.has("ref-filter-case-any-merchant"):
            spelled_otherwise = True
            tests.append(partial(_ref_is, wanted=value.lower()))
        else:
            tests.append(partial(_data_is, attribute=name, value=value))
    return tests, spelled_otherwise


async def list_events(request: web.Request) -> web.Response:
    """Filters on the event snapshot; the envelope echoes exactly the filters given."""
    state = state_of(request)
    app = authenticate(request)
    state.fail_the_stale()
    limit = min(page_param(request, "limit", DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE)
    offset = page_param(request, "offset", 0, 0)
    echoed: dict[str, Any] = {}
    if state.chose("strict-filters"):
        check_filters(request)
    tests, spelled_otherwise = snapshot_filters(request, echoed)
    if (status := request.query.get("status")) is not None:
        echoed["status"] = status
        internal = (
            "cancelled" if status == "failed" and state.has("failed-filter-misses") else status
        )
        tests.append(lambda e: e.data.get("status") == internal)
    if (event_kind := request.query.get("event-kind")) is not None:
        echoed["event-kind"] = event_kind
        tests.append(lambda e: e.event_kind == event_kind)
    if (raw_amount := request.query.get("amount")) is not None:
        try:
            amount = float(raw_amount)
        except ValueError:
            raise ApiError(400, "amount must be a number") from None
        if not math.isfinite(amount):
            raise ApiError(400, "amount must be a number")
        echoed["amount"] = as_number(amount)
        tests.append(lambda e: e.data.get("amount") == amount)
    leak = (
        spelled_otherwise
        or state.has("events-leak-merchants")
        or (state.has("kind-filter-leaks-merchants") and "kind" in request.query)
        or (state.has("status-filter-leaks-merchants") and "status" in request.query)
    )

    def select(tests: list[Callable[[Event], bool]]) -> list[Event]:
        return [
            e
            for e in state.events
            if (leak or e.merchant == app.merchant) and all(test(e) for test in tests)
        ]

    matching = select(tests)
    total = len(matching)
    if state.has("total-kind-status-drops-kind") and {"kind", "status"} <= set(request.query):
        total = len(select([t for t in tests if not _is_kind_test(t)]))
    if state.has("total-across-await"):
        await asyncio.sleep(RACE_GAP_S)  # the page is a second query
        matching = select(tests)
    page = matching[offset : offset + limit]
    if state.has("total-wrong"):
        total = len(page)
    if state.has("total-counts-transactions"):
        total = len({e.data.get("ref") for e in matching})
    if state.has("envelope-event-kind-underscore"):
        blank = {"amount": 0, "client": "", "event-kind": "", "kind": "", "ref": "", "status": ""}
        echoed = {**blank, **echoed}
        echoed["event_kind"] = echoed.pop("event-kind")
    envelope: dict[str, Any] = {
        **echoed,
        "limit": limit,
        "offset": offset,
        "total": total,
        "transactions": [
            state.render_listed(e, position) for position, e in enumerate(page, offset)
        ],
    }
    return web.json_response(dict(sorted(envelope.items())))


def _client_is(event: Event, wanted: str) -> bool:
    return significant(str(event.data.get("client"))) == wanted


def _data_is(event: Event, attribute: str, value: str) -> bool:
    return bool(event.data.get(attribute) == value)


def _is_kind_test(test: Callable[[Event], bool]) -> bool:
    return isinstance(test, partial) and test.keywords.get("attribute") == "kind"


def _ref_is(event: Event, wanted: str) -> bool:
    return str(event.data.get("ref")).lower() == wanted


async def authorize(request: web.Request) -> web.Response:
    state = state_of(request)
    payload = await json_object(request)
    client_id, client_secret = payload.get("client_id"), payload.get("client_secret")
    for name, value in (("client_id", client_id), ("client_secret", client_secret)):
        if not isinstance(value, str) or not value:
            raise ApiError(400, f"{name} must be a non-empty string")
    assert isinstance(client_id, str) and isinstance(client_secret, str)  # checked just above
    app = state.apps.get(client_id)
    expected = app.client_secret if app else secrets.token_urlsafe(24)
    if state.has("secret-trimmed"):
        client_secret = client_secret.strip()
    if state.has("secret-case-insensitive"):
        expected, client_secret = expected.lower(), client_secret.lower()
    given = client_secret.encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(expected.encode(), given) or app is None:
        raise ApiError(401, "invalid client credentials")
    return web.json_response(state.token_pair(app))


async def refresh(request: web.Request) -> web.Response:
    """No rotation: a refresh token keeps working until its own expiry, like the live service."""
    state = state_of(request)
    if state.has("refresh-dead"):
        raise ApiError(401, "invalid refresh token")
    verify = not state.has("refresh-signature-unchecked")
    app = state.decode(request.match_info["refresh_token"], "refresh", verify_signature=verify)
    if state.has("refresh-by-privilege"):
        app = next(a for a in state.apps.values() if a.privilege == app.privilege)
    if state.has("refresh-merchant-app"):
        app = next(a for a in state.apps.values() if a.merchant == app.merchant)
    if state.has("refresh-merchant-last-app"):
        app = [a for a in state.apps.values() if a.merchant == app.merchant][-1]
    return web.json_response(state.token_pair(app))


async def agents_refresh(request: web.Request) -> web.Response:
    """The ``agents-refresh-unusable`` defect's second refresh path: a pair whose access token
    is signed with a key of its own, which no protected operation takes."""
    state = state_of(request)
    app = state.decode(request.match_info["refresh_token"], "refresh")
    return web.json_response(
        state.token_pair(app, key=b"a key of the agents path only, not the API's")
    )


async def customer_action(request: web.Request) -> web.Response:
    """The sandbox customer: confirm or cancel a pending transaction, exactly once."""
    state = state_of(request)
    action = request.query.get("action")
    if action not in ("confirm", "cancel"):
        raise ApiError(400, "action must be confirm or cancel")
    racy = state.has("customer-answers-race")
    async with state.lock:
        txn = state.transactions.get(request.match_info["ref"])
        if txn is None:
            raise ApiError(404, "no transaction with this ref")
        if txn.status != "pending" and not state.has("processed-twice"):
            raise ApiError(409, f"the transaction is already {txn.status}")
        if txn.kind == "CASHOUT" and state.has("cashout-not-processed"):
            return web.json_response({"ref": txn.ref, "status": txn.status})
        if not racy:
            state.process(txn, action)
    if racy:  # checked pending above; the mobile operator is asked before it is recorded
        await asyncio.sleep(RACE_GAP_S)
        state.process(txn, action)
    return web.json_response({"ref": txn.ref, "status": txn.status})


# --- application ------------------------------------------------------------------------------


@web.middleware
async def errors_to_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error, aiohttp's own 404/405/413 included, as ``{"status", "message"}``."""
    try:
        return await handler(request)
    except ApiError as exc:
        status, message = exc.status, exc.message
    except web.HTTPException as exc:
        if exc.status < 400 or state_of(request).chose("framework-errors"):
            raise
        status, message = exc.status, exc.reason
    except Exception as exc:  # a bug (or the bad-json-500 defect): still answer, and say so
        print(f"internal error: {exc!r}", file=sys.stderr, flush=True)
        status, message = 500, "internal error"
    if state_of(request).has("text-errors"):
        return web.Response(status=status, text=f"{status} {message}")
    if state_of(request).chose("problem-json"):
        problem = {"type": "about:blank", "title": message, "status": status}
        return web.json_response(problem, status=status, content_type="application/problem+json")
    return web.json_response({"status": status, "message": message}, status=status)


STATE_KEY = web.AppKey("state", State)


# --- the rate-limit choice (an API gateway in front of the service) ---------------------------
#: "Rate limits: not shown": a gateway's usual answer, per application, as a token bucket.
RATE_LIMIT_BURST = 40
RATE_LIMIT_PER_S = 25.0
RATE_LIMIT_RETRY_AFTER = "1"


@dataclass
class Bucket:
    """A token bucket: ``tokens`` left, refilled at ``RATE_LIMIT_PER_S`` up to the burst."""

    tokens: float = float(RATE_LIMIT_BURST)
    at: float = field(default_factory=time.monotonic)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(RATE_LIMIT_BURST, self.tokens + (now - self.at) * RATE_LIMIT_PER_S)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def rate_limit_key(request: web.Request, body: bytes) -> str:
    """Whose bucket a request draws on: the application named by its token (access or refresh,
    read without verifying, as a gateway in front of the service would), else by the authorize
    body's client_id, else the caller's address (a request that names no application)."""
    header = request.headers.get("Authorization", "").strip()
    token = header.partition(" ")[2].strip() or header
    token = request.match_info.get("refresh_token", token)
    if token:
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
            if isinstance(claims.get("id"), str):
                return str(claims["id"])
        except jwt.InvalidTokenError:
            pass
    if request.path.endswith("/auth/agents/authorize"):
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("client_id"), str):
            return str(payload["client_id"])
    return f"address:{request.remote}"


def rate_limiter() -> Any:
    """The ``rate-limit`` choice's middleware: 429 with Retry-After once a bucket is empty."""
    buckets: dict[str, Bucket] = {}

    @web.middleware
    async def rate_limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/api/"):
            return await handler(request)  # the customer simulator stands for the customer
        authorize = request.path.endswith("/auth/agents/authorize") and request.can_read_body
        body = await request.read() if authorize else b""  # aiohttp keeps it for the handler
        bucket = buckets.setdefault(rate_limit_key(request, body), Bucket())
        if not bucket.take():
            return web.json_response(
                {"status": 429, "message": "rate limit exceeded"},
                status=429,
                headers={"Retry-After": RATE_LIMIT_RETRY_AFTER},
            )
        return await handler(request)

    return rate_limit


def build_app(state: State, outer_middlewares: Sequence[Any] = ()) -> web.Application:
    """The aiohttp application; ``outer_middlewares`` wrap it (dies.py counts requests there)."""
    limits = [rate_limiter()] if state.chose("rate-limit") else []
    # inside errors_to_json: a body the limiter cannot read is answered like any other error
    app = web.Application(middlewares=[*outer_middlewares, errors_to_json, *limits])
    app[STATE_KEY] = state
    app.router.add_post("/api/transactions/cashin", cashin)
    app.router.add_post("/api/transactions/cashout", cashout)
    if state.has("trailing-slash-no-privilege"):
        app.router.add_post("/api/transactions/cashin/", cashin_slash)
        app.router.add_post("/api/transactions/cashout/", cashout_slash)
    app.router.add_get("/api/transactions/find/{ref}", find)
    app.router.add_get("/api/events/transactions", list_events)
    app.router.add_post("/api/auth/agents/authorize", authorize)
    app.router.add_get("/api/auth/refresh/{refresh_token}", refresh)
    if state.has("agents-refresh-unusable"):
        app.router.add_get("/api/auth/agents/refresh/{refresh_token}", agents_refresh)
    app.router.add_post("/sim/customer/{ref}", customer_action)
    return app


def seed_apps(state: State) -> None:
    """M1 with one app per privilege (read-write first), M2 with one read-write app."""
    for privilege in ("read-write", "read", "cashin", "cashout"):
        state.add_app(privilege, "M1")
    state.add_app("read-write", "M2")


def target_config(state: State, root: str) -> dict[str, Any]:
    """The target configuration in the project's format (README, "The target configuration")."""
    return {
        "base_url": f"{root}/api",
        "applications": [
            {
                "client_id": app.client_id,
                "client_secret": app.client_secret,
                "privilege": app.privilege,
                "merchant": app.merchant,
            }
            for app in (state.apps[cid] for cid in state.app_order)
        ],
        "customer": {
            "driver": "sandbox",
            "confirm": f"POST {root}/sim/customer/{{ref}}?action=confirm",
            "cancel": f"POST {root}/sim/customer/{{ref}}?action=cancel",
            "timeout_s": 10,
        },
        "access_token_ttl_s": state.access_ttl_s,
        "max_wait_s": 30,
        "number_pattern": NUMBER_PATTERN,
        "amount": {"min": 1, "max": 1_000_000},
    }


def write_config(path: Path, data: dict[str, Any], header: str) -> None:
    """Atomically (a reader never sees half a file) and owner-only: it holds client secrets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(f"# {header}\n")
        yaml.safe_dump(data, handle, sort_keys=False)
    os.replace(temporary, path)


def build_parser(
    description: str = "An independent Payments Transactions Service.",
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--config-out", type=Path, required=True, help="target config to write")
    parser.add_argument("--access-ttl", type=int, default=DEFAULT_ACCESS_TTL_S, metavar="S")
    parser.add_argument("--defect", choices=sorted(DEFECTS), default=None)
    parser.add_argument("--choice", choices=sorted(CHOICES), action="append", default=[])
    return parser


async def serve(args: argparse.Namespace, outer_middlewares: Sequence[Any] = ()) -> None:
    """Listen on loopback, write the config, announce, then run until SIGTERM/SIGINT."""
    if args.access_ttl < 1:
        raise SystemExit("--access-ttl must be at least 1")
    state = State(args.access_ttl, args.defect, frozenset(args.choice))
    seed_apps(state)
    runner = web.AppRunner(
        build_app(state, outer_middlewares), access_log=None, shutdown_timeout=0.2
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = runner.addresses[0][1]
    root = f"http://127.0.0.1:{port}"
    header = f"written by tests/foreign/{Path(sys.argv[0]).name}, defect: {args.defect or 'none'}"
    write_config(args.config_out, target_config(state, root), header)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"listening on {root}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(serve(build_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
