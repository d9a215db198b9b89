"""What the traffic alone cannot settle, asked of the target through the judge's own client.

Two questions remain at the end of a session: was a reuse that the target *rejected* executed
anyway (IDEM-001: count the ``transaction:created`` events of that customer number around the
reuse), and does find agree with a processed event that nobody looked up through the proxy
(LIFE-002/003)? Both need credentials, so they are asked only when the target configuration
gives applications; the client is the conformance suite's own ``Target`` (its token policy, its
bounded recording client, its evidence), so a confirmation is shown the same way as a check's.
"""

from __future__ import annotations

from typing import Any

from conformance import timestamps
from conformance.api import data_of, reuse_problems, same_outcome
from conformance.evidence import Evidence
from conformance.http import TargetUnreachable
from conformance.outcome import CouldNotCheck
from conformance.target import Target
from paysuite_core.target_config import Application, TargetConfig
from proxy.routes import route_of, token_claims
from proxy.rules import Violation
from proxy.stateful import (
    KeyUse,
    Seen,
    Transaction,
    answered_at,
    disagreement,
    key_location,
    reuse_check,
)

#: How far a created event's time may lie outside a rejected reuse's own span (from its request
#: reaching the proxy to its answer) and still count as that reuse's execution: the target's
#: clock and the proxy's differ a little. Only the reuse's own span is searched, never the time
#: between the first request and the reuse, so the customer's other payments (made outside the
#: proxy, by other clients) are not mistaken for it; a larger clock skew misses an execution
#: rather than inventing one.
SKEW_S = 1.0


class Confirmer:
    """The judge's own client: a conformance ``Target`` on the configured applications."""

    def __init__(self, config: TargetConfig, *, profile: str) -> None:
        self.config = config
        self.target = Target(config, config.base_url, profile=profile)
        self._by_merchant: dict[str, Application] | None = None
        self.problems: list[str] = []

    def close(self) -> None:
        self.target.client.close()

    def _record(self) -> Evidence:
        evidence = Evidence()
        self.target.current = evidence
        return evidence

    def app_for(self, merchant: str | None) -> Application | None:
        """A reading application of the merchant the proxied token belonged to."""
        if self._by_merchant is None:
            self._by_merchant = {}
            for app in self.config.applications:
                try:
                    claims = token_claims(self.target.token(app)) or {}
                except (CouldNotCheck, TargetUnreachable) as exc:
                    self.problems.append(f"authorize {app.client_id}: {exc}")
                    continue
                if claims.get("merchant"):
                    self._by_merchant.setdefault(f"merchant:{claims['merchant']}", app)
        if merchant in self._by_merchant:
            return self._by_merchant[merchant]
        if len(self.config.merchants()) == 1:  # opaque tokens: one merchant, no doubt
            return self.config.applications[0]
        return None

    def executions(self, use: KeyUse, seen_refs: set[str]) -> Violation | None:
        """IDEM-001 for a rejected reuse: was a transaction created anyway while it was handled?

        Counted: ``transaction:created`` events of the key's number, kind and amount, created
        within a reuse's own span (give or take ``SKEW_S``), whose ref no answer through the
        proxy carried (``seen_refs``: the first creation's and every other one's)."""
        body = use.first.request_json()
        number = body.get("number") if isinstance(body, dict) else None
        app = self.app_for(use.merchant)
        if not isinstance(number, str) or app is None:
            self.problems.append(f"key {use.key!r}: no application of its merchant to count with")
            return None
        evidence = self._record()
        try:
            events = self.target.created_events_for_number(app, number)
        except (CouldNotCheck, TargetUnreachable) as exc:
            self.problems.append(f"key {use.key!r}: the events list could not be read ({exc})")
            return None
        spans = [(reuse.started - SKEW_S, answered_at(reuse) + SKEW_S) for reuse in use.reuses]
        route = route_of(use.first)
        kind = route.kind if route else None
        executed = [
            event
            for event in events
            if any(_within(event, start, end) for start, end in spans)
            and str(data_of(event).get("ref")) not in seen_refs
            and data_of(event).get("amount") == body.get("amount")
            and (kind is None or data_of(event).get("kind") == kind)
        ]
        if not executed:
            return None
        first_ref = str((use.first.response_json() or {}).get("ref"))
        refs = [first_ref, *(str(data_of(e).get("ref")) for e in executed)]
        last = use.reuses[-1]
        last_route = route_of(last)
        problems = reuse_problems(
            last_route.operation if last_route else "creation",
            key_location(last),
            None,
            refs,
            number,
        )
        return Violation(
            reuse_check(use.first, last),
            f"the reuse of key {use.key!r} answered {last.status}, yet " + "; ".join(problems),
            (use.first, *use.reuses),
            expected="one transaction for the key",
            actual=f"{len(refs)} transactions: {', '.join(refs)}",
            confirmations=tuple(evidence.to_list()),
        )

    def find_agrees(self, tx: Transaction) -> Violation | None:
        """LIFE-002/003 for a processed event nobody looked up: find it now and compare."""
        assert tx.event is not None
        app = self.app_for(tx.merchant)
        if app is None:
            self.problems.append(f"{tx.ref}: no application of its merchant to find it with")
            return None
        evidence = self._record()
        try:
            reply = self.target.find(tx.ref, app)
        except (CouldNotCheck, TargetUnreachable) as exc:
            self.problems.append(f"{tx.ref}: find could not be made ({exc})")
            return None
        status = reply.get("status")
        if not reply.ok or status in (None, "pending"):
            return None
        if same_outcome(status, tx.event.status):
            return None
        event: Seen = tx.event
        return disagreement(
            tx.ref, event, status, (event.exchange,), confirmations=tuple(evidence.to_list())
        )


def _within(event: dict[str, Any], start: float, end: float) -> bool:
    stamp = timestamps.parse(event.get("created_at")) or timestamps.parse(
        data_of(event).get("created_at")
    )
    if stamp is None or stamp.zone is None:
        return False  # no instant to place it by: not counted (no false alarm on a doubt)
    return start <= stamp.moment.timestamp() <= end
