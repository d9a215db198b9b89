"""SQLite persistence of the stub. ``Store`` is the one object callers hold; each table's SQL
lives in its own module, all on one connection with group commit (``group_commit``: why an
acknowledged write is durable). Test-only helpers (totals checked against a scan, counts) are in
``tests/stub/store_checks.py``.
"""

from __future__ import annotations

from stub_server.store.applications import Applications
from stub_server.store.events import Events
from stub_server.store.records import (
    Amount,
    AppRecord,
    EventQuery,
    EventRecord,
    KeyReused,
    NewTransaction,
    TxRecord,
)
from stub_server.store.refresh_rotation import RefreshRotation
from stub_server.store.refs import uuid4_text
from stub_server.store.transactions import Transactions
from stub_server.store.webhook_outbox import (
    DEFAULT_MODE,
    DELIVERY_STATUSES,
    Delivery,
    WebhookEndpoint,
    no_endpoint_error,
)
from stub_server.store.where import SqlValue, where_clause

__all__ = [
    "DEFAULT_MODE",
    "DELIVERY_STATUSES",
    "Amount",
    "AppRecord",
    "Delivery",
    "EventQuery",
    "EventRecord",
    "KeyReused",
    "NewTransaction",
    "SqlValue",
    "Store",
    "TxRecord",
    "WebhookEndpoint",
    "no_endpoint_error",
    "uuid4_text",
    "where_clause",
]


class Store(Applications, RefreshRotation, Transactions, Events):
    """One connection, used only from the event loop thread (see ``group_commit``)."""
