"""The fault and variant catalog: how the stub proves the suites have teeth (pure data).

A *fault* breaks one rule of the document (or a reference choice): ``trips`` is the exact set of
conformance checks it must fail and no other. A *variant* is a different but conformant choice
where the document is silent: ``differs_on`` is the set of reference-profile checks expected to
notice it (the seed profile must notice none). Composites (``live``, ``lenient``) are lists of
variants and ``BEHAVIOURS``; the stub only asks "is switch X on?" (``expand_variants``), so a
composite needs no code of its own. ``fault_injection`` is where the faults bite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    """``load_only``: the load suite's reconciliation or token renewal catches it; it breaks no
    conformance check. ``interleaved``: which checks it trips beyond ``trips`` depends on how
    the run's requests interleave at the target (a fault counting every creation the stub
    receives), so its exact set is proven on a run one after another (``--concurrency 1``)."""

    description: str
    trips: frozenset[str] = frozenset()
    load_only: bool = False
    interleaved: bool = False


@dataclass(frozen=True)
class Variant:
    """``parts``: a composite's variants and behaviours; its ``differs_on`` is their union.
    ``noted_by``: checks that tell the variant apart by a note, not a verdict, where neither
    the document nor a reference choice says what to do (whether a refreshed pair's access token
    still works)."""

    description: str
    differs_on: frozenset[str] = frozenset()
    parts: tuple[str, ...] = ()
    noted_by: frozenset[str] = frozenset()


def _ids(*check_ids: str) -> frozenset[str]:
    return frozenset(check_ids)


#: What a key reused and executed again trips: every channel and timing of a reuse.
_EVERY_REUSE = _ids(
    *("IDEM-001", "IDEM-002", "IDEM-004", "IDEM-005"),
    *("IDEM-008", "IDEM-009", "IDEM-013", "IDEM-016"),
)

FAULTS: dict[str, Fault] = {
    "idempotency-ignored": Fault(
        "a reused Idempotency-Key creates a second transaction",
        _EVERY_REUSE,
    ),
    "idempotency-rejected-but-executed": Fault(
        "a reused Idempotency-Key is answered 409 as the rule says, but the transaction is "
        "created anyway",
        _EVERY_REUSE,
    ),
    "key-reuse-other-kind-executes": Fault(
        "a key reused on the other kind (a cashin's key on a cashout, or the reverse) is answered "
        "409 as the rule says, but that transaction is created anyway; a reuse on the same kind "
        "is rejected and creates nothing",
        _ids("IDEM-002", "IDEM-004"),
    ),
    "idempotency-racy": Fault(
        "check-then-insert with an await between: concurrent requests with one key create "
        "duplicates (sequential reuse is still rejected with 409)",
        _ids("IDEM-005", "IDEM-013"),
    ),
    "long-keys-accepted": Fault(
        "Idempotency-Key longer than 32 characters is accepted", _ids("IDEM-003", "IDEM-012")
    ),
    "query-key-ignored": Fault(
        "the Idempotency-Key query parameter is ignored (a new key is generated)",
        _ids("IDEM-004", "IDEM-012", "IDEM-013", "IDEM-016"),
    ),
    "tokens-never-expire": Fault(
        "the exp claim of access and refresh tokens is not checked", _ids("AUTH-008")
    ),
    "refresh-as-access": Fault("a refresh token is accepted as an access token", _ids("AUTH-010")),
    "signature-not-verified": Fault(
        "JWT signatures are not checked (alg none is accepted)",
        _ids("AUTH-007", "AUTH-015"),  # refresh tokens too: refresh takes a forged one
    ),
    "wrong-kind": Fault(
        "cashout answers and stores kind CASHIN",
        # the stateful chain: find answers another kind than sent; FIND-001 and LIFE-001 judge
        # a cashout too (find and the created event read CASHIN)
        _ids("TXN-002", "PROP-009", "FIND-001", "LIFE-001"),
    ),
    "refs-reused": Fault(
        "every second creation reuses the previous transaction's ref",
        _ids("FMT-001", "IDEM-006"),  # IDEM-006: three keyless creations answered two refs
        # which creation is "every second" one depends on how the checks' creations interleave:
        # at once, merchant B's creation may be answered merchant A's ref (IDEM-014 sees a leak)
        interleaved=True,
    ),
    "status-stuck-pending": Fault(
        "confirm/cancel answer 200 but the status stays pending and no processed event is recorded",
        _ids("LIFE-002", "LIFE-003"),
    ),
    "cancel-reads-success": Fault("a cancelled transaction reads status success", _ids("LIFE-003")),
    "processed-changes-again": Fault(
        "a second confirm or cancel of a processed transaction changes its status again (no new "
        "event is recorded)",
        _ids("LIFE-004"),
    ),
    "find-status-disagrees": Fault(
        "find answers the opposite outcome of a processed transaction (success <-> failed) while "
        "its transaction:processed event keeps the real one",
        _ids("LIFE-002", "LIFE-003"),
    ),
    "processed-event-missing": Fault(
        "no transaction:processed event is recorded", _ids("LIFE-002", "LIFE-003")
    ),
    "filter-ignored": Fault("the events list ignores its status filter", _ids("EVT-006")),
    "cross-merchant-visible": Fault(
        "find and the events list show other merchants' transactions", _ids("ISO-001", "ISO-002")
    ),
    "privileges-ignored": Fault(
        "any privilege may cashin and cashout", _ids("PRIV-001", "PRIV-003", "PRIV-004")
    ),
    "server-error-on-malformed": Fault("a malformed JSON body gives a 500", _ids("ERR-001")),
    "timestamp-format": Fault(
        "created_at/timestamp rendered without timezone and fraction (2026-11-21 06:44:32)",
        _ids("FMT-003", "FMT-004", "FMT-005", "PROP-004"),
    ),
    "drop-acknowledged": Fault(
        "a fraction drop_rate of cashin/cashout answered 200 are not persisted (no row, no event)",
        load_only=True,
    ),
    "early-expiry": Fault(
        "access tokens are refused 2 s after issue, while expires still promises the full lifetime",
        load_only=True,
    ),
    # -- webhook delivery (RC-40); the WEBHOOK checks run when the target config has webhooks --
    "webhook-bad-signature": Fault(
        "webhook deliveries are signed with a secret other than the endpoint's",
        _ids("WEBHOOK-002"),
    ),
    "webhook-no-retry": Fault(
        "a failed webhook delivery is abandoned at once: no retry", _ids("WEBHOOK-005")
    ),
    "webhook-duplicate-new-id": Fault(
        "every delivered event is delivered a second time under a new event_id",
        _ids("WEBHOOK-003"),
    ),
    "webhook-out-of-order": Fault(
        "a transaction's created delivery waits for its processed one, which is sent first",
        _ids("WEBHOOK-004"),
    ),
    "webhook-live-signature-only": Fault(
        "deliveries carry only X-Paypack-Signature (no timestamp: a captured one replays)",
        _ids("WEBHOOK-006"),
    ),
}

OUT_OF_ORDER_HOLD_S = 30.0
BAD_SIGNATURE_SUFFIX = "-not-the-endpoint-secret"
EARLY_EXPIRY_S = 2.0

#: Switches that only composites turn on. Their ``differs_on`` is the best current guess of the
#: reference check that notices each; an empty set means no reference check notices it yet.
BEHAVIOURS: dict[str, Variant] = {
    "bare-token": Variant(
        "a token sent bare in Authorization (no 'Bearer ' prefix) is accepted, as paypack-js "
        "sends it",
        _ids(),  # the reference choice since the live service accepts it: AUTH-006 notes it
    ),
    "nanosecond-timestamps": Variant(
        "timestamps carry 9 fraction digits instead of 6 (the document allows up to nanoseconds)",
        _ids("PROP-004"),  # the reference schema's x-reference-pattern wants exactly 6 digits
    ),
    "envelope-omitempty": Variant(
        "the events list envelope omits amount, client, event-kind, kind, ref and status when "
        "empty or not filtered (Go omitempty); limit, offset, total, transactions stay",
        _ids("EVT-009", "PROP-004"),  # the reference schema's x-reference-required
    ),
    "lenient-filters": Variant(
        "an unknown status, kind or event-kind filter value gives an empty list, not a 400",
        _ids("PROP-005"),
    ),
    "empty-key-absent": Variant(
        "an empty Idempotency-Key counts as absent (a key is generated), not a 400",
        _ids("PROP-005", "ERR-002", "ERR-003"),  # the catalogue's empty key: a 2xx, no error
    ),
    "any-media-type": Variant(
        "any request Content-Type (or none) is accepted and the body parsed as JSON, no 415",
        _ids("PROP-005", "ERR-002", "ERR-003"),  # the catalogue's JavaScript body: a 2xx
    ),
    "page-size-10": Variant(
        "the events list's default page size is 10 instead of 20",
        _ids("EVT-010"),
    ),
    "global-keys": Variant(
        "idempotency keys are scoped to the whole service, not per merchant: a key used by one "
        "merchant is rejected for another",
        _ids("IDEM-007"),
    ),
}

_SIMPLE_VARIANTS: dict[str, Variant] = {
    "created-201": Variant("creations answer 201 instead of 200", _ids("TXN-004")),
    "successful-status": Variant(
        "a confirmed transaction reads status successful instead of success", _ids("LIFE-005")
    ),
    "short-refresh-only": Variant(
        "only /auth/refresh/{token} is served; /auth/agents/refresh is a 404", _ids("AUTH-011")
    ),
    "expires-string": Variant(
        "expires in the token pair is an ISO 8601 date-time string", _ids("AUTH-013")
    ),
    "go-error-body": Variant(
        'error bodies carry only {"status", "message"}',
        _ids("ERR-002", "ERR-003", "ERR-007"),  # ERR-007: the stalled body's 408 has no code
    ),
    "no-rotation": Variant("refresh tokens are reusable until they expire", _ids("AUTH-012")),
    "revoke-on-refresh": Variant(
        "a used refresh token revokes the access token issued with it (401 invalid_token)",
        noted_by=_ids("AUTH-009"),
    ),
    "events-oldest-first": Variant("the events list is ordered oldest first", _ids("EVT-008")),
}


def _composite(description: str, *parts: str) -> Variant:
    known = {**_SIMPLE_VARIANTS, **BEHAVIOURS}
    differs: frozenset[str] = frozenset()
    for part in parts:
        differs |= known[part].differs_on  # a KeyError here is a typo in this module
    return Variant(description, differs, parts)


VARIANTS: dict[str, Variant] = {
    **_SIMPLE_VARIANTS,
    # The one place that says what "the live service" is (docs/reference-choices.md, *What the
    # live service does*); expires is already an integer by default (RC-8), so no switch is
    # needed for it.
    "live": _composite(
        "behaves as the live service does (docs/reference-choices.md): bare tokens, only "
        "/auth/refresh, successful, nanosecond timestamps, envelope keys omitted when empty, "
        'creations 201, {"status", "message"} error bodies',
        "bare-token",
        "short-refresh-only",
        "successful-status",
        "nanosecond-timestamps",
        "envelope-omitempty",
        "created-201",
        "go-error-body",
    ),
    # Unknown body fields are ignored by default already (RC-30): no switch for that.
    "lenient": _composite(
        "lenient wherever the document is silent: unknown filter values give an empty list, an "
        "empty Idempotency-Key counts as absent, any media type, default page size 10, oldest "
        "first, idempotency keys global, bare tokens",
        "lenient-filters",
        "empty-key-absent",
        "any-media-type",
        "page-size-10",
        "events-oldest-first",
        "global-keys",
        "bare-token",
    ),
}


class UnknownSwitchError(ValueError):
    """The message lists the valid names."""


def check_names(names: Iterable[str], registry: Mapping[str, object], kind: str) -> frozenset[str]:
    chosen = frozenset(names)
    unknown = sorted(chosen - registry.keys())
    if unknown:
        raise UnknownSwitchError(
            f"unknown {kind} {', '.join(unknown)}; valid {kind}s: {', '.join(registry)}"
            f" (paysuite stub --list-{kind}s describes each)"
        )
    return chosen


def expand_variants(names: Iterable[str]) -> frozenset[str]:
    """The names themselves and, for a composite, its parts (a composite's parts are never
    composites: ``_composite`` takes simple variants and behaviours only)."""
    known = {**VARIANTS, **BEHAVIOURS}
    chosen = check_names(names, known, "variant")
    return chosen.union(*(known[name].parts for name in chosen))
