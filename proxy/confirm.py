"""What the traffic alone cannot settle, asked of the target through the judge's own client.

A reuse the target *rejected* is reproduced rather than looked for: other applications of the
same merchant, outside the proxy, may pay the same number at any moment, so no count of events
on the client's number can tell their payment from a second execution. The judge replays the
observed pattern with an application of the configuration on a number of its own and counts the
executions there (docs/proxy.md, "How executions are counted"). A question that cannot be asked
that way leaves the rule "unconfirmed" with the reason: a note, never a failure nor a pass.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import data_of, reuse_problems, same_amount, same_outcome
from paysuite_core.driver.http import Reply, TargetUnreachable
from paysuite_core.driver.target import Target
from paysuite_core.exchange import Exchange
from paysuite_core.results.evidence import Evidence
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.results.rule import Check
from paysuite_core.target_config import Application, TargetConfig
from paysuite_core.tls import TLSSettings
from paysuite_core.tokens import token_claims
from proxy.routes import answered_at, route_of
from proxy.rules import CANCELLED, CONFIRMED, Violation
from proxy.stateful import (
    KeyUse,
    LifecycleRule,
    Transaction,
    disagreement,
    key_location,
    reuse_check,
)
from proxy.traffic import Processed, Resolved, TrafficRules, lists_processed

#: The reuses of one key the reproduction sends at most (a client that retried a key a hundred
#: times shows the same pattern after the first few).
MAX_REUSES = 5
#: A note that applies to every rule (an application that could not be authorized).
EVERY_RULE = "*"
#: The rules a processed transaction's checks note under.
LIFE = (CONFIRMED, CANCELLED)
T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One creation of an observed key use, as the reproduction sends it again."""

    exchange: Exchange  # the proxied creation
    kind: str  # CASHIN | CASHOUT: the request's own operation
    key_in: str  # header | query
    body: JsonObject  # the request's own body (its number is swapped for the judge's)
    number: object  # the number the client sent

    @property
    def amount(self) -> object:
        return self.body.get("amount")


@dataclass(frozen=True)
class Writers:
    """The applications of one merchant that reproduce a key use: one creator per kind needed,
    and one that reads the events list."""

    creators: dict[str, Application]
    reader: Application


class Confirmer:
    """The judge's own client: a conformance ``Target`` on the configured applications."""

    def __init__(
        self, config: TargetConfig, *, profile: str, tls: TLSSettings | None = None
    ) -> None:
        self.config = config
        self.target = Target(config, config.base_url, profile=profile, tls=tls)
        self._by_merchant: dict[str, Application] | None = None
        self._labels: dict[str, str] = {}  # a token's merchant -> the configuration's label
        #: check ID (or ``EVERY_RULE``) -> what the confirmations found out, for the report
        self.notes: defaultdict[str, list[str]] = defaultdict(list)
        #: one settlement per pattern of operations and channels: the pattern -> its first key
        self._reproduced: dict[tuple[object, ...], str] = {}

    def close(self) -> None:
        self.target.client.close()

    def _record(self) -> Evidence:
        evidence = Evidence()
        self.target.current = evidence
        return evidence

    def _note(self, checks: Iterable[Check | str], text: str) -> None:
        """The same note on each of ``checks`` (a check, or ``EVERY_RULE``)."""
        for check in checks:
            self.notes[check if isinstance(check, str) else check.id].append(text)

    def app_for(self, merchant: str | None) -> Application | None:
        """A reading application of the merchant the proxied token belonged to."""
        if self._by_merchant is None:
            self._by_merchant = {}
            for app in self.config.applications:
                try:
                    claims = token_claims(self.target.token(app)) or {}
                except (CouldNotCheck, TargetUnreachable) as exc:
                    self._note([EVERY_RULE], f"authorize {app.client_id}: {exc}")
                    continue
                if claims.get("merchant"):
                    key = f"merchant:{claims['merchant']}"
                    self._by_merchant.setdefault(key, app)
                    self._labels.setdefault(key, app.merchant)
        if merchant in self._by_merchant:
            return self._by_merchant[merchant]
        if len(self.config.merchants()) == 1:  # opaque tokens: one merchant, no doubt
            return self.config.applications[0]
        return None

    # --- IDEM-001/002/004/005: a rejected reuse ---------------------------------------------
    def reproduce(self, use: KeyUse) -> list[Violation]:
        """Settle a reuse the target rejected (or left unanswered): reproduce its pattern with
        the judge's own application on a number of its own, and count the executions there.

        Returns the violations the reproduction proved (none when the rule held, or when it
        could not be confirmed: the notes say which)."""
        steps = _steps(use)
        checks = list(dict.fromkeys(reuse_check(use.first, s.exchange) for s in steps[1:]))
        about = f"key {use.key!r} ({', '.join(f'#{s.exchange.seq}' for s in steps)})"
        if any(not s.kind for s in steps):
            return []  # not a creation: nothing to reproduce (route_of said so already)
        pattern = _pattern(steps)
        if pattern in self._reproduced:
            self._note(
                checks,
                f"{about}: the same pattern as key {self._reproduced[pattern]!r}, settled once "
                "(see its note)",
            )
            return []
        self._reproduced[pattern] = use.key
        writers = self._writers(use.merchant, {s.kind for s in steps})
        if writers is None:
            kinds = " and ".join(sorted({s.kind for s in steps}))
            self._note(
                checks,
                f"unconfirmed: {about}: no application in the configuration may create {kinds} "
                "to reproduce the reuse (read-only credentials)",
            )
            return []
        evidence = self._record()
        try:
            return self._run(use, steps, partial(self._note, checks), about, writers, evidence)
        except (CouldNotCheck, TargetUnreachable) as exc:
            self._note(checks, f"unconfirmed: {about}: the reproduction could not run ({exc})")
            return []

    def _run(
        self,
        use: KeyUse,
        steps: list[Step],
        note: Callable[[str], None],
        about: str,
        writers: Writers,
        evidence: Evidence,
    ) -> list[Violation]:
        """The reproduction itself; ``note`` notes on each check the reuse concerns, ``about``
        names the key and the exchanges."""
        target = self.target
        shared = not target.numbers.unique
        numbers: dict[str, str] = {}  # the client's number -> the judge's own
        for step in steps:
            if str(step.number) not in numbers:
                numbers[str(step.number)] = target.number()
        owns = list(dict.fromkeys(numbers.values()))  # a configured list may repeat one
        known = {own: target.known_refs(writers.reader, own) for own in owns}
        key = target.fresh_key()
        replies: list[tuple[Step, Reply]] = []
        for step in steps:
            body = dict(step.body)
            if "number" in body:  # a body without one is sent as it was (and refused)
                body["number"] = numbers[str(step.number)]
            app = writers.creators[step.kind]
            replies.append(
                (step, target.create(step.kind, app, body=body, key=key, key_in=step.key_in))
            )
        first_step, first = replies[0]
        if not first.ok:
            note(
                f"unconfirmed: {about}: the reproduction's first {first_step.kind.lower()} "
                f"answered {first.status}"
            )
            return []
        own_refs = {str(r.get("ref")) for _, r in replies if r.ok and isinstance(r.body, dict)}
        first_ref = str(first.get("ref"))
        first_number = numbers[str(first_step.number)]
        executed: list[JsonObject] = []
        noted = len(target.notes)  # the target notes what it left out of a shared number's count
        for own in owns:
            sent = [(s.kind, s.amount) for s, _ in replies if numbers[str(s.number)] == own]
            executed += target.created_events_for_number(
                writers.reader,
                own,
                known[own],
                expect=1 if own == first_number else None,
                sent=sent,
                own_refs=own_refs,
            )
        refs = list(dict.fromkeys([first_ref, *(str(data_of(e).get("ref")) for e in executed)]))
        accepted = [(s, r) for s, r in replies[1:] if r.ok]
        left_out = target.notes[noted:]
        if shared and left_out and not accepted:
            note(f"{about}: " + "; ".join(left_out))
            return []
        if len(refs) == 1 and not accepted:
            statuses = ", ".join(str(r.status) for _, r in replies[1:])
            app = writers.creators[first_step.kind]
            note(
                f"confirmed by reproduction: {about} replayed by the judge's application "
                f"{app.client_id} on its own number {first_number} with a fresh key: the reuse "
                f"answered {statuses}, one transaction ({first_ref})"
            )
            return []
        return self._violations(use, replies, refs, first_ref, first_number, executed, evidence)

    def _violations(
        self,
        use: KeyUse,
        replies: list[tuple[Step, Reply]],
        refs: list[str],
        first_ref: str,
        number: str,
        executed: list[JsonObject],
        evidence: Evidence,
    ) -> list[Violation]:
        """One violation per check the reproduction broke: a reuse it answered 2xx names its own
        check; an extra transaction names the check of the reuse whose kind and amount it has."""
        blamed: dict[str, tuple[Step, Reply]] = {}
        for step, reply in replies[1:]:
            if reply.ok:
                blamed.setdefault(reuse_check(use.first, step.exchange).id, (step, reply))
        for event in executed:
            data = data_of(event)
            if str(data.get("ref")) == first_ref:
                continue
            culprit = next(
                (
                    (s, r)
                    for s, r in replies[1:]
                    if data.get("kind") == s.kind and same_amount(data.get("amount"), s.amount)
                ),
                replies[-1],
            )
            blamed.setdefault(reuse_check(use.first, culprit[0].exchange).id, culprit)
        found = []
        observed = (use.first, *use.reuses)
        for step, reply in blamed.values():
            check = reuse_check(use.first, step.exchange)
            problems = reuse_problems(step.kind, step.key_in, reply.status, refs, number)
            found.append(
                Violation(
                    check,
                    f"the reuse of key {use.key!r} answered {step.exchange.status or 'nothing'}; "
                    f"reproduced by the judge on its own number with a fresh key, the "
                    f"{step.kind.lower()} reuse answered {reply.status}"
                    + (": " if reply.ok else ", yet ")
                    + "; ".join(problems),
                    observed,
                    expected="the reuse rejected (4xx) and one transaction for the key",
                    actual=f"{reply.status}; {len(refs)} transactions: {', '.join(refs)}",
                    confirmations=tuple(evidence.to_list()),
                )
            )
        return found

    def _writers(self, merchant: str | None, kinds: set[str]) -> Writers | None:
        """Applications of one merchant that may create every kind in ``kinds`` (read-write
        first, then the specific privilege), the observed merchant's first; None when the
        configuration has none (read-only credentials)."""
        self.app_for(merchant)  # learns which configured merchant the token's claim names
        labels = list(self.config.merchants())
        mine = self._labels.get(merchant or "")
        if mine in labels:
            labels.remove(mine)
            labels.insert(0, mine)
        for label in labels:
            apps = [a for a in self.config.applications if a.merchant == label]
            creators: dict[str, Application] = {}
            for kind in kinds:
                able = [a for a in apps if _may_create(a, kind)]
                able.sort(key=lambda a: a.privilege != "read-write")
                if able:
                    creators[kind] = able[0]
            if len(creators) == len(kinds):
                readers = [a for a in apps if a.privilege in ("read-write", "read")]
                reader = readers[0] if readers else next(iter(creators.values()))
                return Writers(creators, reader)
        return None

    # --- LIFE-002/003 ---------------------------------------------------------------------
    def find_agrees(self, rule: LifecycleRule, tx: Transaction) -> list[Violation]:
        """LIFE-002/003 for a processed event nobody looked up: find it now and compare."""
        event = tx.event
        assert event is not None
        rule.exercised_event += 1
        app = self.app_for(tx.merchant)
        if app is None:
            self._note(LIFE, f"{tx.ref}: no application of its merchant to find it with")
            return []
        evidence = self._record()
        try:
            reply = self.target.find(tx.ref, app)
        except (CouldNotCheck, TargetUnreachable) as exc:
            self._note(LIFE, f"{tx.ref}: find could not be made ({exc})")
            return []
        status = reply.get("status")
        if not reply.ok or status in (None, "pending") or same_outcome(status, event.status):
            return []
        proof = (event.exchange,)
        return [disagreement(tx.ref, event, status, proof, tuple(evidence.to_list()))]

    def outcome_after(self, rules: TrafficRules, ref: str, action: Resolved) -> list[Violation]:
        """LIFE-002/003 for a ref the customer confirmed or cancelled and no find after it
        settled: find it now, polling until the suite's wait after the customer acted."""
        app = self.app_for(rules.merchant_of(ref))
        if app is None:
            self._note([action.check], f"{ref}: no application of its merchant to find it with")
            return []
        evidence = self._record()
        try:
            status = self._poll(
                answered_at(action.exchange) + rules.wait_s,
                lambda: self.target.find(ref, app).get("status"),
                lambda status: status != "pending",
            )
        except (CouldNotCheck, TargetUnreachable) as exc:
            self._note([action.check], f"{ref}: find could not be made ({exc})")
            return []
        action.settled = True
        if same_outcome(status, action.expected):
            return []
        return [rules.wrong_outcome(ref, action, status, None, tuple(evidence.to_list()))]

    def processed_listed(self, rules: TrafficRules, ref: str, seen: Processed) -> list[Violation]:
        """LIFE-002/003 for a ref the client listed too soon after find showed it processed: the
        judge lists the ref's events itself, until the suite's tolerance for late events has
        passed since that find was answered."""
        rules.listed_exercised += 1
        app = self.app_for(seen.merchant)
        if app is None:
            self._note(LIFE, f"{ref}: no application of its merchant to list its events")
            return []
        evidence = self._record()
        listed = partial(lists_processed, ref)
        try:
            events = self._poll(
                answered_at(seen.exchange) + rules.eventual_s,
                lambda: self.target.events_for_ref(app, ref),
                listed,
            )
        except (CouldNotCheck, TargetUnreachable) as exc:
            self._note(LIFE, f"{ref}: its events could not be listed ({exc})")
            return []
        if listed(events):
            return []
        seen.reported = True
        return [rules.missing(ref, seen, None, confirmations=tuple(evidence.to_list()))]

    def _poll(self, until: float, probe: Callable[[], T], done: Callable[[T], bool]) -> T:
        """``probe`` until ``done``, or until the clock time ``until`` (at least once)."""
        return self.target.wait_until(probe, done, max(until - time.time(), 0.0))


def _may_create(app: Application, kind: str) -> bool:
    return app.can_cashin() if kind == "CASHIN" else app.can_cashout()


def _steps(use: KeyUse) -> list[Step]:
    """The key's first creation and its reuses (at most ``MAX_REUSES``), as requests to send."""
    first_body = use.first.request_json()
    first_body = first_body if isinstance(first_body, dict) else {}
    steps = []
    for exchange in (use.first, *use.reuses[:MAX_REUSES]):
        route = route_of(exchange)
        kind = route.kind if route and route.creation else ""
        body = exchange.request_json()
        body = dict(body) if isinstance(body, dict) else dict(first_body)
        steps.append(Step(exchange, kind, key_location(exchange), body, body.get("number")))
    return steps


def _pattern(steps: list[Step]) -> tuple[object, ...]:
    """What a reproduction depends on: each step's operation and key channel, and whether its
    amount and number are the first's. Two keys of one pattern are reproduced once."""
    first = steps[0]
    return tuple(
        (s.kind, s.key_in, s.amount == first.amount, s.number == first.number) for s in steps
    )
