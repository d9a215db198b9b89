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
    # -- evtchecks: find, the events list, fields/formats and the lifecycle (issue 20) --
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
}
