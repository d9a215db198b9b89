"""The events list (Endpoints, 4. List transaction events) and its ``total`` and ``amount``.

Checked by EVT-001, EVT-003..EVT-010, ISO-002 and LIFE-001..LIFE-003 (the events a transaction's
life records are written by ``store.transactions``).

Why running totals: the list's ``total`` and ``amount`` (RC-27) come from ``event_totals``,
kept by triggers inside the same SQL statement as each insert (``store.event_totals``), so they
are exactly what a scan would count and sum, and the unfiltered list (or one filtered by status,
kind or event kind) costs the same at any store size. Whenever the cells cannot give the scan's
exact answer (a float amount, whose sum depends on the order of addition; a sum past SQLite's
integers) the list falls back to the scan.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from stub_server.store.group_commit import GroupCommitDatabase
from stub_server.store.records import EVENT_COLUMNS, Amount, EventQuery, EventRecord
from stub_server.store.where import SqlValue, where_clause


class Events(GroupCommitDatabase):
    """Reading the events list: one page, its ``total`` and its ``amount``."""

    def list_events(self, q: EventQuery) -> tuple[int, Amount, list[EventRecord]]:
        """(total, sum of amounts, page) for the matching events."""
        clause, params = where_clause(
            (
                ("merchant", q.merchant),
                ("status", q.status),
                ("client", q.client),
                ("ref", q.ref),
                ("kind", q.kind),
                ("event_kind", q.event_kind),
            ),
            q.from_us,
            q.to_us,
        )
        counted = None
        if q.client is None and q.ref is None and q.from_us is None and q.to_us is None:
            counted = self._totals_from_cells(clause, params)
        total, amount = counted if counted is not None else self.scan_totals(clause, params)
        order = "ASC" if q.oldest_first else "DESC"
        rows: list[Any] = []  # sqlite3's rows are untyped
        if total > q.offset:
            rows = self.conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events{clause}"
                f" ORDER BY created_us {order}, seq {order} LIMIT ? OFFSET ?",
                [*params, q.limit, q.offset],
            ).fetchall()
        return int(total), amount, [EventRecord(*row) for row in rows]

    def _totals_from_cells(self, clause: str, params: list[SqlValue]) -> tuple[int, Amount] | None:
        """(total, amount) from the running totals, or None when only a scan is exact."""
        try:
            n, amount, n_real, any_real = self.conn.execute(
                "SELECT COALESCE(SUM(n), 0), COALESCE(SUM(amount), 0), COALESCE(SUM(n_real), 0),"
                f" MAX(typeof(amount) = 'real') FROM event_totals{clause}",
                params,
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow of the cells' sum
            return None
        if n_real or any_real:
            return None
        return n, amount

    def scan_totals(self, clause: str = "", params: Sequence[SqlValue] = ()) -> tuple[int, Amount]:
        """(count, sum of amounts) of the events matching ``clause``, by reading them all."""
        try:
            total, amount = self.conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM events{clause}", params
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow: only with huge configured amounts
            total, amount = self.conn.execute(
                f"SELECT COUNT(*), TOTAL(amount) FROM events{clause}", params
            ).fetchone()
        return total, amount
