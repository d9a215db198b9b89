"""Read-only SQL behind the SDK-only routes (RC-36, RC-37): a merchant's balances and its
transactions list. Kept out of ``stub_server.store`` because nothing in the document needs it;
both scan ``transactions``, which has no merchant index (creation pays for every index).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from stub_server.filters import ListFilters
from stub_server.store import Amount, SqlValue, Store, TxRecord, where_clause
from stub_server.store.records import TX_COLUMNS

#: Provider names of the Go SDK's ``detectProvider`` (``paypack/driver/api/providers.go``),
#: which maps a number's operator prefix, with or without the country code, to a channel.
MTN = "momo-mtn-rw"
AIRTEL = "momo-airtel-rw"
UNKNOWN = "unknown"
_PREFIXES = {"078": MTN, "079": MTN, "072": AIRTEL, "073": AIRTEL}
_COUNTRY = re.compile(r"^\+?25")
_PROVIDER_SQL = (
    "CASE"
    " WHEN client GLOB '07[89]*' OR client GLOB '+2507[89]*' OR client GLOB '2507[89]*'"
    f" THEN '{MTN}'"
    " WHEN client GLOB '07[23]*' OR client GLOB '+2507[23]*' OR client GLOB '2507[23]*'"
    f" THEN '{AIRTEL}'"
    f" ELSE '{UNKNOWN}' END"
)


def provider_of(number: str) -> str:
    local = _COUNTRY.sub("", number, count=1)
    return _PREFIXES.get(local[:3], UNKNOWN)


@dataclass(frozen=True, slots=True)
class Balances:
    total: Amount
    mtn: Amount
    airtel: Amount


@dataclass(frozen=True, slots=True)
class TxPage:
    total: int
    cashin: Amount
    cashout: Amount
    fee: Amount
    transactions: list[TxRecord]


def _sum_or_total(conn: sqlite3.Connection, sql: str, params: list[SqlValue]) -> list[Any]:
    """Exact ``SUM``; on integer overflow, floating ``TOTAL`` instead."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return conn.execute(sql.replace("SUM(", "TOTAL("), params).fetchall()


def _money(value: Amount) -> Amount:
    """Integers stay exact; a float sum loses the binary noise of adding two-decimal fees."""
    return round(value, 2) if isinstance(value, float) else value


def balances(store: Store, merchant: str) -> Balances:
    """Settled balance (RC-36): each ``success`` cashin adds amount minus fee, each ``success``
    cashout removes amount plus fee; pending and failed transactions move nothing."""
    rows = _sum_or_total(
        store.conn,
        f"SELECT {_PROVIDER_SQL} AS provider, kind, SUM(amount), SUM(fee) FROM transactions"
        " WHERE merchant = ? AND status = 'success' GROUP BY provider, kind",
        [merchant],
    )
    net: dict[str, Amount] = {MTN: 0, AIRTEL: 0, UNKNOWN: 0}
    for provider, kind, amount, fee in rows:
        net[provider] += amount - fee if kind == "CASHIN" else -amount - fee
    return Balances(
        total=_money(sum(net.values())), mtn=_money(net[MTN]), airtel=_money(net[AIRTEL])
    )


def list_transactions(store: Store, merchant: str, q: ListFilters) -> TxPage:
    """Newest first, with totals over every match."""
    clause, params = where_clause(
        (("merchant", merchant), ("status", q.status), ("client", q.client), ("ref", q.ref),
         ("kind", q.kind)),
        q.from_us,
        q.to_us,
    )  # fmt: skip
    conn = store.conn
    ((total, cashin, cashout, fee),) = _sum_or_total(
        conn,
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN kind = 'CASHIN' THEN amount END), 0),"
        " COALESCE(SUM(CASE WHEN kind = 'CASHOUT' THEN amount END), 0), COALESCE(SUM(fee), 0)"
        f" FROM transactions{clause}",
        params,
    )
    rows: list[Any] = []  # sqlite3's rows are untyped
    if total > q.offset:
        rows = conn.execute(
            f"SELECT {TX_COLUMNS} FROM transactions{clause}"
            " ORDER BY created_us DESC, id DESC LIMIT ? OFFSET ?",
            [*params, q.limit, q.offset],
        ).fetchall()
    return TxPage(
        total=int(total),
        cashin=_money(cashin),
        cashout=_money(cashout),
        fee=_money(fee),
        transactions=[TxRecord(*row) for row in rows],
    )
