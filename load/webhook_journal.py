"""Webhooks in the "nothing lost" reconciliation: every acknowledged create's events delivered.

With ``paysuite load --webhooks`` the runner serves paysuite's receiver
(``paysuite_core.webhooks.receiver``) on the configuration's ``webhooks.listen`` for the whole
run, appending every arrival to a journal in the report directory; the Locust master reads it
after the load, again until every event listed for an acknowledged create has arrived verified
or the reconciliation's budget runs out (deliveries lag the load).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from load.plan import LoadPlan
from load.records import Reconciliation
from paysuite_core.webhooks.ledger import Ledger

JOURNAL_NAME = "webhook-journal.jsonl"
SAMPLE_LIMIT = 20
#: How often the journal is read again while deliveries are still missing.
POLL_S = 0.5


def journal_path(plan: LoadPlan) -> Path:
    return plan.report_dir.resolve() / JOURNAL_NAME


@contextmanager
def receiving(plan: LoadPlan) -> Iterator[None]:
    """Serve the receiver for the run when the plan includes webhooks (else nothing)."""
    hooks = plan.target.webhooks
    if not plan.webhooks or hooks is None:
        yield
        return
    from load.plan import UsageError
    from paysuite_core.webhooks.receiver import ReceiverStartError, WebhookReceiver, running

    journal = journal_path(plan)
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.unlink(missing_ok=True)
    receiver = WebhookReceiver(hooks.secret, tolerance_s=hooks.tolerance_s, journal=journal)
    try:
        with running(receiver, hooks.listen_host, hooks.listen_port):
            yield
    except ReceiverStartError as exc:
        raise UsageError(f"--webhooks: {exc}") from None


def reconcile_webhooks(
    listed: dict[str, set[str]],
    journal: Path,
    *,
    time_budget_s: float,
    progress: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> Reconciliation:
    """``listed``: ref -> the event_ids the events list showed for it during the reconciliation.

    Returns the counts for load.json: ``webhook_events`` expected, ``webhook_delivered``
    (arrived verified), ``webhook_undelivered`` (never arrived verified: lost), ``webhook_rejected``
    (deliveries the receiver refused: bad signature, malformed) and samples of the lost ones.
    """
    expected = {event_id: ref for ref, ids in listed.items() for event_id in ids}
    deadline = time.monotonic() + time_budget_s
    ledger = Ledger.from_journal(journal)
    if expected:
        progress(f"paysuite: waiting for the webhook deliveries of {len(expected)} events")
    while True:
        accepted = {a.event_id for a in ledger.accepted()}
        missing = [event_id for event_id in expected if event_id not in accepted]
        if not missing or time.monotonic() >= deadline:
            break
        sleep(POLL_S)
        ledger = Ledger.from_journal(journal)
    rejected = [a for a in ledger.arrivals() if a.verdict == "rejected"]
    return {
        "webhook_events": len(expected),
        "webhook_delivered": len(expected) - len(missing),
        "webhook_undelivered": len(missing),
        "webhook_rejected": len(rejected),
        "webhook_rejected_reasons": sorted({a.reason for a in rejected})[:5],
        "webhook_samples": [
            {"ref": expected[event_id], "event_id": event_id} for event_id in missing[:SAMPLE_LIMIT]
        ],
    }
