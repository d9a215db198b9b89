"""Cashin, cashout and find (Endpoints, 1. Cashin, 2. Cashout, 3. Find a transaction).

Enforces the creation request and response (TXN-001..TXN-004, FMT-001, FMT-003), the find
response and its 404 (FIND-001, FIND-002, FMT-004) and, for find, that an application sees only
its merchant's transactions (ISO-001, RC-6). The rules a creation goes through are named in
order in ``TransactionHandlers.create``; each lives in its own module.
"""

from __future__ import annotations

from aiohttp import web

from stub_server import timefmt
from stub_server.errors import ApiError, json_body, json_response
from stub_server.handlers.auth import authenticate
from stub_server.rules.fields import validate_amount, validate_number, webhook_mode
from stub_server.rules.lifecycle import due_for
from stub_server.rules.privileges import require_privilege
from stub_server.rules.request_body import read_json
from stub_server.state import Handlers
from stub_server.store import NewTransaction


class TransactionHandlers(Handlers):
    """``POST /transactions/cashin``, ``POST /transactions/cashout``,
    ``GET /transactions/find/{ref}``."""

    async def cashin(self, request: web.Request) -> web.Response:
        return await self.create(request, "CASHIN")

    async def cashout(self, request: web.Request) -> web.Response:
        return await self.create(request, "CASHOUT")

    async def create(self, request: web.Request, kind: str) -> web.Response:
        """401, 403, the body (415/413/408/400), the key (400), the fields (400), then the
        store (409 on a reused key); answered only once the creation is committed."""
        stub = self.stub
        settings = stub.settings
        hooks = stub.hooks
        record = authenticate(stub, request)
        require_privilege(record, kind, hooks.may_create)
        body = await read_json(
            request, settings, any_media_type=stub.any_media_type, on_malformed=hooks.malformed_json
        )
        key = stub.keys.key_of(request)
        amount = validate_amount(body, settings)
        number = validate_number(body, stub.number_regex, settings.number_pattern)
        mode = webhook_mode(request)
        kind = hooks.stored_kind(kind)
        ref = hooks.new_ref()
        created = timefmt.now_us()
        due_us, due_status = due_for(settings, number, created)
        await hooks.persist(
            NewTransaction(
                ref=ref,
                merchant=record.merchant,
                app_id=record.client_id,
                kind=kind,
                amount=amount,
                client=number,
                fee=round(amount * settings.fee_rate, 2),
                created_us=created,
                webhook_mode=mode,
                key=key,
                key_scope=stub.global_key_scope or record.merchant,
                due_us=due_us,
                due_status=due_status,
            )
        )
        return json_response(stub.render.creation(amount, created, kind, ref), stub.creation_status)

    async def find(self, request: web.Request) -> web.Response:
        """The lookup, rendered once per committed state of the transaction: the store drops
        the rendered body whenever a write touches the ref (``Transactions.lookups``)."""
        stub = self.stub
        record = authenticate(stub, request)
        ref = request.match_info["ref"]
        merchant = stub.hooks.visible_merchant(record)
        store = stub.store
        body = store.cached_lookup(ref, merchant)
        if body is None:
            tx = store.find(ref, merchant)
            if tx is None:
                raise ApiError(404, "transaction_not_found", f"no transaction with ref {ref!r}")
            body = json_body(stub.render.lookup(tx))
            store.remember_lookup(ref, merchant, body)
        return web.Response(body=body, content_type="application/json")
