"""The events list (Endpoints, 4. List transaction events; Events).

Enforces the envelope and its echoed filters (EVT-001, EVT-009, RC-26), the filters (EVT-003..
EVT-006), paging and ``total`` (EVT-007, EVT-010, RC-23), newest first (EVT-008, RC-22) and that
an application sees only its merchant's events (ISO-002). ``total`` and the summed ``amount``
(RC-27) come from the store's running totals: ``stub_server.store.event_totals``.
"""

from __future__ import annotations

from aiohttp import web

from stub_server.errors import json_response
from stub_server.filters import EVENT_FILTERS, parse_list_query
from stub_server.handlers.auth import authenticate
from stub_server.state import Handlers
from stub_server.store import EventQuery

MAX_OFFSET = 2**62
#: Envelope keys the ``envelope-omitempty`` behaviour keeps even when empty (the document's
#: "The list response holds limit, offset, total and the transactions array").
ENVELOPE_ALWAYS = frozenset({"limit", "offset", "total", "transactions"})


class EventHandlers(Handlers):
    """``GET /events/transactions``."""

    async def list_events(self, request: web.Request) -> web.Response:
        stub = self.stub
        record = authenticate(stub, request)
        f = parse_list_query(
            request.query,
            EVENT_FILTERS,
            lenient=stub.lenient_filters,
            default_limit=stub.default_limit,
        )
        given = f.given
        q = EventQuery(
            merchant=stub.hooks.visible_merchant(record),
            status=stub.hooks.status_filter(f.status),
            client=f.client,
            ref=f.ref,
            kind=f.kind,
            event_kind=f.event_kind,
            from_us=f.from_us,
            to_us=f.to_us,
            limit=f.limit,
            offset=min(f.offset, MAX_OFFSET),
            oldest_first=stub.oldest_first,
        )
        total, amount, events = stub.store.list_events(q)
        envelope = {
            "amount": amount,
            "client": given.get("client", ""),
            "event-kind": given.get("event-kind", ""),
            "kind": given.get("kind", ""),
            "limit": f.limit,
            "offset": f.offset,
            "ref": given.get("ref", ""),
            "status": given.get("status", ""),
            "total": total,
            "transactions": [stub.render.event(ev) for ev in events],
        }
        if stub.omit_empty_envelope:  # Go's omitempty: "" and 0 are left out
            envelope = {k: v for k, v in envelope.items() if v or k in ENVELOPE_ALWAYS}
        return json_response(envelope)
