"""The verdict of ``paysuite webhooks listen``: what its receiver saw, judged by the WEBHOOK rules.

The listener drives nothing: it receives whatever the target sends while it runs. At the end it
judges the record (``paysuite_core.webhooks.ledger``) with the same catalog entries as the
conformance checks, so that one rule has one ID wherever it is judged:

- WEBHOOK-001 every event the events list shows in the window arrived, as the list shows it
  (needs ``--config``: the list is read through the project's token client);
- WEBHOOK-002 every delivery the target made verified with the secret, in either format
  (stale and bad signatures named). With ``--config``, a delivery that verifies with no
  secret and names an event the list does not show is not the target's: it is reported as a
  forgery (rejected, 401) and blames nobody;
- WEBHOOK-003 no event arrived under two event_ids (nor under one the list does not show);
- WEBHOOK-004 no transaction's processed event first attempted before its created one;
- WEBHOOK-005 every delivery refused on purpose came again: judged only with ``--fail-first``
  (the listener answers 503 to the first attempt of each event), skipped otherwise;
- WEBHOOK-006 every delivery carried the timestamped ``Paysuite-Signature``: a target that signs
  only the live service's way (``X-Paypack-Signature``) is judged on that format and told here
  that nothing in it ages (a SHOULD finding, not a failure of the signature rule).

``findings`` names what is not a rule's failure but worth a line: validly signed deliveries of
events the list does not show (someone holding the secret, or another target on this port).

"The window" is the events created while the listener ran (``created_at`` at or after its
start, less ``CLOCK_SLACK_S``), plus every event of a transaction it heard of; with
``heard_only`` only the latter (when other modes' transactions are made meanwhile, which this
listener's endpoint is not sent). The listener judges only what it could have seen: an event of
the window stamped before it started (a transaction delivered to an earlier listener, one of
whose events is resent now) is compared if it arrives but never counted as "never arrived",
since it may well have been delivered before the listener existed. The results are
``paysuite_core.results``' ``CheckResult`` and the reports are
``paysuite_core.report_engine.reports``': the same files as ``paysuite conform``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from conformance import catalog
from paysuite_core.driver import timestamps
from paysuite_core.driver.api import data_of
from paysuite_core.driver.http import TargetUnreachable
from paysuite_core.driver.target import Target
from paysuite_core.results.evidence import Evidence
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.results.verdict import CheckResult, Verdict, coverage_of
from paysuite_core.target_config import TargetConfig
from paysuite_core.tls import TLSSettings
from paysuite_core.webhooks.ledger import Arrival, Ledger

#: How far before the listener's start an event may be stamped and still count as in the window
#: (the target's clock and this one differ a little).
CLOCK_SLACK_S = 2.0
#: The most pages (of 100) of the events list read per merchant.
MAX_PAGES = 500
RETRY_SKIP = (
    "no delivery was failed on purpose (nor by a --forward-to handler): pass --fail-first to "
    "see each event retried (or run `paysuite conform --profile reference`)"
)
NOTHING = "no delivery arrived"
NO_CONFIG = "no --config: the deliveries are not compared with the events list"
#: The codes of a delivery refused for its signature.
SIGNATURE_CODES = ("invalid_signature", "signature_too_long")


@dataclass
class Listing:
    """The events list as read at the end, with the exchanges that read it (evidence)."""

    events: list[dict[str, Any]]
    evidence: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


def read_events(
    config: TargetConfig, refs: Sequence[str] | None = None, tls: TLSSettings | None = None
) -> Listing:
    """Every event the list shows to the configured merchants (or only of ``refs``), read
    with the command's TLS settings (``tls``)."""
    target = Target(config, config.base_url, tls=tls)
    evidence = Evidence(limit=20)
    target.current = evidence
    events: list[dict[str, Any]] = []
    readers = config.applications_with("read", "read-write")
    try:
        for merchant in config.merchants():
            app = next((a for a in readers if a.merchant == merchant), None)
            if app is None:
                continue
            if refs is None:
                events.extend(target.events_of(app, max_pages=MAX_PAGES))
            else:
                for ref in refs:
                    events.extend(target.events_for_ref(app, ref))
    except CouldNotCheck as exc:
        return Listing(events, _evidence_of(evidence, exc), str(exc))
    except TargetUnreachable as exc:
        return Listing(events, _evidence_of(evidence), f"the target did not answer: {exc}")
    finally:
        target.close()
    unique = {str(e.get("event_id")): e for e in events if isinstance(e.get("event_id"), str)}
    return Listing(list(unique.values()), _evidence_of(evidence))


def _evidence_of(evidence: Evidence, exc: CouldNotCheck | None = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = evidence.to_list(only_last=3)
    if exc is not None:
        items += [proof.to_dict() for proof in exc.proof]
    return items


def in_window(
    listed: list[dict[str, Any]], ledger: Ledger, started: datetime
) -> list[dict[str, Any]]:
    """The listed events the listener should have received (see the module's docstring)."""
    heard = set(ledger.refs())
    since = started - timedelta(seconds=CLOCK_SLACK_S)
    chosen = []
    for record in listed:
        stamp = timestamps.parse(record.get("created_at"))
        recent = stamp is not None and stamp.zone is not None and stamp.moment >= since
        if data_of(record).get("ref") in heard or recent:
            chosen.append(record)
    return chosen


def before_start(record: dict[str, Any], started: datetime | None) -> bool:
    """Whether ``record`` was stamped before the listener started (less the clock slack): its
    delivery may have gone to whoever listened then, so its absence here proves nothing."""
    if started is None:
        return False
    stamp = timestamps.parse(record.get("created_at"))
    if stamp is None or stamp.zone is None:
        return False
    return stamp.moment < started - timedelta(seconds=CLOCK_SLACK_S)


def awaited(expected: list[dict[str, Any]], started: datetime | None) -> list[dict[str, Any]]:
    """The events of the window that must arrive: those stamped since the listener started."""
    return [r for r in expected if not before_start(r, started)]


def _result(number: str, outcome: str, message: str = "", **extra: Any) -> CheckResult:
    """A result of WEBHOOK-``number``."""
    check = catalog.get(f"WEBHOOK-{number}")
    return CheckResult(check=check, outcome=outcome, message=message, **extra)


def _describe(arrivals: list[Arrival]) -> str:
    return "; ".join(
        f"{a.kind} {a.body_event_id} ref={a.ref}" + (f": {a.reason}" if a.reason else "")
        for a in arrivals[:5]
    )


def judge(
    ledger: Ledger,
    listing: Listing | None,
    expected: list[dict[str, Any]],
    started: datetime | None = None,
) -> list[CheckResult]:
    """The six WEBHOOK results for what arrived (``listing`` None: no --config); with
    ``started``, the events stamped before it are compared only if they arrived."""
    if not ledger.arrivals():
        nothing = [_result(cid, "skipped", NOTHING) for cid in ("002", "003", "004")]
        untimed = _result("006", "skipped", NOTHING)
        delivered = _delivered(ledger, listing, expected, started)
        return [delivered, *nothing, _retried(ledger), untimed]
    return [
        _delivered(ledger, listing, expected, started),
        _signed(ledger, listing),
        _one_id_each(ledger, expected if listing is not None else None),
        _in_order(ledger),
        _retried(ledger),
        _timestamped(ledger),
    ]


def _known_ids(listing: Listing | None) -> set[str] | None:
    """The event_ids the list shows; None when there is no list to tell the target's own
    deliveries from others'."""
    if listing is None or listing.error:
        return None
    return {str(e.get("event_id")) for e in listing.events}


def forged(ledger: Ledger, listing: Listing | None) -> list[Arrival]:
    """Deliveries that verified with no secret and name no event the list shows: the target
    never made them, so they blame nobody (rejected, 401, and reported)."""
    known = _known_ids(listing)
    if known is None:
        return []
    return [
        a
        for a in ledger.arrivals()
        if a.verdict == "rejected" and a.code in SIGNATURE_CODES and a.body_event_id not in known
    ]


def findings(ledger: Ledger, listing: Listing | None) -> list[str]:
    """What is no rule's failure but worth a line in the report."""
    known = _known_ids(listing)
    notes = []
    fakes = forged(ledger, listing)
    if fakes:
        notes.append(
            f"{len(fakes)} forged deliveries (no valid signature, an event the list does not "
            f"show) rejected; not the target's: {_describe(fakes)}"
        )
    mismatched = [a for a in ledger.arrivals() if a.signature == "paysuite+live-mismatch"]
    if mismatched:
        notes.append(
            f"{len(mismatched)} deliveries verified on Paysuite-Signature carried an "
            "X-Paypack-Signature that does not verify with the secret: a receiver written for "
            "the live service would refuse them (during a rotation's overlap it is the previous "
            f"secret's; give the listener both): {_describe(mismatched)}"
        )
    if known is not None:
        strangers = [a for a in ledger.accepted() if a.body_event_id not in known]
        if strangers:
            notes.append(
                f"{len(strangers)} validly signed deliveries of events the events list does not "
                "show (someone else holds the secret, or another sender uses this port): "
                + "; ".join(f"{a.kind} {a.body_event_id} ref={a.ref}" for a in strangers[:5])
            )
    return notes


def _signed(ledger: Ledger, listing: Listing | None) -> CheckResult:
    arrivals = ledger.arrivals()
    fakes = {a.seq for a in forged(ledger, listing)}
    bad = [a for a in arrivals if a.code in SIGNATURE_CODES and a.seq not in fakes]
    formats = sorted({a.signature for a in arrivals if a.signature})
    note = f"{len(arrivals) - len(fakes)} deliveries verified ({', '.join(formats) or 'none'})"
    if fakes:
        note += f"; {len(fakes)} forged ones rejected, not the target's"
    if not bad:
        return _result("002", "passed", note=note)
    return _result(
        "002",
        "failed",
        f"{len(bad)} of {len(arrivals) - len(fakes)} deliveries failed verification: "
        f"{_describe(bad)}",
        expected="a Paysuite-Signature (recent) or an X-Paypack-Signature that verifies with "
        "the secret",
        actual=bad[0].reason,
    )


def _timestamped(ledger: Ledger) -> CheckResult:
    accepted = [a for a in ledger.arrivals() if a.verdict in ("verified", "duplicate")]
    if not accepted:
        return _result("006", "skipped", "no delivery verified: no signature format to judge")
    untimed = [a for a in accepted if a.signature == "live"]
    if not untimed:
        return _result("006", "passed", note=f"{len(accepted)} deliveries carried a timestamp")
    return _result(
        "006",
        "failed",
        gating=False,  # the live service's own format: a warning, a failure only with --strict
        message=f"{len(untimed)} of {len(accepted)} verified deliveries were signed only with "
        "X-Paypack-Signature: nothing in it ages, so a captured delivery can be replayed "
        f"(a SHOULD: the live format holds otherwise): {_describe(untimed)}",
        expected="a timestamped Paysuite-Signature on every delivery",
        actual="X-Paypack-Signature only",
    )


def _one_id_each(ledger: Ledger, expected: list[dict[str, Any]] | None) -> CheckResult:
    """One id per (ref, kind); with the list, the list's id for its transactions."""
    listed_ids = {str(r.get("event_id")) for r in expected or []}
    listed_refs = {data_of(r).get("ref") for r in expected or []}
    twice = {
        (ref, kind): ids
        for (ref, kind), ids in ledger.ids_per_event().items()
        if len(ids) > 1 or (expected is not None and ref in listed_refs and ids - listed_ids)
    }
    if not twice:
        return _result("003", "passed")
    return _result(
        "003",
        "failed",
        "; ".join(
            f"{ref} {kind} arrived under event_ids {sorted(ids)}"
            for (ref, kind), ids in list(twice.items())[:5]
        ),
        expected="each event under one event_id, the list's",
        actual=f"{len(twice)} events under more than one id (or an unlisted one)",
    )


def _in_order(ledger: Ledger) -> CheckResult:
    late = [ref for ref in ledger.refs() if ledger.out_of_order(ref)]
    if not late:
        return _result("004", "passed")
    return _result(
        "004",
        "failed",
        f"processed before created for {len(late)} transactions: {', '.join(late[:5])}",
        expected="transaction:created first, then transaction:processed",
        actual="transaction:processed first",
    )


def handler_failed(arrival: Arrival) -> bool:
    """A verified delivery that ``--forward-to``'s handler failed: the sender was answered the
    handler's error, so it must come again as a refused one must."""
    handler = arrival.handler
    return handler is not None and not 200 <= handler.status < 300


def _retried(ledger: Ledger) -> CheckResult:
    arrivals = ledger.arrivals()
    firsts: dict[str | None, Arrival] = {}  # the first failed attempt of each event: a
    for a in arrivals:  # sender that gives up after its last attempt is not judged here
        if a.verdict == "refused" or handler_failed(a):
            firsts.setdefault(a.body_event_id, a)
    refused = list(firsts.values())
    if not refused:
        return _result("005", "skipped", RETRY_SKIP)
    never = [
        a
        for a in refused
        if not any(b.seq > a.seq and b.body_event_id == a.body_event_id for b in arrivals)
    ]
    if never:
        return _result(
            "005",
            "failed",
            f"{len(never)} of {len(refused)} deliveries answered an error never came again: "
            + ", ".join(f"{a.kind} {a.body_event_id} ref={a.ref}" for a in never[:5]),
            expected="another attempt of the same event_id after the error answer",
            actual=f"{len(never)} not retried",
        )
    return _result("005", "passed", note=f"{len(refused)} refused deliveries retried")


def _delivered(
    ledger: Ledger,
    listing: Listing | None,
    expected: list[dict[str, Any]],
    started: datetime | None = None,
) -> CheckResult:
    if listing is None:
        return _result("001", "skipped", NO_CONFIG)
    if listing.error:
        return _result(
            "001",
            "error",
            f"could not read the events list: {listing.error}",
            evidence=listing.evidence,
        )
    if not expected:
        return _result("001", "skipped", "the events list shows no event of this listening window")
    comparison = ledger.compare(expected)
    arrived = {a.body_event_id: a for a in ledger.arrivals() if a.body_event_id}
    earlier = [r for r in comparison.missing if before_start(r, started)]
    missing = [r for r in comparison.missing if not before_start(r, started)]
    judged = comparison.listed - len(earlier)
    if judged == 0:
        return _result(
            "001",
            "skipped",
            f"the {len(earlier)} listed events of the transactions heard of were stamped before "
            "the listener started: nothing it could have seen to judge",
            evidence=listing.evidence,
        )
    different = [
        r
        for r in expected
        if str(r.get("event_id")) in arrived
        and all(a.event != r for a in ledger.arrivals() if a.body_event_id == r.get("event_id"))
    ]
    note = f"{judged} listed events, each delivered once after deduplication"
    if earlier:
        note += (
            f"; {len(earlier)} more of the transactions heard of were stamped before the "
            "listener started and did not arrive here (delivered earlier, if at all; not "
            "judged): "
            + ", ".join(f"{r.get('event_kind')} {r.get('event_id')}" for r in earlier[:5])
        )
    if not missing and not different:
        return _result("001", "passed", note=note, evidence=listing.evidence)
    parts = []
    if missing:
        parts.append(
            f"{len(missing)} of {judged} listed events never arrived: "
            + ", ".join(
                f"{r.get('event_kind')} {r.get('event_id')} ref={data_of(r).get('ref')}"
                for r in missing[:5]
            )
        )
    if different:
        parts.append(
            f"{len(different)} arrived unlike the list: "
            + ", ".join(f"{r.get('event_kind')} {r.get('event_id')}" for r in different[:5])
        )
    return _result(
        "001",
        "failed",
        "; ".join(parts),
        evidence=listing.evidence,
        expected="every listed event of the window delivered, as the list shows it",
        actual=f"{len(missing)} missing, {len(different)} different",
    )


def decide(results: Sequence[CheckResult], *, strict: bool = False) -> Verdict:
    """Fail (1) on a failed rule, no verdict (2) when the list could not be read, else pass.

    A non-gating failure (WEBHOOK-006: the live service's own signature format, which has no
    replay protection) is a warning that fails the run only with ``strict``."""
    coverage = coverage_of(results)
    failed = [r.check.id for r in results if r.outcome == "failed" and (r.gating or strict)]
    errors = [r.check.id for r in results if r.outcome == "error"]

    def make(verdict: str, code: int, reason: str) -> Verdict:
        return Verdict(verdict, code, "reference", strict, coverage, reason=reason)

    if failed:
        return make("fail", 1, f"{len(failed)} webhook check(s) failed: {', '.join(failed)}")
    if errors:
        return make("error", 2, f"{len(errors)} check(s) could not be judged: {', '.join(errors)}")
    if not coverage.run:
        return make("error", 2, "no delivery arrived: nothing was judged")
    return make("pass", 0, f"{coverage.run} of {len(results)} webhook checks judged, none failed")
