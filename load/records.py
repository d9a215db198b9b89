"""The records of load.json (schema ``paysuite-load/1``), one TypedDict per object, so the modules
that fill it (shapes, timeline, reconciliation, finalize) and those that read it agree on its
keys. They are JSON as written: plain dicts at run time."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class VerdictRecord(TypedDict):
    """A threshold's verdict as load.json writes it (``slo.Verdict.to_dict``)."""

    operation: str
    metric: str
    threshold: float
    observed: float | None
    passed: bool
    note: str


class SLORecord(TypedDict):
    thresholds: dict[str, dict[str, float]]
    verdicts: list[VerdictRecord]


class _StepFigures(TypedDict):
    """What a ramp step and its knee both say of the step."""

    step: int
    users: int
    rps: float
    p95_ms: float | None
    error_ratio: float


class RampStep(_StepFigures):
    start_s: float
    duration_s: float
    requests: int
    failures: int
    breached: list[str]


class Knee(_StepFigures):
    """Where the ramp's throughput stopped growing (``kind``: knee, or plateau)."""

    kind: str
    why: str


class ShapeSummary(TypedDict, total=False):
    """What a shape learned (``CatalogShape.summary``; the ramp's keys only for the ramp)."""

    stop_reason: str
    steps: list[RampStep]
    knee: Knee | None
    plateau: Knee | None
    slo_break: RampStep | None
    max_sustainable: RampStep | None
    step_s: float | None


class TimeToProcessedStats(TypedDict):
    count: int
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    max_s: float | None
    by_status: dict[str, int]
    timeouts: NotRequired[int]


class Point(TypedDict):
    """One timeline sample's rates and latencies (ms)."""

    rps: float
    fail_s: float
    p50: float | None
    p95: float | None
    p99: float | None


class OperationPoint(Point):
    requests: int


class Sample(Point):
    t: float
    users: int
    requests: int
    ops: dict[str, OperationPoint]


class Abort(TypedDict):
    """``--abort-on-fail``: when, and the threshold that could no longer be met."""

    at_s: float
    reason: str
    verdict: VerdictRecord


class TimelineRecord(TypedDict):
    interval_s: float | None
    peak_users: int
    samples: list[Sample]


class Reconciliation(TypedDict, total=False):
    """load.json's ``reconciliation`` (``reconcile.reconcile``, its parts each a partial one:
    the ledger's anomalies, the storm's count, the webhooks'; docs/load.md says each count)."""

    keys: int
    duplicate_keys: int
    duplicate_key_samples: list[dict[str, str | list[str]]]
    reused_refs: int
    reused_ref_samples: list[dict[str, str | list[str]]]
    storm_keys_checked: int
    server_duplicate_keys: int
    server_duplicate_samples: list[dict[str, str | list[str]]]
    storm_check_error: str
    webhook_events: int
    webhook_delivered: int
    webhook_undelivered: int
    webhook_rejected: int
    webhook_rejected_reasons: list[str]
    webhook_samples: list[dict[str, str]]
    webhook_check_error: str
    acknowledged: int
    unique_refs: int
    checked: int
    found: int
    missing: int
    missing_created_event: int
    mismatched: int
    errors: int
    error_kinds: dict[str, int]
    unchecked: int
    target_gone: bool
    interrupted: bool
    samples: list[dict[str, str]]
    elapsed_s: float
    authorizes: int
    throttling: dict[str, float | int]
    lost: int
    reasons: list[str]
    passed: bool
    acknowledged_without_ref: int
    nothing_to_check: bool


class OperationSummary(TypedDict):
    requests: int
    failures: int
    rps: float
    error_ratio: NotRequired[float]
    p50_ms: NotRequired[float | None]
    p95_ms: NotRequired[float | None]
    p99_ms: NotRequired[float | None]


class LoadSummary(TypedDict, total=False):
    """load.json: a run's (``finalize.finalize``), or one without load (``runner.ended_early``)."""

    schema: str
    shape: str
    profile: str
    target: str
    tls: str
    run_id: str
    started_at: float
    duration_s: float
    users: int
    peak_users: int
    shape_users: int
    stop_reason: str
    no_load: bool
    aborted: Abort | None
    operations: dict[str, OperationSummary]
    total: OperationSummary
    auth: dict[str, int]
    slo: SLORecord
    slo_passed: bool
    failed_because: list[str]
    reconciliation: Reconciliation
    failures: list[dict[str, str | int]]
    timeline: TimelineRecord
    counters: dict[str, int]
    ledger: dict[str, int | list[str]]
    mix: dict[str, float]
    exit_code: int
    verdict: str
    reason: str
    files: dict[str, str | None]
    ramp: ShapeSummary
    knee: Knee | None
    time_to_processed: TimeToProcessedStats
    idempotency: dict[str, int]
