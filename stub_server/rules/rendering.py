"""Transactions and events as the document's resources show them (Resources and their fields).

Checked by FIND-001, EVT-002, FMT-003..FMT-005, FMT-007, LIFE-005 and PROP-004. The document
puts event times in UTC and the find ``timestamp`` at the service's offset (RC-15); the
``successful-status`` variant and the ``timestamp-format`` fault change what is written, never
what is stored, so they are fields of ``Renderer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timezone

from stub_server import timefmt
from stub_server.store import Amount, EventRecord, TxRecord

#: A JSON value as rendered: the resources hold text, numbers and nulls.
JsonValue = str | int | float | None


@dataclass
class Renderer:
    """Renders records; ``utc_text``/``offset_text`` decide the timestamp format."""

    tz: timezone
    success_text: str = "success"
    utc_text: Callable[[int | None], str | None] = timefmt.utc_text
    offset_text: Callable[[int, timezone], str] = timefmt.offset_text
    #: The stored status as find shows it: itself (a fault switch may break that).
    find_status: Callable[[str], str] = str

    def status_text(self, status: str) -> str:
        """``success`` as the configured word (RC-17), any other status as stored."""
        return self.success_text if status == "success" else status

    def lookup(self, tx: TxRecord) -> dict[str, JsonValue]:
        """The find response (Endpoints, 3. Find a transaction)."""
        return {
            "amount": tx.amount,
            "client": tx.client,
            "fee": tx.fee,
            "kind": tx.kind,
            "merchant": tx.merchant,
            "ref": tx.ref,
            "status": self.status_text(self.find_status(tx.status)),
            "timestamp": self.offset_text(tx.created_us, self.tz),
        }

    def event(self, ev: EventRecord) -> dict[str, str | dict[str, JsonValue] | None]:
        """One record of the events list (Endpoints, 4. List transaction events)."""
        utc_text = self.utc_text
        data: dict[str, JsonValue] = {
            "ref": ev.ref,
            "kind": ev.kind,
            "fee": ev.fee,
            "merchant": ev.merchant,
            "client": ev.client,
            "amount": ev.amount,
            "status": self.status_text(ev.status),
            "created_at": utc_text(ev.tx_created_us),
            "processed_at": utc_text(ev.processed_us),
        }
        return {
            "event_id": ev.event_id,
            "event_kind": ev.event_kind,
            "created_at": utc_text(ev.created_us),
            "data": data,
        }

    def creation(
        self, amount: Amount, created_us: int, kind: str, ref: str
    ) -> dict[str, JsonValue]:
        """The creation response (Endpoints, 1. Cashin and 2. Cashout): always ``pending``."""
        return {
            "amount": amount,
            "created_at": self.utc_text(created_us),
            "kind": kind,
            "ref": ref,
            "status": "pending",
        }
