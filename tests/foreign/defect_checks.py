"""Which conformance check names each defect of ``independent.py --defect NAME``.

Kept beside the defects (not inside a test) so a reader sees, for each way an implementation
nobody on the team wrote can be wrong, the rule of the document the suite must blame. The
self-test asserts each named check fails; other checks may fail too where the defect really
breaks them, but the named one must be among the failures.
"""

from __future__ import annotations

#: defect -> the check IDs that must fail against it
DEFECT_CHECKS: dict[str, frozenset[str]] = {
    "key-reuse-executes": frozenset({"IDEM-001"}),
    "expired-token-accepted": frozenset({"AUTH-008"}),
    "wrong-kind-on-cashout": frozenset({"TXN-002"}),
    "client-filter-ignored": frozenset({"EVT-004"}),
    "processed-twice": frozenset({"LIFE-004"}),
    "find-other-merchant": frozenset({"ISO-001"}),
    "no-created-event": frozenset({"LIFE-001"}),
    "refresh-dead": frozenset({"AUTH-009"}),
    "read-only-can-create": frozenset({"PRIV-001"}),
    "total-wrong": frozenset({"EVT-007"}),
    "duplicate-event-ids": frozenset({"FMT-002"}),
    "bearer-ignored": frozenset({"AUTH-005"}),
    "long-key-accepted": frozenset({"IDEM-003"}),
    "cashin-can-cashout": frozenset({"PRIV-003"}),
    "missing-number-accepted": frozenset({"TXN-003"}),
    "find-timestamp-z": frozenset({"FMT-004"}),
    "events-leak-merchants": frozenset({"ISO-002"}),
    "text-errors": frozenset({"FMT-006"}),
    "bad-json-500": frozenset({"ERR-001"}),
    # -- authentication and privileges --
    "secret-case-insensitive": frozenset({"AUTH-002"}),
    "secret-trimmed": frozenset({"AUTH-002"}),
    "refresh-accepts-access": frozenset({"AUTH-015"}),
    "refresh-signature-unchecked": frozenset({"AUTH-015"}),
    "refresh-by-privilege": frozenset({"AUTH-014"}),
    "refresh-merchant-app": frozenset({"PRIV-001", "PRIV-003", "PRIV-004"}),
    "bearer-case-sensitive": frozenset({"AUTH-016"}),
    "agents-refresh-unusable": frozenset({"AUTH-008", "AUTH-009"}),
    "kind-filter-leaks-merchants": frozenset({"ISO-002"}),
    "status-filter-leaks-merchants": frozenset({"ISO-002"}),
    "refresh-merchant-last-app": frozenset({"PRIV-001", "PRIV-002", "PRIV-003"}),
    # -- creations and idempotency --
    # (an over-long key accepted also fails PROP-005 in a full run: the property phase sends one)
    "cashout-long-key-accepted": frozenset({"IDEM-003", "IDEM-012"}),
    "cashout-query-key-ignored": frozenset({"IDEM-004", "IDEM-012", "IDEM-013"}),
    "cashout-key-race": frozenset({"IDEM-005", "IDEM-013"}),
    "cashout-keyless-replayed": frozenset({"IDEM-006"}),
    "cashout-missing-amount-accepted": frozenset({"TXN-003"}),
    "both-channel-keys-joined": frozenset({"IDEM-008"}),
    "differing-keys-ignored": frozenset({"IDEM-009"}),
    "keys-case-insensitive": frozenset({"IDEM-010"}),
    "keys-stripped": frozenset({"IDEM-011"}),
    "query-key-any-length": frozenset({"IDEM-012"}),
    "query-key-race": frozenset({"IDEM-013"}),
    "reuse-names-ref": frozenset({"IDEM-014"}),
    "key-channels-apart": frozenset({"IDEM-004"}),
    # -- find, the events list, fields/formats and the lifecycle --
    "total-counts-transactions": frozenset({"EVT-007"}),
    "cashout-reuses-cashin-ref": frozenset({"FMT-001"}),
    "envelope-event-kind-underscore": frozenset({"EVT-011"}),
    "events-dated-at-creation": frozenset({"LIFE-006"}),
    "snapshot-created-at-is-event-time": frozenset({"FMT-008"}),
    "find-timestamp-now": frozenset({"FMT-009"}),
    "cashout-created-event-says-cashin": frozenset({"LIFE-001", "FMT-008"}),
    "cashout-amount-negative": frozenset({"FIND-001", "FMT-008", "LIFE-001"}),
    "cashout-not-processed": frozenset({"LIFE-002", "LIFE-003"}),
    "find-records-event": frozenset({"EVT-012"}),
    "failed-filter-misses": frozenset({"EVT-006"}),
    # -- what the mutation score showed unseen --
    "pending-fails-on-its-own": frozenset({"LIFE-007"}),
    "huge-amount-shortened": frozenset({"TXN-005"}),
    "chunked-body-500": frozenset({"ERR-004"}),
    "nan-amount-accepted": frozenset({"ERR-001"}),
    "non-ascii-key-refused": frozenset({"IDEM-016"}),
}
