"""Webhook endpoints and the delivery outbox (RC-40: the document names webhooks and
``X-Webhook-Mode`` but leaves delivery "not shown").

Why an outbox in the same database: a delivery row is inserted inside the very SQL transaction
that inserts its event (``store.transactions``), so a committed (acknowledged) event always has
its delivery committed with it, and a SIGKILL between the commit and the POST loses nothing. A
row is written only when an endpoint exists, so a stub without webhooks pays one dict check per
event. The endpoints' signing secrets are not in the database (``store.webhook_secrets``).
Deliveries are due per mode (``outbox_mode_due``), so that one endpoint's backlog never hides
another's due deliveries.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import astuple, dataclass

from stub_server.store.group_commit import GroupCommitDatabase
from stub_server.store.records import EVENT_COLUMNS, EventRecord, columns
from stub_server.store.webhook_secrets import EndpointSecrets, SecretsFile
from stub_server.store.where import where_clause

#: The mode of a transaction created without ``X-Webhook-Mode`` (RC-40).
DEFAULT_MODE = "development"
DELIVERY_STATUSES = ("pending", "delivered", "abandoned")


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    mode: str
    url: str
    secret: str
    #: During a rotation's overlap: the previous secret, and until when it still signs.
    previous: str | None = None
    previous_until_us: int | None = None

    @property
    def secrets(self) -> EndpointSecrets:
        return EndpointSecrets(self.secret, self.previous, self.previous_until_us)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One row of ``webhook_outbox`` (``DELIVERY_COLUMNS``, in order)."""

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


DELIVERY_COLUMNS = columns(Delivery)


def no_endpoint_error(mode: str) -> str:
    return f"no endpoint for mode {mode!r}"


def _not_in(refs: Collection[str]) -> str:
    """The condition leaving out ``refs`` (the transactions being delivered), bound in order."""
    return f" AND ref NOT IN ({', '.join('?' * len(refs))})" if refs else ""


class WebhookOutbox(GroupCommitDatabase):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.webhook_secrets = SecretsFile(path)
        #: mode -> URL of every endpoint, read at start and by ``reload_webhook_urls``.
        self.webhook_urls: dict[str, str] = {}
        #: Called after a pending delivery is enqueued (the dispatcher's wake-up).
        self.on_enqueue: Callable[[], None] | None = None
        self.reload_webhook_urls()

    def reload_webhook_urls(self) -> None:
        """``paysuite stub webhooks add`` writes the endpoints from another process."""
        self.webhook_urls = dict(self.conn.execute("SELECT mode, url FROM webhook_endpoints"))

    def _endpoint(self, mode: str, url: str) -> WebhookEndpoint | None:
        secrets = self.webhook_secrets.get(mode)
        if secrets is None:  # an endpoint whose secret file was lost: it cannot sign
            return None
        return WebhookEndpoint(mode, url, *astuple(secrets))

    def webhook_endpoints(self) -> list[WebhookEndpoint]:
        rows = self.conn.execute("SELECT mode, url FROM webhook_endpoints ORDER BY mode").fetchall()
        found = [self._endpoint(mode, url) for mode, url in rows]
        return [e for e in found if e is not None]

    def webhook_endpoint(self, mode: str) -> WebhookEndpoint | None:
        return next((e for e in self.webhook_endpoints() if e.mode == mode), None)

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint, now_us: int) -> None:
        """The secrets go to the secrets file first, the database gets the mode and URL only."""
        self.webhook_secrets.put(endpoint.mode, endpoint.secrets)
        self.conn.execute(
            "INSERT INTO webhook_endpoints (mode, url, secret, created_us) VALUES (?, ?, '', ?)"
            " ON CONFLICT (mode) DO UPDATE SET url = excluded.url, secret = ''",
            (endpoint.mode, endpoint.url, now_us),
        )
        self.reload_webhook_urls()

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
        # without an endpoint: recorded abandoned, so the log says why nothing was sent
        due = ("pending", None, now_us) if url else ("abandoned", no_endpoint_error(mode), None)
        self._db.execute(
            "INSERT INTO webhook_outbox (event_seq, event_id, ref, event_kind, mode, url, status,"
            " last_error, next_attempt_us, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event_seq, event_id, ref, event_kind, mode, url, *due, now_us),
        )
        if url is not None and self.on_enqueue is not None:
            self.on_enqueue()

    def due_deliveries(
        self, now_us: int, limit: int, exclude_refs: Collection[str] = (), *, mode: str
    ) -> list[Delivery]:
        """Earliest due first (for first attempts: event order), leaving out the transactions
        being delivered; along ``outbox_mode_due``, so a large backlog costs no sort."""
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox INDEXED BY outbox_mode_due"
            " WHERE status = 'pending' AND mode = ? AND next_attempt_us <= ?"
            + _not_in(exclude_refs)
            + " ORDER BY next_attempt_us, id LIMIT ?",
            (mode, now_us, *exclude_refs, limit),
        ).fetchall()
        return [Delivery(*row) for row in rows]

    def pending_modes(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT mode FROM webhook_outbox INDEXED BY outbox_mode_due"
            " WHERE status = 'pending'"
        ).fetchall()
        return [str(row[0]) for row in rows]

    def pending_deliveries_of(self, ref: str) -> list[Delivery]:
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox"
            " WHERE ref = ? AND status = 'pending' ORDER BY id",
            (ref,),
        ).fetchall()
        return [Delivery(*row) for row in rows]

    def next_delivery_due(self, mode: str, exclude_refs: Collection[str] = ()) -> int | None:
        row = self.conn.execute(
            "SELECT next_attempt_us FROM webhook_outbox INDEXED BY outbox_mode_due"
            " WHERE status = 'pending' AND mode = ?"
            + _not_in(exclude_refs)
            + " ORDER BY next_attempt_us LIMIT 1",
            (mode, *exclude_refs),
        ).fetchone()
        return None if row is None else int(row[0])

    def resend(self, event_id: str, now_us: int) -> list[Delivery]:
        """``paysuite webhooks resend``: sent once more, due now, with the same event_id."""
        self.conn.execute(
            "UPDATE webhook_outbox SET status = 'pending', next_attempt_us = ?, delivered_us = NULL"
            " WHERE event_id = ? AND url IS NOT NULL",
            (now_us, event_id),
        )
        if self.on_enqueue is not None:
            self.on_enqueue()
        return self.deliveries(event_id=event_id)[1]

    def delivery_event(self, event_seq: int) -> EventRecord | None:
        row = self.conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (event_seq,)
        ).fetchone()
        return None if row is None else EventRecord(*row)

    def record_attempt(
        self,
        delivery_id: int,
        attempts: int,
        status: str,
        url: str | None,
        *,
        last_error: str | None = None,
        next_attempt_us: int | None = None,
        delivered_us: int | None = None,
    ) -> None:
        self.conn.execute(
            "UPDATE webhook_outbox SET attempts = ?, status = ?, url = ?, last_error = ?,"
            " next_attempt_us = ?, delivered_us = ? WHERE id = ?",
            (attempts, status, url, last_error, next_attempt_us, delivered_us, delivery_id),
        )

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
        equal = (("ref", ref), ("event_id", event_id), ("status", status))
        clause, params = where_clause(equal, None, None)

        total = self.conn.execute(
            f"SELECT COUNT(*) FROM webhook_outbox{clause}", params
        ).fetchone()[0]
        rows = self.conn.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM webhook_outbox{clause} ORDER BY id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        return int(total), [Delivery(*row) for row in rows]
