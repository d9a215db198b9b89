"""The webhook delivery log: ``GET /_sandbox/webhooks/deliveries`` (RC-40), and
``POST /_sandbox/webhooks/deliveries/{event_id}/resend`` (``paysuite webhooks resend``).

Not in the interface document, which leaves webhook delivery "not shown": a test or an operator
sees here what the stub sent, to where, how often, and why an attempt failed, without running a
receiver. Served beside the sandbox's customer (only when ``sandbox`` is on), outside ``/api``,
without a token: like the sandbox, it is a test double's window, not the service's interface.
"""

from __future__ import annotations

from aiohttp import web

from stub_server import timefmt
from stub_server.errors import ApiError, json_response, validation_error
from stub_server.rules.single_values import refuse_repeated
from stub_server.state import Handlers
from stub_server.store import DELIVERY_STATUSES, Delivery

#: Deliveries per page unless ``limit`` says otherwise, and the most one page holds.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000
FILTERS = ("ref", "event_id", "status")


def render_delivery(d: Delivery) -> dict[str, str | int | None]:
    return {
        "event_id": d.event_id,
        "ref": d.ref,
        "event_kind": d.event_kind,
        "mode": d.mode,
        "url": d.url,
        "attempts": d.attempts,
        "status": d.status,
        "last_error": d.last_error,
        "next_attempt_at": timefmt.utc_text(d.next_attempt_us) if d.status == "pending" else None,
        "delivered_at": timefmt.utc_text(d.delivered_us),
    }


def _count(text: str | None, name: str, default: int, high: int) -> int:
    if text is None:
        return default
    if not text.isdigit() or int(text) > high:
        raise validation_error(name, f"must be an integer 0..{high}")
    return int(text)


class WebhookDeliveryHandlers(Handlers):
    """``GET /_sandbox/webhooks/deliveries?ref=&event_id=&status=&limit=&offset=``."""

    async def list_deliveries(self, request: web.Request) -> web.Response:
        query = request.query
        unknown = sorted(set(query) - {*FILTERS, "limit", "offset"})
        if unknown:
            raise validation_error(unknown[0], "unknown parameter (known: ref, event_id, "
                                   "status, limit, offset)")  # fmt: skip
        refuse_repeated(query, (*FILTERS, "limit", "offset"), "query parameter")
        status = query.get("status") or None
        if status is not None and status not in DELIVERY_STATUSES:
            raise validation_error("status", f"must be one of {', '.join(DELIVERY_STATUSES)}")
        limit = _count(query.get("limit"), "limit", DEFAULT_LIMIT, MAX_LIMIT)
        offset = _count(query.get("offset"), "offset", 0, 2**62)
        total, page = self.stub.store.deliveries(
            ref=query.get("ref") or None,
            event_id=query.get("event_id") or None,
            status=status,
            limit=limit,
            offset=offset,
        )
        return json_response(
            {
                "total": total,
                "limit": limit,
                "offset": offset,
                "deliveries": [render_delivery(d) for d in page],
            }
        )

    async def resend(self, request: web.Request) -> web.Response:
        """Deliver an event again, under the same event_id: its deliveries are made pending,
        due now (a delivered or abandoned one too); 404 for an event never delivered."""
        event_id = request.match_info["event_id"]
        rows = self.stub.store.resend(event_id, timefmt.now_us())
        sendable = [d for d in rows if d.url is not None]
        if not sendable:
            raise ApiError(
                404, "not_found", f"no delivery of event {event_id} to an endpoint to send again"
            )
        return json_response({"deliveries": [render_delivery(d) for d in sendable]})
