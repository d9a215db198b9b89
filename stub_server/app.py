"""The aiohttp application: the six operations of the document, the sandbox and ``/healthz``.

``StubApp`` holds what a request needs (settings, store, token service, small caches) so that
handlers read plain attributes; ``build_app`` wires it into an ``aiohttp.web.Application``.
Order of checks on protected routes: 401 (token), 403 (privilege), 415, 413, 400, 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from aiohttp import HttpVersion11, web

from stub_server import signing_key, timefmt
from stub_server.errors import (
    ApiError,
    InFlight,
    json_response,
    make_error_middleware,
    validation_error,
)
from stub_server.faults import EARLY_EXPIRY_S
from stub_server.filters import DEFAULT_LIMIT, EVENT_FILTERS, parse_list_query
from stub_server.ratelimit import AuthorizeGuard
from stub_server.settings import StubSettings
from stub_server.store import (
    AppRecord,
    EventQuery,
    EventRecord,
    KeyReused,
    NewTransaction,
    Store,
    TxRecord,
    uuid4_text,
)
from stub_server.tokens import TokenService

log = logging.getLogger("stub_server")

STUB_KEY: web.AppKey[StubApp] = web.AppKey("stub")  # type: ignore[name-defined]

MAX_KEY_LENGTH = 32
MAX_WEBHOOK_MODE_LENGTH = 64
MAX_NUMBER_LENGTH = 64
MAX_SECRET_LENGTH = 1024
MAX_OFFSET = 2**62
CAN_CASHIN = frozenset({"cashin", "read-write"})
CAN_CASHOUT = frozenset({"cashout", "read-write"})
#: The ``page-size-10`` behaviour's default page size (variant ``lenient``).
LENIENT_DEFAULT_LIMIT = 10
#: The merchant column of every idempotency row under ``global-keys`` (variant ``lenient``): one
#: scope for the whole service. Rows written per merchant stay apart from it.
GLOBAL_KEY_SCOPE = "*"
#: Envelope keys the ``envelope-omitempty`` behaviour keeps even when empty (the document's
#: "The list response holds limit, offset, total and the transactions array").
ENVELOPE_ALWAYS = frozenset({"limit", "offset", "total", "transactions"})
#: Integers with more digits than this stand for "out of bounds" instead of failing the parse
#: (Python refuses int() of more than 4300 digits; a JSON number that long is still JSON).
MAX_INT_DIGITS = 400
_HUGE = 10**MAX_INT_DIGITS
SQLITE_INT = 2**63


def _parse_int(text: str) -> int:
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    return -_HUGE if text.startswith("-") else _HUGE


_json_decode = json.JSONDecoder(parse_int=_parse_int).decode


def _is_text(value: str) -> bool:
    """True when ``value`` is real Unicode text: aiohttp decodes header bytes that are not UTF-8
    to lone surrogates (``surrogateescape``), and JSON's ``\\ud800`` escapes make them too;
    SQLite cannot store them."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class StubApp:
    """Request handlers and the state they share."""

    def __init__(self, settings: StubSettings, store: Store | None = None) -> None:
        self.settings = settings
        self.store = store or Store(settings.db)
        faults = settings.faults
        self.tokens = TokenService(
            signing_key.resolve(settings.jwt_key, self.store, settings.db),
            settings.access_ttl_s,
            settings.refresh_ttl_s,
            check_exp="tokens-never-expire" not in faults,
            check_signature="signature-not-verified" not in faults,
        )
        self.access_subs: tuple[str, ...] = (
            ("access", "refresh") if "refresh-as-access" in faults else ("access",)
        )
        self.early_expiry_s = EARLY_EXPIRY_S if "early-expiry" in faults else None
        self.number_regex = settings.number_regex
        self.tz = settings.tz
        self.broken_time = "timestamp-format" in faults
        # Variants and their behaviours, resolved once so that handlers read plain attributes.
        variant = settings.variant
        self.success_text = "successful" if variant("successful-status") else "success"
        self.creation_status = 201 if variant("created-201") else 200
        self.rotate_refresh = not variant("no-rotation")
        self.expires_string = variant("expires-string")
        self.oldest_first = variant("events-oldest-first")
        #: ``Authorization: <token>`` without ``Bearer `` (paypack-js sends it so).
        self.accept_bare_token = not settings.strict_auth or variant("bare-token")
        self.omit_empty_envelope = variant("envelope-omitempty")
        self.lenient_filters = variant("lenient-filters")
        self.empty_key_absent = variant("empty-key-absent")
        self.any_media_type = variant("any-media-type")
        self.default_limit = LENIENT_DEFAULT_LIMIT if variant("page-size-10") else DEFAULT_LIMIT
        self.global_key_scope = GLOBAL_KEY_SCOPE if variant("global-keys") else None
        self.utc_text: Callable[[int | None], str | None] = timefmt.utc_text
        self.offset_text: Callable[[int, Any], str] = timefmt.offset_text
        if self.broken_time:  # the fault wins over any variant's rendering
            self.utc_text = partial(timefmt.utc_text, broken=True)
            self.offset_text = partial(timefmt.offset_text, broken=True)
        elif variant("nanosecond-timestamps"):
            self.utc_text = timefmt.utc_text_ns
            self.offset_text = timefmt.offset_text_ns
        self._apps: dict[str, AppRecord] = {}
        self._verified: dict[str, bytes] = {}
        self._creations = 0
        self._last_ref: str | None = None
        self._random = random.Random()
        self.in_flight = InFlight()
        self.auth_guard = AuthorizeGuard(settings.authorize_limits)

    # -- helpers --------------------------------------------------------------------------
    def app_record(self, client_id: str) -> AppRecord | None:
        record = self._apps.get(client_id)
        if record is None:
            record = self.store.app(client_id)
            if record is not None:
                self._apps[client_id] = record
        return record

    def authenticate(self, request: web.Request) -> AppRecord:
        header = request.headers.get("Authorization")
        if not header:
            raise ApiError(401, "missing_token", "the Authorization header is missing")
        token = self.token_from_header(header)
        claims = self.tokens.verify(token, self.access_subs)
        if self.early_expiry_s is not None and time.time() - claims["iat"] > self.early_expiry_s:
            raise ApiError(401, "token_expired", "the token has expired")
        record = self.app_record(claims["id"])
        if record is None:
            raise ApiError(401, "invalid_token", "the token names an unknown application")
        return record

    def token_from_header(self, header: str) -> str:
        """The token of ``Bearer <token>``, or (RC-33, unless ``strict_auth``) of a bare
        ``<token>``: paypack-js sends ``Authorization: <token>`` and the live service accepts it.
        A JWT holds no space, so a value without one is a bare token; the scheme word alone
        (``Bearer``) is still a missing token."""
        scheme, space, token = header.partition(" ")
        if not space and self.accept_bare_token and scheme.lower() != "bearer":
            return scheme
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            expected = "'Bearer <token>'"
            if self.accept_bare_token:
                expected += " or a bare '<token>'"
            raise ApiError(401, "missing_token", f"the Authorization header must be {expected}")
        return token

    def status_text(self, status: str) -> str:
        return self.success_text if status == "success" else status

    async def read_json(self, request: web.Request) -> dict[str, Any]:
        if request.content_type != "application/json" and not self.any_media_type:
            raise ApiError(
                415, "unsupported_media_type", "the request body must be application/json"
            )
        length = request.content_length
        if length is not None and length > self.settings.max_body_bytes:
            raise ApiError(
                413,
                "payload_too_large",
                f"the request body exceeds {self.settings.max_body_bytes} bytes",
            )
        try:
            async with asyncio.timeout(self.settings.body_timeout_s):
                raw = await request.read()
        except TimeoutError:  # a slow body (slowloris) must not hold a handler for ever
            raise ApiError(
                408,
                "request_timeout",
                f"the request body did not arrive within {self.settings.body_timeout_s:g} s",
                headers={"Connection": "close"},
            ) from None
        except web.RequestPayloadError as exc:  # e.g. Content-Encoding: gzip on plain bytes
            reason = " ".join(str(exc).split()).removeprefix("400, message: ")
            raise ApiError(
                400, "malformed_json", f"the request body cannot be decoded: {reason}"
            ) from None
        except ConnectionError:  # the client went away mid-body; nobody reads this answer
            raise ApiError(400, "malformed_json", "the request body ended early") from None
        try:
            body = _json_decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
        except (ValueError, RecursionError):
            if "server-error-on-malformed" in self.settings.faults:
                raise RuntimeError("fault server-error-on-malformed: unparsed body") from None
            raise ApiError(400, "malformed_json", "the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "malformed_json", "the request body must be a JSON object")
        return body

    def render_lookup(self, tx: TxRecord) -> dict[str, Any]:
        return {
            "amount": tx.amount,
            "client": tx.client,
            "fee": tx.fee,
            "kind": tx.kind,
            "merchant": tx.merchant,
            "ref": tx.ref,
            "status": self.status_text(tx.status),
            "timestamp": self.offset_text(tx.created_us, self.tz),
        }

    def render_event(self, ev: EventRecord) -> dict[str, Any]:
        utc_text = self.utc_text
        return {
            "event_id": ev.event_id,
            "event_kind": ev.event_kind,
            "created_at": utc_text(ev.created_us),
            "data": {
                "ref": ev.ref,
                "kind": ev.kind,
                "fee": ev.fee,
                "merchant": ev.merchant,
                "client": ev.client,
                "amount": ev.amount,
                "status": self.status_text(ev.status),
                "created_at": utc_text(ev.tx_created_us),
                "processed_at": utc_text(ev.processed_us),
            },
        }

    def token_pair_body(self, record: AppRecord) -> dict[str, Any]:
        pair = self.tokens.issue(record.client_id, record.merchant, record.privilege)
        expires: int | str = pair.access_exp
        if self.expires_string:
            expires = timefmt.utc_text(pair.access_exp * 1_000_000) or ""
        return {"access": pair.access, "refresh": pair.refresh, "expires": expires}

    # -- authentication -------------------------------------------------------------------
    async def authorize(self, request: web.Request) -> web.Response:
        body = await self.read_json(request)
        values = {}
        for name in ("client_id", "client_secret"):
            value = body.get(name)
            if value is None:
                raise validation_error(name, "is required")
            if not isinstance(value, str):
                raise validation_error(name, "must be a string")
            values[name] = value
        client_id, secret = values["client_id"], values["client_secret"]
        refused = ApiError(401, "invalid_credentials", "unknown client_id or wrong client_secret")
        if len(secret) > MAX_SECRET_LENGTH:  # refused unhashed, whoever the client_id names
            raise refused
        known = len(client_id) <= 128 and _is_text(client_id)
        record = self.app_record(client_id) if known else None
        fingerprint = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()
        if record is None or self._verified.get(client_id) != fingerprint:
            # RC-38: limited, queued, and the same work for known and unknown client_ids
            await self.auth_guard.admit(client_id, request.remote)
            stored = record.secret_hash if record is not None else None
            if not await self.auth_guard.check(secret, stored) or record is None:
                raise refused
            self._verified[client_id] = fingerprint
        return json_response(self.token_pair_body(record))

    async def refresh(self, request: web.Request) -> web.Response:
        claims = self.tokens.verify(request.match_info["token"], "refresh")
        record = self.app_record(claims["id"])
        if record is None:
            raise ApiError(401, "invalid_token", "the token names an unknown application")
        if self.rotate_refresh:
            jti = claims.get("jti")
            exp = claims.get("exp")
            if not isinstance(jti, str) or not isinstance(exp, int):
                raise ApiError(401, "invalid_token", "the token is invalid")
            if not self.store.use_refresh(jti, exp):
                raise ApiError(401, "invalid_token", "the refresh token was already used")
        return json_response(self.token_pair_body(record))

    # -- transactions ---------------------------------------------------------------------
    def idempotency_key(self, request: web.Request) -> str:
        """The key that scopes this create: the header's, else the query parameter's (RC-6).

        Every key the client sent is validated, the losing one too: a 40-character query key
        beside a valid header is still a request the document says to reject. Under
        ``empty-key-absent`` an empty key counts as not sent, so a key is generated.
        """
        faults = self.settings.faults
        sources = [("header", request.headers.getall("Idempotency-Key", []))]
        if "query-key-ignored" not in faults:
            sources.append(("query parameter", request.query.getall("Idempotency-Key", [])))
        keys: list[str] = []
        for where, values in sources:
            if len(values) > 1:  # which one would the client expect us to honour? refuse both
                raise ApiError(
                    400,
                    "ambiguous_idempotency_key",
                    f"Idempotency-Key: sent {len(values)} times as a {where}; send it once",
                )
            keys += values
        if self.empty_key_absent:
            keys = [key for key in keys if key]
        for key in keys:
            if key == "":
                raise ApiError(400, "invalid_idempotency_key", "Idempotency-Key: must not be empty")
            if not _is_text(key):
                raise ApiError(
                    400, "invalid_idempotency_key", "Idempotency-Key: must be UTF-8 text"
                )
            control = _first_control(key)
            if control is not None:
                raise ApiError(
                    400,
                    "invalid_idempotency_key",
                    f"Idempotency-Key: must not contain control characters (U+{control:04X})",
                )
            if len(key) > MAX_KEY_LENGTH and "long-keys-accepted" not in faults:
                raise ApiError(
                    400,
                    "invalid_idempotency_key",
                    f"Idempotency-Key: must be at most {MAX_KEY_LENGTH} characters, got {len(key)}",
                )
        return keys[0] if keys else uuid.uuid4().hex

    def validate_amount(self, body: dict[str, Any]) -> int | float:
        if "amount" not in body or body["amount"] is None:
            raise validation_error("amount", "is required")
        amount = body["amount"]
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            raise validation_error("amount", "must be a number")
        if isinstance(amount, float) and not math.isfinite(amount):
            raise validation_error("amount", "must be a finite number")
        s = self.settings
        if amount < s.amount_min:
            raise validation_error("amount", f"must be at least {_plain(s.amount_min)}")
        if amount > s.amount_max or (isinstance(amount, int) and amount >= SQLITE_INT):
            raise validation_error("amount", f"must be at most {_plain(s.amount_max)}")
        return amount

    def validate_number(self, body: dict[str, Any]) -> str:
        if "number" not in body or body["number"] is None:
            raise validation_error("number", "is required")
        number = body["number"]
        if not isinstance(number, str):
            raise validation_error("number", "must be a string")
        if (
            len(number) > MAX_NUMBER_LENGTH
            or not _is_text(number)
            or not self.number_regex.fullmatch(number)
        ):
            raise validation_error(
                "number", f"must be a phone number matching {self.settings.number_pattern}"
            )
        return number

    async def create(self, request: web.Request, kind: str) -> web.Response:
        record = self.authenticate(request)
        allowed = CAN_CASHIN if kind == "CASHIN" else CAN_CASHOUT
        faults = self.settings.faults
        if record.privilege not in allowed and "privileges-ignored" not in faults:
            raise ApiError(
                403,
                "insufficient_privilege",
                f"privilege {record.privilege!r} does not allow {kind.lower()}",
            )
        body = await self.read_json(request)
        key = self.idempotency_key(request)
        amount = self.validate_amount(body)
        number = self.validate_number(body)
        mode = request.headers.get("X-Webhook-Mode") or None  # "" is none (RC-35)
        if mode is not None and len(mode) > MAX_WEBHOOK_MODE_LENGTH:
            raise validation_error(
                "X-Webhook-Mode", f"must be at most {MAX_WEBHOOK_MODE_LENGTH} characters"
            )
        if mode is not None and not _is_text(mode):
            raise validation_error("X-Webhook-Mode", "must be UTF-8 text")
        if kind == "CASHOUT" and "wrong-kind" in faults:
            kind = "CASHIN"
        ref = uuid4_text()
        if "refs-reused" in faults:
            self._creations += 1
            if self._creations % 2 == 0 and self._last_ref is not None:
                ref = self._last_ref
            self._last_ref = ref
        created = timefmt.now_us()
        due_us, due_status = self.due_for(number, created)
        key_scope = self.global_key_scope or record.merchant
        key_mode = "strict"
        if "idempotency-ignored" in faults:
            key_mode = "overwrite"
        elif "idempotency-racy" in faults:
            if self.store.key_used(key_scope, key):
                raise _key_reused(key)
            await asyncio.sleep(0.02)  # the deliberate window between check and insert
            key_mode = "overwrite"
        dropped = "drop-acknowledged" in faults and self._random.random() < self.settings.drop_rate
        if not dropped:
            try:
                committed = self.store.create_transaction(
                    NewTransaction(
                        ref=ref,
                        merchant=record.merchant,
                        app_id=record.client_id,
                        kind=kind,
                        amount=amount,
                        client=number,
                        fee=round(amount * self.settings.fee_rate, 2),
                        created_us=created,
                        webhook_mode=mode,
                        key=key,
                        key_scope=key_scope,
                        due_us=due_us,
                        due_status=due_status,
                    ),
                    key_mode=key_mode,
                )
            except KeyReused:
                raise _key_reused(key) from None
            await committed
        return json_response(
            {
                "amount": amount,
                "created_at": self.utc_text(created),
                "kind": kind,
                "ref": ref,
                "status": "pending",
            },
            self.creation_status,
        )

    def due_for(self, number: str, created_us: int) -> tuple[int, str]:
        """When and how the simulated customer resolves a new transaction."""
        s = self.settings
        outcome, delay_s = s.auto_resolve.for_number(number)
        if outcome == "none" or delay_s >= s.pending_timeout_s:
            return created_us + int(s.pending_timeout_s * 1_000_000), "failed"
        return created_us + int(delay_s * 1_000_000), outcome

    async def cashin(self, request: web.Request) -> web.Response:
        return await self.create(request, "CASHIN")

    async def cashout(self, request: web.Request) -> web.Response:
        return await self.create(request, "CASHOUT")

    async def find(self, request: web.Request) -> web.Response:
        record = self.authenticate(request)
        ref = request.match_info["ref"]
        merchant = None if "cross-merchant-visible" in self.settings.faults else record.merchant
        tx = self.store.find(ref, merchant)
        if tx is None:
            raise ApiError(404, "transaction_not_found", f"no transaction with ref {ref!r}")
        return json_response(self.render_lookup(tx))

    # -- events ---------------------------------------------------------------------------
    async def list_events(self, request: web.Request) -> web.Response:
        record = self.authenticate(request)
        f = parse_list_query(
            request.query,
            EVENT_FILTERS,
            lenient=self.lenient_filters,
            default_limit=self.default_limit,
        )
        given = f.given
        faults = self.settings.faults
        q = EventQuery(
            merchant=None if "cross-merchant-visible" in faults else record.merchant,
            status=None if "filter-ignored" in faults else f.status,
            client=f.client,
            ref=f.ref,
            kind=f.kind,
            event_kind=f.event_kind,
            from_us=f.from_us,
            to_us=f.to_us,
            limit=f.limit,
            offset=min(f.offset, MAX_OFFSET),
            oldest_first=self.oldest_first,
        )
        total, amount, events = self.store.list_events(q)
        envelope = {
            "amount": amount,
            "client": given.get("client", ""),
            "event-kind": given.get("event-kind", ""),
            "kind": given.get("kind", ""),
            "limit": f.limit,
            "offset": f.offset,
            "ref": given.get("ref", ""),
            "status": given.get("status", ""),
            "total": total,
            "transactions": [self.render_event(ev) for ev in events],
        }
        if self.omit_empty_envelope:  # Go's omitempty: "" and 0 are left out
            envelope = {k: v for k, v in envelope.items() if v or k in ENVELOPE_ALWAYS}
        return json_response(envelope)

    # -- sandbox and health ---------------------------------------------------------------
    async def sandbox(self, request: web.Request) -> web.Response:
        ref = request.match_info["ref"]
        action = request.match_info["action"]
        tx = self.store.find(ref, None)
        if tx is None:
            raise ApiError(404, "transaction_not_found", f"no transaction with ref {ref!r}")
        if tx.status != "pending":
            raise ApiError(
                409,
                "transaction_not_pending",
                f"transaction {ref} is already {self.status_text(tx.status)}",
            )
        faults = self.settings.faults
        if "status-stuck-pending" not in faults:
            status = "success" if action == "confirm" else "failed"
            if action == "cancel" and "cancel-reads-success" in faults:
                status = "success"
            if not self.process(tx.id, status):
                raise ApiError(409, "transaction_not_pending", f"transaction {ref} is not pending")
            tx = self.store.find(ref, None) or tx
        return json_response(self.render_lookup(tx))

    def process(self, tx_id: int, status: str) -> bool:
        return self.store.process(
            tx_id,
            status,
            timefmt.now_us(),
            record_event="processed-event-missing" not in self.settings.faults,
        )

    async def healthz(self, request: web.Request) -> web.Response:
        return json_response({"status": "ok"})

    # -- background resolution ------------------------------------------------------------
    async def resolve_due_forever(self, max_sleep_s: float = 0.1) -> None:
        """Auto-resolution and pending time-out, from the indexed due-time column.

        The due time is stored with the transaction, so resolution survives a restart.
        """
        prune_at = 0.0
        loop = asyncio.get_running_loop()
        while True:
            try:
                self.resolve_due()
                if loop.time() >= prune_at:
                    self.store.prune_refresh(timefmt.now_us() // 1_000_000)
                    prune_at = loop.time() + 60
                next_due = self.store.next_due()
            except Exception:  # keep resolving after a transient database error
                log.exception("auto-resolution pass failed")
                next_due = None
            delay = max_sleep_s
            if next_due is not None:
                delay = min(max_sleep_s, max(0.005, (next_due - timefmt.now_us()) / 1e6))
            await asyncio.sleep(delay)

    def resolve_due(self) -> int:
        now = timefmt.now_us()
        due = [(tx_id, status or "failed") for tx_id, status in self.store.due(now)]
        if not due:
            return 0
        return self.store.process_many(
            due, now, record_event="processed-event-missing" not in self.settings.faults
        )


def _first_control(text: str) -> int | None:
    """The code point of the first control character (C0, DEL, C1) in ``text``, if any: a key
    with a NUL or a newline in it is a client bug or an injection, never a deliberate key."""
    for char in text:
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            return code
    return None


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _key_reused(key: str) -> ApiError:
    return ApiError(409, "idempotency_key_reused", f"Idempotency-Key {key!r} was already used")


async def expect_continue(request: web.Request) -> None:
    """``Expect: 100-continue`` gets its interim answer; any other expectation is ignored, which
    RFC 9110 section 10.1.1 allows, instead of aiohttp's plain-text 417."""
    expect = request.headers.get("Expect", "")
    if request.version == HttpVersion11 and expect.lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the interim answer is not part of the response


def build_app(stub: StubApp, *, background: bool = True) -> web.Application:
    """Wire ``stub`` into an aiohttp application; ``background`` runs auto-resolution."""
    settings = stub.settings
    app = web.Application(
        middlewares=[make_error_middleware(settings.variant("go-error-body"), stub.in_flight)],
        client_max_size=settings.max_body_bytes,
    )
    app[STUB_KEY] = stub
    r = app.router
    routes = [
        ("POST", "/api/auth/agents/authorize", stub.authorize),
        ("GET", "/api/auth/refresh/{token}", stub.refresh),
        ("POST", "/api/transactions/cashin", stub.cashin),
        ("POST", "/api/transactions/cashout", stub.cashout),
        ("GET", "/api/transactions/find/{ref}", stub.find),
        ("GET", "/api/events/transactions", stub.list_events),
        ("GET", "/healthz", stub.healthz),
    ]
    from stub_server.sdk_routes import sdk_routes  # imports this module: not at the top

    routes.extend(sdk_routes(stub))  # the published SDKs' routes beyond the document
    if not settings.variant("short-refresh-only"):
        routes.append(("GET", "/api/auth/agents/refresh/{token}", stub.refresh))
    if settings.sandbox:
        sandbox_path = "/_sandbox/transactions/{ref}/{action:confirm|cancel}"
        routes.append(("POST", sandbox_path, stub.sandbox))
    for method, path, handler in routes:
        if method == "GET":
            r.add_get(path, handler, expect_handler=expect_continue)
        else:
            r.add_post(path, handler, expect_handler=expect_continue)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        task = None
        if background and "status-stuck-pending" not in settings.faults:
            task = asyncio.create_task(stub.resolve_due_forever())
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        stub.auth_guard.close()
        stub.store.close()

    app.cleanup_ctx.append(lifecycle)
    return app
