"""Webhook endpoints and the delivery outbox (reference choice RC-40: the document names webhooks
and ``X-Webhook-Mode`` but leaves delivery "not shown").

Why an outbox in the same database: a delivery row is inserted by ``enqueue_delivery`` inside
the very SQL transaction that inserts its event (``store.transactions``), so an event that is
committed (and acknowledged) always has its delivery committed with it, and a SIGKILL between
the commit and the POST loses nothing: the dispatcher (``stub_server.webhooks.dispatcher``)
finds the row ``pending`` on the next start. A row is written only when at least one endpoint
exists (``webhook_urls`` is empty otherwise), so a stub without webhooks pays one dict check per
event and nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from stub_server.store.group_commit import GroupCommitDatabase
from stub_server.store.records import EVENT_COLUMNS, EventRecord
from stub_server.store.where import SqlValue, where_clause

#: The mode of a transaction created without ``X-Webhook-Mode`` (RC-40).
DEFAULT_MODE = "development"
#: A delivery's ``status`` values, in the order a delivery can go through them.
DELIVERY_STATUSES = ("pending", "delivered", "abandoned")

DELIVERY_COLUMNS = (
    "id, event_seq, event_id, ref, event_kind, mode, url, attempts, status, last_error,"
    " next_attempt_us, delivered_us"
)


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """Where the deliveries of one mode go, and the secret that signs them."""

    mode: str
    url: str
    secret: str


@dataclass(frozen=True, slots=True)
class Delivery:
    """One row of ``webhook_outbox`` (``DELIVERY_COLUMNS``, in order): one event, one endpoint."""

    id: int
    event_seq: int
    event_id: str
    ref: str
    event_kind: str
    mode: str
    url: str | None
    attempts: int
    status: str
    last_error: str | None
    next_attempt_us: int | None
    delivered_us: int | None


def no_endpoint_error(mode: str) -> str:
    """The log's ``last_error`` of an event whose mode has no endpoint (never attempted)."""
    return f"no endpoint for mode {mode!r}"


class WebhookOutbox(GroupCommitDatabase):
    """The ``webhook_endpoints`` and ``webhook_outbox`` tables."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        #: mode -> URL of every endpoint, read at start and by ``reload_webhook_urls``.
        self.webhook_urls: dict[str, str] = {}
        #: Called after a pending delivery is enqueued (the dispatcher's wake-up).
        self.on_enqueue: Callable[[], None] | None = None
        self.reload_webhook_urls()

    # -- endpoints -------------------------------------------------------------------------
    def reload_webhook_urls(self) -> bool:
        """Re-read the endpoints (``paysuite stub webhooks add`` writes them from another
        process); True when they changed."""
        urls = dict(self.conn.execute("SELECT mode, url FROM webhook_endpoints").fetchall())
        changed = urls != self.webhook_urls
        self.webhook_urls = urls
        return changed

    def webhook_endpoints(self) -> list[WebhookEndpoint]:
        rows = self.conn.execute(
            "SELECT mode, url, secret FROM webhook_endpoints ORDER BY mode"
        ).fetchall()
        return [WebhookEndpoint(*row) for row in rows]

    def webhook_endpoint(self, mode: str) -> WebhookEndpoint | None:
        row = self.conn.execute(
            "SELECT mode, url, secret FROM webhook_endpoints WHERE mode = ?", (mode,)
        ).fetchone()
        return None if row is None else WebhookEndpoint(*row)

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint, now_us: int) -> None:
        """Add the endpoint of ``endpoint.mode``, or replace its URL and secret."""
        self.conn.execute(
            "INSERT INTO webhook_endpoints (mode, url, secret, created_us) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (mode) DO UPDATE SET url = excluded.url, secret = excluded.secret",
            (endpoint.mode, endpoint.url, endpoint.secret, now_us),
        )
        self.reload_webhook_urls()

    # -- the outbox, written inside an event's SQL transaction --------------------------------
    def enqueue_delivery(
        self,
        event_seq: int,
        event_id: str,
        ref: str,
        event_kind: str,
        mode: str | None,
        now_us: int,
    ) -> None:
        """Record the delivery of one event; call only when ``webhook_urls`` is not empty, on
        the raw connection inside the SQL transaction that inserted the event."""
        mode = mode or DEFAULT_MODE
        url = self.webhook_urls.get(mode)
        if url is None:  # recorded, so the log says why nothing was sent
            self._db.execute(
                "INSERT INTO webhook_outbox (event_seq, event_id, ref, event_kind, mode, url,"
                " status, last_error, created_us) VALUES (?, ?, ?, ?, ?, NULL, 'abandoned', ?, ?)",
                (event_seq, event_id, ref, event_kind, mode, no_endpoint_error(mode), now_us),
            )
            return
        self._db.execute(
            "INSERT INTO webhook_outbox (event_seq, event_id, ref, event_kind, mode, url, status,"
            " next_attempt_us, created_us) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            (event_seq, event_id, ref, event_kind, mode, url, now_us, now_us),
        )
        if self.on_enqueue is not None:
            self.on_enqueue()

    # -- the dispatcher's side -------------------------------------------------------------
    def due_deliveries(self, now_us: int, limit: int) -> list[Delivery]:
        """Pending deliveries due by ``now_us``, earliest due first (for first attempts: event
        order). Read along ``outbox_due``, so a large backlog costs no sort."""
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox INDEXED BY outbox_due"
            " WHERE status = 'pending' AND next_attempt_us <= ?"
            " ORDER BY next_attempt_us, id LIMIT ?",
            (now_us, limit),
        ).fetchall()
        return [Delivery(*row) for row in rows]

    def pending_deliveries_of(self, ref: str) -> list[Delivery]:
        """Every pending delivery of the transaction ``ref``, in event order."""
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox"
            " WHERE ref = ? AND status = 'pending' ORDER BY id",
            (ref,),
        ).fetchall()
        return [Delivery(*row) for row in rows]

    def next_delivery_due(self, exclude_refs: Collection[str] = ()) -> int | None:
        """When the earliest pending delivery is due (microseconds), if any, leaving out the
        transactions ``exclude_refs`` (those being delivered: a handful)."""
        marks = ", ".join("?" * len(exclude_refs))
        row = self.conn.execute(
            "SELECT next_attempt_us FROM webhook_outbox INDEXED BY outbox_due"
            " WHERE status = 'pending'"
            + (f" AND ref NOT IN ({marks})" if exclude_refs else "")
            + " ORDER BY next_attempt_us LIMIT 1",
            tuple(exclude_refs),
        ).fetchone()
        return None if row is None else int(row[0])

    def delivery_event(self, event_seq: int) -> EventRecord | None:
        row = self.conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (event_seq,)
        ).fetchone()
        return None if row is None else EventRecord(*row)

    def record_attempt(
        self,
        delivery_id: int,
        *,
        attempts: int,
        status: str,
        url: str | None,
        last_error: str | None,
        next_attempt_us: int | None,
        delivered_us: int | None,
    ) -> None:
        """The outcome of one attempt: delivered, pending again (retry due) or abandoned."""
        self.conn.execute(
            "UPDATE webhook_outbox SET attempts = ?, status = ?, url = ?, last_error = ?,"
            " next_attempt_us = ?, delivered_us = ? WHERE id = ?",
            (attempts, status, url, last_error, next_attempt_us, delivered_us, delivery_id),
        )

    # -- the sandbox's delivery log --------------------------------------------------------
    def deliveries(
        self,
        *,
        ref: str | None = None,
        event_id: str | None = None,
        status: str | None = None,
        limit: int = 1000,
        offset: int = 0,
    ) -> tuple[int, list[Delivery]]:
        """(total matching, one page oldest first) of the delivery log."""
        equal: tuple[tuple[str, SqlValue], ...] = (
            ("ref", ref),
            ("event_id", event_id),
            ("status", status),
        )
        clause, params = where_clause(equal, None, None)
        total = self.conn.execute(
            f"SELECT COUNT(*) FROM webhook_outbox{clause}", params
        ).fetchone()[0]
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox{clause} ORDER BY id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        return int(total), [Delivery(*row) for row in rows]
