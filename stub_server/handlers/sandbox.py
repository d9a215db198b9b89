"""The sandbox (the simulated customer's confirm and cancel) and ``/healthz``.

Not in the interface document: a test double needs a way to move a transaction out of
``pending`` on demand. It drives States and transitions, checked by LIFE-002..LIFE-005; the
transition itself is ``stub_server.rules.lifecycle``. Served outside ``/api`` and only when the
``sandbox`` setting is on.
"""

from __future__ import annotations

from aiohttp import web

from stub_server.errors import ApiError, json_response
from stub_server.state import Handlers


class SandboxHandlers(Handlers):
    """``POST /_sandbox/transactions/{ref}/{confirm|cancel}`` and ``GET /healthz``."""

    async def settle(self, request: web.Request) -> web.Response:
        stub = self.stub
        ref = request.match_info["ref"]
        action = request.match_info["action"]
        tx = stub.store.find(ref, None)
        if tx is None:
            raise ApiError(404, "transaction_not_found", f"no transaction with ref {ref!r}")
        if not stub.hooks.may_settle(tx.status):
            raise ApiError(
                409,
                "transaction_not_pending",
                f"transaction {ref} is already {stub.render.status_text(tx.status)}",
            )
        tx = stub.hooks.sandbox_settle(stub, tx, action)
        return json_response(stub.render.lookup(tx))

    async def healthz(self, request: web.Request) -> web.Response:
        return json_response({"status": "ok"})
