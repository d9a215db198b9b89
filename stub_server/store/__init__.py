"""SQLite persistence of the stub: applications, transactions, events, idempotency keys, spent
refresh tokens. ``Store`` is the one object callers hold; each table's SQL lives in its own
module, all on one connection with group commit:

- ``group_commit``: the connection, its pragmas and the batched COMMIT of creations (why an
  acknowledged write is durable); ``checkpoint``: the WAL checkpoint thread.
- ``schema``: the tables and the migration of older databases.
- ``applications``, ``meta``, ``refresh_rotation`` (RC-10), ``transactions`` (creation with its
  idempotency key, lookup, processing), ``events`` (the list, its running ``total`` and
  ``amount``, RC-27), ``webhooks`` (webhook endpoints and the delivery outbox, RC-40).
- ``records``: the dataclasses handed in and out; ``refs``: the UUID pool; ``where``: the WHERE
  builder both lists share.

Test-only helpers (totals checked against a scan, counts) are in ``tests/stub/store_checks.py``.
"""

from __future__ import annotations

from stub_server.store.applications import Applications
from stub_server.store.checkpoint import (
    AUTOCHECKPOINT_BACKSTOP_PAGES,
    CHECKPOINT_COMMITS,
    Checkpointer,
)
from stub_server.store.events import Events
from stub_server.store.meta import Meta
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
from stub_server.store.schema import SCHEMA, make_private
from stub_server.store.transactions import KeyMode, Transactions
from stub_server.store.webhook_outbox import (
    DEFAULT_MODE,
    DELIVERY_STATUSES,
    Delivery,
    WebhookEndpoint,
    no_endpoint_error,
)
from stub_server.store.where import SqlValue, where_clause

__all__ = [
    "AUTOCHECKPOINT_BACKSTOP_PAGES",
    "CHECKPOINT_COMMITS",
    "DEFAULT_MODE",
    "DELIVERY_STATUSES",
    "SCHEMA",
    "Amount",
    "AppRecord",
    "Checkpointer",
    "Delivery",
    "EventQuery",
    "EventRecord",
    "KeyMode",
    "KeyReused",
    "NewTransaction",
    "SqlValue",
    "Store",
    "TxRecord",
    "WebhookEndpoint",
    "make_private",
    "no_endpoint_error",
    "uuid4_text",
    "where_clause",
]


class Store(Applications, Meta, RefreshRotation, Transactions, Events):
    """One connection, used only from the event loop thread (see ``group_commit``)."""
