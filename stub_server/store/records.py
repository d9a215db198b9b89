"""The rows the store hands out and takes in, apart from the SQL so that handlers, renderers
and tests can name a record without pulling in a connection."""

from __future__ import annotations

from dataclasses import dataclass, fields

#: A JSON number as stored: SQLite keeps integers and reals apart, and so does the stub.
Amount = int | float


@dataclass(frozen=True, slots=True)
class AppRecord:
    client_id: str
    secret_hash: str
    privilege: str
    merchant: str


@dataclass(frozen=True, slots=True)
class TxRecord:
    """One transaction row (``TX_COLUMNS``, in order)."""

    id: int
    ref: str
    merchant: str
    app_id: str
    kind: str
    amount: Amount
    client: str
    fee: Amount
    status: str
    created_us: int
    processed_us: int | None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event row (``EVENT_COLUMNS``, in order): the event and its transaction's data."""

    event_id: str
    event_kind: str
    created_us: int
    merchant: str
    ref: str
    kind: str
    client: str
    amount: Amount
    fee: Amount
    status: str
    tx_created_us: int
    processed_us: int | None


def columns(record: type) -> str:
    """The SELECT list of a row dataclass: its fields, in order, are the columns it reads."""
    return ", ".join(field.name for field in fields(record))


TX_COLUMNS = columns(TxRecord)
EVENT_COLUMNS = columns(EventRecord)


@dataclass(frozen=True, slots=True)
class EventQuery:
    """``None`` filters nothing."""

    merchant: str | None
    status: str | None = None
    client: str | None = None
    ref: str | None = None
    kind: str | None = None
    event_kind: str | None = None
    from_us: int | None = None
    to_us: int | None = None
    limit: int = 20
    offset: int = 0
    oldest_first: bool = False


@dataclass(frozen=True, slots=True)
class NewTransaction:
    ref: str
    merchant: str
    app_id: str
    kind: str
    amount: Amount
    client: str
    fee: Amount
    created_us: int
    webhook_mode: str | None
    key: str
    due_us: int | None
    due_status: str | None
    #: The idempotency row's scope: the merchant (RC-6), or one service-wide value under the
    #: ``global-keys`` behaviour. ``None`` means ``merchant``.
    key_scope: str | None = None


class KeyReused(Exception):
    """The idempotency key is already recorded in its scope (the merchant, or global)."""
