"""What paysuite's webhook receiver saw: every delivery as it arrived, and the questions on it.

The receiver (``paysuite_core.webhooks.receiver``) records each delivery here, accepted or not,
and three readers judge the same record: ``paysuite webhooks listen`` (against the events list
at the end), the conformance WEBHOOK checks (while they drive transactions) and the load
reconciliation (every acknowledged creation's events delivered). They may not import each
other, so the questions live beside the record rather than in any one of them.

Deduplication is by event_id: a second verified delivery of an id already accepted is
acknowledged (the sender must stop retrying) and counted as a duplicate, never as a second
event. A rejected delivery (bad signature, malformed body) is kept with its reason: a rule about
*arrival* (was the event sent at all?) is judged apart from a rule about the *signature*, so
one defect fails one check.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, Unpack

from paysuite_core import guarded_json

Verdict = Literal["verified", "duplicate", "rejected", "refused"]
#: An event record as a delivery's body carried it: a JSON object, its fields not yet checked.
Event = dict[str, object]

CREATED = "transaction:created"
PROCESSED = "transaction:processed"


@dataclass(frozen=True)
class HandlerAnswer:
    """What the developer's own handler answered a forwarded delivery (``--forward-to``):
    its status and time, or the listener's 502/504 and ``error`` when it did not answer."""

    status: int
    elapsed_ms: float
    error: str = ""

    def text(self) -> str:
        if self.error:
            return f"handler gave no answer ({self.error}) after {self.elapsed_ms:g} ms"
        return f"handler {self.status} in {self.elapsed_ms:g} ms"


@dataclass(frozen=True)
class Arrival:
    """One delivery as it reached the receiver, and what the receiver made of it.

    ``verdict``: ``verified`` (accepted, first of its event_id), ``duplicate`` (verified, an
    event_id already accepted), ``rejected`` (signature or body wrong: ``reason`` says which),
    ``refused`` (answered with an error on purpose, to make the sender retry).
    """

    seq: int
    received_at: float
    status: int
    verdict: Verdict
    reason: str
    code: str  # the machine-readable code answered ("invalid_signature", ...), "" when accepted
    event_id: str | None
    attempt: str | None
    mode: str | None
    event: Event | None
    body: bytes = field(repr=False)
    #: The signature formats the delivery carried (all verified when the verdict is verified or
    #: duplicate): ``paysuite`` (timestamped ``Paysuite-Signature``), ``live``
    #: (``X-Paypack-Signature``), ``paysuite+live``; "" for none.
    signature: str = ""
    #: With ``--forward-to``: the developer's handler's answer (None: not forwarded).
    handler: HandlerAnswer | None = None

    @property
    def ref(self) -> str | None:
        return _ref_of(self.event or {})

    @property
    def kind(self) -> str | None:
        kind = (self.event or {}).get("event_kind")
        return kind if isinstance(kind, str) else None

    @property
    def body_event_id(self) -> str | None:
        """The event_id of the body (the header's may differ: then the delivery is rejected)."""
        value = (self.event or {}).get("event_id")
        return value if isinstance(value, str) else None

    def line(self) -> str:
        """The listener's live line: what arrived and whether it was verified, or why not."""
        mark = {"verified": "✔", "duplicate": "=", "rejected": "×", "refused": "↻"}[self.verdict]
        what = f"{self.kind or '?'} {self.event_id or '(no event id)'} ref={self.ref or '?'}"
        where = f"attempt {self.attempt or '?'} mode {self.mode or '?'}"
        if self.signature:
            where += f" sig {self.signature}"
        text = f"{mark} {self.verdict:<9} {what} {where} -> {self.status}"
        if self.handler is not None:
            text += f" ({self.handler.text()})"
        return f"{text}: {self.reason}" if self.reason else text


class Delivery(TypedDict):
    """What one delivery carried, as the receiver read it (``Ledger.record`` adds the verdict)."""

    event_id: str | None
    attempt: str | None
    mode: str | None
    event: Event | None
    body: bytes
    signature: NotRequired[str]
    handler: NotRequired[HandlerAnswer | None]


def journal_line(arrival: Arrival) -> str:
    """One arrival as a JSON line, its body reduced to what the questions read (id, kind, ref)."""
    record = {key: value for key, value in asdict(arrival).items() if key not in ("seq", "body")}
    if arrival.event is not None:
        record["event"] = {
            "event_id": arrival.body_event_id,
            "event_kind": arrival.kind,
            "data": {"ref": arrival.ref},
        }
    return json.dumps(record)


def parse_event(body: bytes) -> Event | None:
    """The body as an event record, or ``None`` when it is not a JSON object."""
    try:
        value = guarded_json.loads(body, what="the delivery")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Comparison:
    """Deliveries against the events list: each list names event records by event_id.

    ``missing``: listed, never arrived. ``unverified``: arrived only without a valid signature.
    ``mismatched``: (listed record, delivered record) that differ. ``unlisted``: accepted
    deliveries of the compared transactions whose event_id the list does not show.
    """

    listed: int
    missing: tuple[Event, ...] = ()
    unverified: tuple[str, ...] = ()
    mismatched: tuple[tuple[Event, Event], ...] = ()
    unlisted: tuple[Event, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unverified or self.mismatched or self.unlisted)


class Ledger:
    """Every delivery the receiver answered, in arrival order; safe to read from any thread."""

    def __init__(self) -> None:
        self._arrivals: list[Arrival] = []
        self._accepted: dict[str, Arrival] = {}
        self._changed = threading.Condition()

    # --- recording (the receiver) ---------------------------------------------------------
    def is_accepted(self, event_id: str) -> bool:
        with self._changed:
            return event_id in self._accepted

    def record(
        self, *, status: int, verdict: Verdict, reason: str, code: str, **delivery: Unpack[Delivery]
    ) -> Arrival:
        """Append one arrival (``seq`` and ``received_at`` are set here) and wake the waiters."""
        with self._changed:
            seq, now = len(self._arrivals) + 1, time.time()
            arrival = Arrival(seq, now, status, verdict, reason, code, **delivery)
            self._arrivals.append(arrival)
            if arrival.verdict == "verified" and arrival.event_id is not None:
                self._accepted[arrival.event_id] = arrival
            self._changed.notify_all()
            return arrival

    @classmethod
    def from_journal(cls, path: Path) -> Ledger:
        """The ledger a receiver's journal describes (a missing file: nothing arrived)."""
        ledger = cls()
        if not path.exists():
            return ledger
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a line being written as this reads it
            item.pop("received_at", None)
            handler = item.pop("handler", None)
            if isinstance(handler, dict):
                item["handler"] = HandlerAnswer(**handler)
            ledger.record(body=b"", **item)
        return ledger

    # --- reading --------------------------------------------------------------------------
    def arrivals(self, ref: str | None = None) -> list[Arrival]:
        with self._changed:
            items = list(self._arrivals)
        return items if ref is None else [a for a in items if a.ref == ref]

    def accepted(self, ref: str | None = None) -> list[Arrival]:
        """The first verified delivery of each event_id: the events, deduplicated."""
        with self._changed:
            items = list(self._accepted.values())
        return items if ref is None else [a for a in items if a.ref == ref]

    def counts(self) -> dict[str, int]:
        counts = {"verified": 0, "duplicate": 0, "rejected": 0, "refused": 0}
        for arrival in self.arrivals():
            counts[arrival.verdict] += 1
        return counts

    def wait_for(
        self,
        done: Callable[[Ledger], bool],
        timeout_s: float,
        *,
        stop: threading.Event | None = None,
    ) -> bool:
        """Block until ``done(self)`` (True), the timeout or ``stop`` (False)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not done(self):
                left = deadline - time.monotonic()
                if left <= 0 or (stop is not None and stop.is_set()):
                    return False
                self._changed.wait(min(left, 0.2))
            return True

    # --- the questions --------------------------------------------------------------------
    def refs(self) -> list[str]:
        """Transactions heard of, in the order of their first delivery."""
        return list(dict.fromkeys(a.ref for a in self.arrivals() if a.ref is not None))

    def ids_per_event(self, ref: str | None = None) -> dict[tuple[str, str], set[str]]:
        """(ref, event_kind) -> the event_ids it arrived under, signature aside: one event
        delivered under two ids is a duplicate no deduplication by id can catch."""
        found: dict[tuple[str, str], set[str]] = {}
        for arrival in self.arrivals(ref):
            if arrival.ref and arrival.kind and arrival.body_event_id:
                found.setdefault((arrival.ref, arrival.kind), set()).add(arrival.body_event_id)
        return found

    def first_arrival(self, ref: str, kind: str) -> Arrival | None:
        return next((arrival for arrival in self.arrivals(ref) if arrival.kind == kind), None)

    def out_of_order(self, ref: str) -> bool:
        """Whether ``ref``'s processed event was first attempted before its created event.

        Compared on first attempts (``Paysuite-Delivery-Attempt: 1``), recorded whatever the
        answer: a created delivery retried after a failure may rightly arrive after processed
        (the sender must not hold one transaction's events back for another's retries), and
        when neither first attempt arrived (the receiver was down) the order cannot be judged.
        Without attempt headers, first arrivals are compared.
        """
        arrivals = self.arrivals(ref)
        numbered = any(a.attempt is not None for a in arrivals)

        def first(kind: str) -> Arrival | None:
            firsts = (a for a in arrivals if not numbered or a.attempt == "1")
            return next((arrival for arrival in firsts if arrival.kind == kind), None)

        created, processed = first(CREATED), first(PROCESSED)
        return processed is not None and created is not None and processed.seq < created.seq

    def compare(self, listed: Iterable[Event]) -> Comparison:
        """The deliveries of the listed events' transactions against the list itself."""
        records = [r for r in listed if isinstance(r.get("event_id"), str)]
        by_id = {str(r["event_id"]): r for r in records}
        refs = {_ref_of(r) for r in records}
        accepted = {a.event_id: a for a in self.accepted() if a.event_id is not None}
        arrived = {a.body_event_id for a in self.arrivals() if a.body_event_id}
        missing, unverified, mismatched = [], [], []
        for event_id, record in by_id.items():
            if event_id in accepted:
                if accepted[event_id].event != record:
                    mismatched.append((record, accepted[event_id].event or {}))
            elif event_id in arrived:
                unverified.append(event_id)
            else:
                missing.append(record)
        unlisted = [
            a.event or {} for a in accepted.values() if a.ref in refs and a.event_id not in by_id
        ]
        return Comparison(
            listed=len(by_id),
            missing=tuple(missing),
            unverified=tuple(unverified),
            mismatched=tuple(mismatched),
            unlisted=tuple(unlisted),
        )


def _ref_of(record: Event) -> str | None:
    data = record.get("data")
    ref = data.get("ref") if isinstance(data, dict) else None
    return ref if isinstance(ref, str) else None
