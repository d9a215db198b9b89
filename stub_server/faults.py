"""Fault switches and conformant variants: how the stub proves the suites have teeth.

A *fault* breaks one rule of the interface document (or a reference choice), so a self-test can
run the conformance suite or the load reconciliation against a faulty stub and assert that it
notices. A *variant* is a different but conformant choice where the document is silent, so a
self-test can show the suite raises no false alarm against "an implementation that is not the
stub". Every switch is off by default; the names are a stable contract.
"""

from __future__ import annotations

from collections.abc import Iterable

FAULTS: dict[str, str] = {
    "idempotency-ignored": "a reused Idempotency-Key creates a second transaction",
    "idempotency-racy": (
        "check-then-insert with an await between: concurrent requests with one key create "
        "duplicates (sequential reuse is still rejected with 409)"
    ),
    "long-keys-accepted": "Idempotency-Key longer than 32 characters is accepted",
    "query-key-ignored": "the Idempotency-Key query parameter is ignored (a new key is generated)",
    "tokens-never-expire": "the exp claim of access and refresh tokens is not checked",
    "refresh-as-access": "a refresh token is accepted as an access token",
    "signature-not-verified": "JWT signatures are not checked (alg none is accepted)",
    "wrong-kind": "cashout answers and stores kind CASHIN",
    "refs-reused": "every second creation reuses the previous transaction's ref",
    "status-stuck-pending": (
        "confirm/cancel answer 200 but the status stays pending and no processed event is recorded"
    ),
    "cancel-reads-success": "a cancelled transaction reads status success",
    "processed-event-missing": "no transaction:processed event is recorded",
    "filter-ignored": "the events list ignores its status filter",
    "cross-merchant-visible": "find and the events list show other merchants' transactions",
    "privileges-ignored": "any privilege may cashin and cashout",
    "server-error-on-malformed": "a malformed JSON body gives a 500",
    "timestamp-format": (
        "created_at/timestamp rendered without timezone and fraction (2026-11-21 06:44:32)"
    ),
    "drop-acknowledged": (
        "a fraction drop_rate of cashin/cashout answered 200 are not persisted (no row, no event)"
    ),
    "early-expiry": (
        "access tokens are refused 2 s after issue, while expires still promises the full lifetime"
    ),
}

#: How long an access token works under the ``early-expiry`` fault.
EARLY_EXPIRY_S = 2.0

VARIANTS: dict[str, str] = {
    "created-201": "creations answer 201 instead of 200",
    "successful-status": "a confirmed transaction reads status successful instead of success",
    "short-refresh-only": "only /auth/refresh/{token} is served; /auth/agents/refresh is a 404",
    "expires-string": "expires in the token pair is an ISO 8601 date-time string",
    "go-error-body": 'error bodies carry only {"status", "message"}',
    "no-rotation": "refresh tokens are reusable until they expire",
    "events-oldest-first": "the events list is ordered oldest first",
}


class UnknownSwitchError(ValueError):
    """A fault or variant name that the stub does not know; the message lists the valid ones."""


def check_names(names: Iterable[str], registry: dict[str, str], kind: str) -> frozenset[str]:
    """Validate switch names against a registry, failing with the list of valid names."""
    chosen = frozenset(names)
    unknown = sorted(chosen - registry.keys())
    if unknown:
        raise UnknownSwitchError(
            f"unknown {kind} {', '.join(unknown)}; valid {kind}s: {', '.join(registry)}"
        )
    return chosen
