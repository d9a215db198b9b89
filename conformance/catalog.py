"""The check catalog: one stable entry per rule the suite enforces.

The catalog is plain data, kept apart from the tests that implement it, so that ``--list``, the
documentation table and the reports can describe every check without importing pytest, httpx or
schemathesis. Each test in ``conformance/suite`` names its entry with ``@check("ID")``; a self-test
proves that every entry has exactly one implementation and the reverse.

Levels: MUST is what the interface document states or plainly implies; SHOULD is a reference
choice of paysuite or good practice. Profiles: a ``seed`` check runs in both profiles, a
``reference`` check runs only in the reference profile (it checks a choice the document leaves
open) and is skipped with that reason in the seed profile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Level = Literal["MUST", "SHOULD"]
Profile = Literal["seed", "reference"]
PROFILES: tuple[Profile, ...] = ("seed", "reference")


@dataclass(frozen=True)
class Check:
    """One catalog entry."""

    id: str
    level: Level
    section: str
    title: str
    quote: str
    profile: Profile = "seed"

    @property
    def group(self) -> str:
        return self.id.split("-", 1)[0]


def _c(
    id: str, level: Level, section: str, title: str, quote: str, profile: Profile = "seed"
) -> Check:
    return Check(id=id, level=level, section=section, title=title, quote=quote, profile=profile)


_AUTH5 = "Endpoints, 5. Authorize an application"
_AUTH6 = "Endpoints, 6. Refresh tokens"
_CASHIN = "Endpoints, 1. Cashin"
_CASHOUT = "Endpoints, 2. Cashout"
_FIND = "Endpoints, 3. Find a transaction"
_EVENTS = "Endpoints, 4. List transaction events"
_STATES = "States and transitions"
_RESOURCES = "Resources and their fields"
_ERR1 = "Errors, rule 1"
_ERR2 = "Errors, rule 2"

CATALOG: tuple[Check, ...] = (
    # --- Authentication -------------------------------------------------------------------
    _c(
        "AUTH-001",
        "MUST",
        _AUTH5,
        "authorize returns the token pair (access JWT, refresh, expires)",
        "The token is obtained by posting the application's client_id and client_secret to the "
        "authorize endpoint. The response carries access, refresh and expires.",
    ),
    _c(
        "AUTH-002",
        "MUST",
        "Authentication, 2",
        "authorize with a wrong client_secret is rejected",
        "The token is obtained by posting the application's client_id and client_secret to the "
        "authorize endpoint.",
    ),
    _c(
        "AUTH-003",
        "MUST",
        "Authentication, 2",
        "authorize with an unknown client_id is rejected",
        "Clients authenticate with an application (a client_id and client_secret pair) and "
        "exchange it for a JWT access token.",
    ),
    _c(
        "AUTH-004",
        "MUST",
        "Authentication, 3",
        "every protected operation rejects a request without Authorization",
        "Authorize and refresh are called without an Authorization header. The transaction and "
        "event endpoints require it.",
    ),
    _c(
        "AUTH-005",
        "MUST",
        "Authentication, 1",
        "every protected operation rejects a malformed bearer token",
        "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
        "<ACCESS_TOKEN>.",
    ),
    _c(
        "AUTH-006",
        "SHOULD",
        "Authentication, 1",
        "a valid token under another scheme (Basic, Token) is rejected; a bare token is noted",
        "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
        "<ACCESS_TOKEN>. [The document tells the client what to send; the live service accepts "
        "a bare token, which its JavaScript SDK sends.]",
        "reference",
    ),
    _c(
        "AUTH-007",
        "MUST",
        "Authentication, 1",
        "every protected operation rejects a tampered or unsigned token",
        "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
        "<ACCESS_TOKEN>.",
    ),
    _c(
        "AUTH-008",
        "MUST",
        "Authentication, 4",
        "an access token past its lifetime is rejected everywhere; a refreshed one works",
        "Access tokens typically last 15 minutes. After that the client obtains a new pair "
        "through the refresh endpoint with its refresh token, without using the client_secret "
        "again.",
    ),
    _c(
        "AUTH-009",
        "MUST",
        _AUTH6,
        "refresh without Authorization returns a working pair (at least one refresh path)",
        "Method and path: GET {base_url}/auth/agents/refresh/{refresh_token}. [...] its examples "
        "call GET {base_url}/auth/refresh/{refresh_token}. [...] Headers: Accept. No "
        "Authorization header. Response: the token pair.",
    ),
    _c(
        "AUTH-010",
        "MUST",
        "Authentication, 1",
        "a refresh token is not accepted as an access token",
        "Requests are authenticated with a JWT access token, sent as Authorization: Bearer "
        "<ACCESS_TOKEN>.",
    ),
    _c(
        "AUTH-011",
        "SHOULD",
        _AUTH6,
        "both refresh paths are served (RC-9)",
        "Which shape is authoritative is unresolved in the reference; an implementation may "
        "serve both.",
        "reference",
    ),
    _c(
        "AUTH-012",
        "SHOULD",
        _AUTH6,
        "a used refresh token stops working: rotation (RC-10)",
        "After that the client obtains a new pair through the refresh endpoint with its refresh "
        "token.",
        "reference",
    ),
    _c(
        "AUTH-013",
        "SHOULD",
        "Authentication, 4",
        "expires is an integer, the Unix time of the access token's expiry (RC-8)",
        "Format and unit of expires: not shown.",
        "reference",
    ),
    # --- Transactions: creation -----------------------------------------------------------
    _c(
        "TXN-001",
        "MUST",
        _CASHIN,
        "cashin answers the creation response: kind CASHIN, status pending, the amount sent",
        "Response: the transaction creation response with kind = CASHIN and status = pending.",
    ),
    _c(
        "TXN-002",
        "MUST",
        _CASHOUT,
        "cashout answers the creation response: kind CASHOUT, status pending, the amount sent",
        "Response: the transaction creation response with kind = CASHOUT and status = pending.",
    ),
    _c(
        "TXN-003",
        "MUST",
        _CASHIN,
        "a creation missing amount or number is rejected and creates nothing",
        "Body: amount (number, required), number (string, required).",
    ),
    _c(
        "TXN-004",
        "SHOULD",
        "Endpoints",
        "every success answers 200, creations included (RC-2)",
        "HTTP status codes of success responses: not shown.",
        "reference",
    ),
    # --- Idempotency ----------------------------------------------------------------------
    _c(
        "IDEM-001",
        "MUST",
        _ERR1,
        "a reused Idempotency-Key header is rejected and the transaction is not executed twice",
        "A second cashin or cashout request that reuses an idempotency key already used is "
        "rejected, and the transaction is not executed twice.",
    ),
    _c(
        "IDEM-002",
        "MUST",
        _ERR1,
        "a key used by cashin is rejected on cashout (and the reverse)",
        "A second cashin or cashout request that reuses an idempotency key already used is "
        "rejected, and the transaction is not executed twice.",
    ),
    _c(
        "IDEM-003",
        "MUST",
        "Limits",
        "an Idempotency-Key of 33 characters is rejected; one of 32 is accepted",
        "Idempotency-Key length: at most 32 characters (cashin and cashout).",
    ),
    _c(
        "IDEM-004",
        "SHOULD",
        _CASHIN,
        "the Idempotency-Key query parameter is honoured",
        "The examples also pass it as a query parameter named Idempotency-Key.",
    ),
    _c(
        "IDEM-005",
        "MUST",
        _ERR1,
        "concurrent requests with one key create exactly one transaction",
        "Cashin and cashout requests accept an optional idempotency key so that one request "
        "executes at most once.",
    ),
    _c(
        "IDEM-006",
        "MUST",
        _CASHIN,
        "without a key, two identical requests create two transactions",
        "Idempotency-Key: Unique string, maximum length 32. Generated by the service when omitted.",
    ),
    _c(
        "IDEM-007",
        "SHOULD",
        _ERR1,
        "a key is scoped to its merchant: another merchant may use it (RC-6)",
        "A second cashin or cashout request that reuses an idempotency key already used is "
        "rejected. [Whose keys are compared: not shown.]",
        "reference",
    ),
    # --- Find -----------------------------------------------------------------------------
    _c(
        "FIND-001",
        "MUST",
        _FIND,
        "find answers the lookup fields, typed, with the values created",
        "Response: the transaction lookup response. (amount, client, fee, kind, merchant, ref, "
        "status, timestamp)",
    ),
    _c(
        "FIND-002",
        "MUST",
        _FIND,
        "find with an unknown ref is rejected",
        "Path parameter: ref (string), the unique reference key of the transaction.",
    ),
    # --- Lifecycle ------------------------------------------------------------------------
    _c(
        "LIFE-001",
        "MUST",
        _STATES,
        "creation records a transaction:created event with the created data, status pending",
        "(none) -> pending: Event transaction:created is recorded. The response carries ref and "
        "status pending.",
    ),
    _c(
        "LIFE-002",
        "MUST",
        _STATES,
        "after confirmation: success (or successful) and exactly one processed event",
        "pending -> customer confirms -> success (typically). Event transaction:processed is "
        "recorded.",
    ),
    _c(
        "LIFE-003",
        "MUST",
        _STATES,
        "after cancellation: failed and exactly one processed event",
        "pending -> customer cancels -> failed (typically). Event transaction:processed is "
        "recorded.",
    ),
    _c(
        "LIFE-004",
        "MUST",
        _STATES,
        "a processed transaction does not change again",
        "It stays there until the customer confirms or cancels. [...] transaction:processed: "
        "The customer confirms or cancels. A new event is created.",
    ),
    _c(
        "LIFE-005",
        "SHOULD",
        _STATES,
        "a confirmed transaction reads exactly success, never successful (RC-17)",
        "Which of success and successful the service emits is inconsistent in the reference; "
        "treat both as a successful outcome.",
        "reference",
    ),
    # --- Events ---------------------------------------------------------------------------
    _c(
        "EVT-001",
        "MUST",
        _EVENTS,
        "the list answers the envelope: limit, offset, total, transactions",
        "The list response holds limit, offset, total and the transactions array of event records.",
    ),
    _c(
        "EVT-002",
        "MUST",
        _RESOURCES,
        "event records carry the documented fields and types",
        "Event record: event_id, event_kind, created_at, data (ref, kind, fee, merchant, client, "
        "amount, status, created_at, processed_at).",
    ),
    _c(
        "EVT-003",
        "MUST",
        _EVENTS,
        "the ref filter returns exactly the events of that transaction",
        "Query parameters, all optional filters: ref (string), transaction reference key.",
    ),
    _c(
        "EVT-004",
        "MUST",
        _EVENTS,
        "the client filter returns only that customer's events",
        "Query parameters, all optional filters: client (string), customer phone number.",
    ),
    _c(
        "EVT-005",
        "MUST",
        _EVENTS,
        "the kind filter returns only events of that kind",
        "Query parameters, all optional filters: kind (string), CASHIN or CASHOUT.",
    ),
    _c(
        "EVT-006",
        "MUST",
        _EVENTS,
        "the status filter returns only events of that status",
        "Query parameters, all optional filters: status (string), transaction status.",
    ),
    _c(
        "EVT-007",
        "MUST",
        _EVENTS,
        "total matches the events; limit and offset page consistently",
        "total: integer (total number of matching events); limit: integer (page size).",
    ),
    _c(
        "EVT-008",
        "SHOULD",
        "Events",
        "events are listed newest first (RC-22)",
        "Ordering of the events in the list: not shown.",
        "reference",
    ),
    _c(
        "EVT-009",
        "SHOULD",
        _RESOURCES,
        "the envelope echoes the filters and sums the amounts (RC-26, RC-27)",
        "Meaning of the top-level fields amount, client, event-kind, kind, ref and status in the "
        "list response: not shown.",
        "reference",
    ),
    _c(
        "EVT-010",
        "SHOULD",
        _EVENTS,
        "without limit the page holds up to 20 events (RC-23)",
        "Query parameters that set limit and offset: not shown. [The live service's default "
        "page size is 20.]",
        "reference",
    ),
    # --- Privileges and isolation ---------------------------------------------------------
    _c(
        "PRIV-001",
        "MUST",
        "Authentication, 5",
        "a read-only application cannot create transactions",
        "An application has a privilege set: read only, read and write, cashin, or cashout.",
    ),
    _c(
        "PRIV-002",
        "MUST",
        "Authentication, 5",
        "read and read-write can read; writers can create their kind",
        "An application has a privilege set: read only, read and write, cashin, or cashout.",
    ),
    _c(
        "PRIV-003",
        "SHOULD",
        "Authentication, 5",
        "a cashin application cannot cash out",
        "An application has a privilege set: read only, read and write, cashin, or cashout.",
    ),
    _c(
        "PRIV-004",
        "SHOULD",
        "Authentication, 5",
        "a cashout application cannot cash in",
        "An application has a privilege set: read only, read and write, cashin, or cashout.",
    ),
    _c(
        "ISO-001",
        "MUST",
        "Resources and their fields, Application",
        "another merchant's application cannot find a transaction",
        "An application is created by the merchant in the service dashboard.",
    ),
    _c(
        "ISO-002",
        "MUST",
        "Resources and their fields, Application",
        "another merchant's application does not see the transaction's events",
        "An application is created by the merchant in the service dashboard.",
    ),
    # --- Formats --------------------------------------------------------------------------
    _c(
        "FMT-001",
        "MUST",
        _RESOURCES,
        "refs are UUID-shaped and unique across creations",
        "ref: Unique reference key, UUID-shaped, generated at creation.",
    ),
    _c(
        "FMT-002",
        "MUST",
        _RESOURCES,
        "event ids are UUID-shaped and unique",
        "event_id: Unique event identifier, UUID-shaped.",
    ),
    _c(
        "FMT-003",
        "MUST",
        _RESOURCES,
        "creation created_at is an ISO 8601 instant (zone given) with fractional seconds",
        "created_at: ISO 8601 timestamp in UTC with fractional seconds.",
    ),
    _c(
        "FMT-004",
        "MUST",
        _RESOURCES,
        "find timestamp is ISO 8601 with a numeric UTC offset and fractional seconds",
        "timestamp: ISO 8601 timestamp with a numeric UTC offset and fractional seconds.",
    ),
    _c(
        "FMT-005",
        "MUST",
        _RESOURCES,
        "event timestamps are ISO 8601 instants (zone given)",
        "created_at: ISO 8601 timestamp in UTC. data.created_at, data.processed_at: ISO 8601, "
        "UTC, up to nanosecond fraction.",
    ),
    _c(
        "FMT-006",
        "MUST",
        "Endpoints",
        "every response, errors included, is JSON",
        "All bodies are JSON.",
    ),
    _c(
        "FMT-007",
        "SHOULD",
        _RESOURCES,
        "the timestamps the document puts in UTC are written in UTC (Z or +00:00)",
        "created_at: ISO 8601 timestamp in UTC with fractional seconds. [Event] created_at: ISO "
        "8601 timestamp in UTC. [The live service writes +02:00 in creation and data "
        "timestamps: the same instant, another offset.]",
    ),
    # --- Errors ---------------------------------------------------------------------------
    _c(
        "ERR-001",
        "SHOULD",
        _ERR2,
        "malformed input is rejected with a 4xx, never a 5xx",
        "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
    ),
    _c(
        "ERR-002",
        "SHOULD",
        _ERR2,
        'error bodies are {"status", "code", "message"} (RC-3)',
        "Error response bodies, HTTP error status codes and error codes [...]: not shown.",
        "reference",
    ),
    _c(
        "ERR-003",
        "SHOULD",
        _ERR2,
        "error statuses and codes follow the catalogue (RC-4, RC-5)",
        "Error response bodies, HTTP error status codes and error codes, including those of the "
        "rejection in rule 1: not shown.",
        "reference",
    ),
    # --- Property tests (schemathesis) ----------------------------------------------------
    _c(
        "PROP-001",
        "SHOULD",
        "Endpoints",
        "property tests: no server error on any generated input",
        "All bodies are JSON. [every operation, positive and negative data]",
    ),
    _c(
        "PROP-002",
        "SHOULD",
        "Endpoints",
        "property tests: status codes are documented ones",
        "HTTP status codes of success responses: not shown. [seed: any 2xx, any 4xx]",
    ),
    _c(
        "PROP-003",
        "MUST",
        "Endpoints",
        "property tests: responses are application/json",
        "All bodies are JSON.",
    ),
    _c(
        "PROP-004",
        "MUST",
        _RESOURCES,
        "property tests: responses match the documented schemas",
        "Resources and their fields (creation, lookup, event list, token pair).",
    ),
    _c(
        "PROP-005",
        "SHOULD",
        "Endpoints",
        "property tests: invalid requests are rejected",
        "Body: amount (number, required), number (string, required). Idempotency-Key: maximum "
        "length 32.",
    ),
    _c(
        "PROP-006",
        "MUST",
        "Endpoints",
        "property tests: valid requests are accepted",
        "Cashin: a deposit into the merchant account, requested for a customer number.",
    ),
    _c(
        "PROP-007",
        "MUST",
        "Authentication, 3",
        "property tests: no protected operation ignores auth",
        "The transaction and event endpoints require it.",
    ),
    _c(
        "PROP-008",
        "MUST",
        "Authentication, 3",
        "property tests: a missing required header is rejected",
        "Authorization: Bearer <ACCESS_TOKEN>, required.",
    ),
    _c(
        "PROP-009",
        "MUST",
        "Endpoints",
        "property tests, stateful: authorize -> refresh, create -> find -> events chains hold",
        "A transaction is identified by a unique reference key (ref) generated by the service "
        "when the transaction is created.",
    ),
)

_BY_ID = {check.id: check for check in CATALOG}
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(check.group for check in CATALOG))


class UnknownCheckError(ValueError):
    """An --only entry that names no check and no group."""


def get(check_id: str) -> Check:
    return _BY_ID[check_id]


def parse_only(spec: str | Iterable[str] | None) -> frozenset[str] | None:
    """Resolve ``--only`` (IDs and group prefixes, comma-separated) into check IDs.

    ``None`` or an empty value selects everything. An unknown entry raises ``UnknownCheckError``
    naming it, so a typo is a usage error rather than a silently empty run.
    """
    if spec is None:
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    wanted = [item.strip().upper() for item in items if item and item.strip()]
    if not wanted:
        return None
    selected: set[str] = set()
    for item in wanted:
        if item in _BY_ID:
            selected.add(item)
        elif item in GROUPS:
            selected.update(check.id for check in CATALOG if check.group == item)
        else:
            raise UnknownCheckError(
                f"--only: {item!r} is neither a check ID nor a group ({', '.join(GROUPS)})"
            )
    return frozenset(selected)


def section_order() -> list[str]:
    """Sections in the order of the document, for the scorecard."""
    order = [
        "Resources and their fields",
        "Resources and their fields, Application",
        "States and transitions",
        "Endpoints",
        "Endpoints, 1. Cashin",
        "Endpoints, 2. Cashout",
        "Endpoints, 3. Find a transaction",
        "Endpoints, 4. List transaction events",
        "Endpoints, 5. Authorize an application",
        "Endpoints, 6. Refresh tokens",
        "Authentication, 1",
        "Authentication, 2",
        "Authentication, 3",
        "Authentication, 4",
        "Authentication, 5",
        "Events",
        "Errors, rule 1",
        "Errors, rule 2",
        "Limits",
    ]
    extra = [s for s in dict.fromkeys(c.section for c in CATALOG) if s not in order]
    return [s for s in order if any(c.section == s for c in CATALOG)] + extra


def render_list() -> str:
    """The catalog as aligned text, what ``paysuite conform --list`` prints."""
    lines = []
    for section in section_order():
        lines.append(section)
        for check in CATALOG:
            if check.section == section:
                profile = "  [reference]" if check.profile == "reference" else ""
                lines.append(f"  {check.id:<9} {check.level:<6} {check.title}{profile}")
    lines.append(f"{len(CATALOG)} checks")
    return "\n".join(lines)


def render_markdown() -> str:
    """The catalog as a Markdown table, embedded in docs/conformance.md."""
    rows = [
        "| ID | level | profile | section | check |",
        "|---|---|---|---|---|",
    ]
    for check in CATALOG:
        title = check.title.replace("|", "\\|")
        rows.append(f"| {check.id} | {check.level} | {check.profile} | {check.section} | {title} |")
    return "\n".join(rows)
