"""The events list (Endpoint 4; EVT-001, EVT-003..EVT-010, ISO-002) and its ``total`` and
``amount`` (RC-27).

Why running totals: ``total`` and ``amount`` come from cells kept by triggers in the same SQL
statement as each insert (``store.event_totals``), so they are exactly what a scan would give,
and the unfiltered list (or one filtered by status, kind or event kind) costs the same at any
store size. Whenever the cells cannot be exact (a float amount, whose sum depends on the order
of addition; a sum past SQLite's integers) the list falls back to the scan, which adds
fractional amounts as decimals (``store.decimal_sum``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from stub_server.store.decimal_sum import EXACT_SUM_SQL, EXACT_SUM_WIDE_SQL, combine
from stub_server.store.event_totals import HOUR_US
from stub_server.store.group_commit import GroupCommitDatabase
from stub_server.store.records import EVENT_COLUMNS, Amount, EventQuery, EventRecord
from stub_server.store.where import SqlValue, where_clause

#: From this offset on, a page is found in the index first and only its rows are read.
DEFERRED_OFFSET = 200


class Events(GroupCommitDatabase):
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
        if q.client is None and q.ref is None:
            if q.from_us is None and q.to_us is None:
                counted = self._totals_from_cells(clause, params)
            else:
                counted = self._totals_for_range(q)
        total, amount = counted if counted is not None else self.scan_totals(clause, params)
        order = "ASC" if q.oldest_first else "DESC"
        rows: list[Any] = []  # sqlite3's rows are untyped
        if total > q.offset:
            # Without statistics SQLite walks ev_merchant_time to avoid a sort, reading every
            # event of the merchant to find a ref's two; a ref or a client names few events, so
            # their own index is the way in. Deep pages: the offset is skipped in the covering
            # index and only the page's rows are read (same order, same rows).
            source = "events"
            if q.merchant is not None and q.ref is not None:
                source = "events INDEXED BY ev_ref"
            elif q.merchant is not None and q.client is not None:
                source = "events INDEXED BY ev_client_time"
            ordered = f" ORDER BY created_us {order}, seq {order}"
            page = f"{source}{clause}{ordered} LIMIT ? OFFSET ?"
            if q.offset >= DEFERRED_OFFSET and source == "events":
                page = f"events WHERE seq IN (SELECT seq FROM {page}){ordered}"
            rows = self.conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM {page}", [*params, q.limit, q.offset]
            ).fetchall()
        return int(total), amount, [EventRecord(*row) for row in rows]

    def _totals_from_cells(
        self, clause: str, params: list[SqlValue], table: str = "event_totals"
    ) -> tuple[int, Amount] | None:
        """(total, amount) from the running totals of ``table``, or None when only a scan is
        exact (a float amount, or an overflow of the cells' sum)."""
        try:
            n, amount, n_real, any_real = self.conn.execute(
                "SELECT COALESCE(SUM(n), 0), COALESCE(SUM(amount), 0), COALESCE(SUM(n_real), 0),"
                f" MAX(typeof(amount) = 'real') FROM {table}{clause}",
                params,
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow of the cells' sum
            return None
        if n_real or any_real:
            return None
        return n, amount

    def _totals_for_range(self, q: EventQuery) -> tuple[int, Amount] | None:
        """(total, amount) of a ``from``/``to`` list: whole hours from ``event_totals_hourly``,
        the partial hours at either end scanned; None when only a full scan is exact (a float
        amount, an overflow, times before 1970, or a range within two hours)."""
        lo, hi = q.from_us, q.to_us
        if (lo is not None and lo < 0) or (hi is not None and hi < 0):
            return None
        first = None if lo is None else max(-(-lo // HOUR_US), 1)  # first whole hour
        last = None if hi is None else (hi + 1) // HOUR_US - 1  # last whole hour
        if last is not None and last < 0:
            return None
        if first is not None and last is not None and first > last:
            return None  # a short range: the scan reads at most two hours of events
        equal = (
            ("merchant", q.merchant), ("status", q.status), ("kind", q.kind),
            ("event_kind", q.event_kind),
        )  # fmt: skip
        clause, params = where_clause(equal, None, None)
        hours = [clause or " WHERE 1"]
        if first is not None:
            hours.append("hour >= ?")
            params.append(first)
        if last is not None:
            hours.append("hour <= ?")
            params.append(last)
        cells = self._totals_from_cells(" AND ".join(hours), params, "event_totals_hourly")
        if cells is None:
            return None
        n, amount = cells
        edges = []
        if lo is not None and first is not None:
            edges.append((lo, first * HOUR_US - 1))
        if hi is not None and last is not None:
            edges.append(((last + 1) * HOUR_US, hi))
        for start, end in edges:
            clause, params = where_clause(equal, start, end)
            edge_n, edge_amount = self.scan_totals(clause, params)
            if isinstance(edge_amount, float):
                return None
            n += edge_n
            amount += edge_amount
        return n, amount

    def scan_totals(self, clause: str = "", params: Sequence[SqlValue] = ()) -> tuple[int, Amount]:
        """(count, sum of amounts) of the events matching ``clause``, by reading them all;
        fractional amounts are added as decimals (``store.decimal_sum``)."""
        try:
            total, integers, reals = self.conn.execute(
                f"SELECT COUNT(*), {EXACT_SUM_SQL} FROM events{clause}", params
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow: only with huge configured amounts
            total, integers, reals = self.conn.execute(
                f"SELECT COUNT(*), {EXACT_SUM_WIDE_SQL} FROM events{clause}", params
            ).fetchone()
        return total, combine(integers, reals)
