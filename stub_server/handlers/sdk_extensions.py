"""The routes the published SDKs call beyond the interface document (``x-extension`` in the spec).

paypack-py, paypack-js and paypack-go all call ``GET /merchants/me`` and ``GET /transactions/list``;
a stand-in for the live service that answered them 404 would break those SDK methods, so the stub
serves them with the shapes the SDKs parse. The conformance suite never demands them. Both need an
access token (any privilege, like the document's reads) and see only the caller's merchant.

Not served: the Go SDK's checkout lookup (``GET checkouts/find/{agent}``): its response carries
the application's ``client_secret``, which the document says is displayed only once; the stub
keeps only a hash of it.
"""

from __future__ import annotations

from aiohttp import web

from stub_server import merchant_queries
from stub_server.errors import json_response
from stub_server.filters import TRANSACTION_FILTERS, parse_list_query
from stub_server.handlers.auth import authenticate
from stub_server.state import Handlers


class SdkHandlers(Handlers):
    async def merchant_me(self, request: web.Request) -> web.Response:
        """The caller's merchant profile (RC-36): the fields of the SDKs' merchant type."""
        stub = self.stub
        record = authenticate(stub, request)
        rate = stub.settings.fee_rate
        money = merchant_queries.balances(stub.store, record.merchant)
        return json_response(
            {
                "id": record.merchant,
                "name": record.merchant,
                **dict.fromkeys(("in_rate", "out_rate", "airtel_in_rate", "airtel_out_rate"), rate),
                "balance": money.total,
                "mtn_balance": money.mtn,
                "airtel_balance": money.airtel,
            }
        )

    async def list_transactions(self, request: web.Request) -> web.Response:
        """The caller's transactions, newest first, filtered like the events list (RC-37)."""
        stub = self.stub
        record = authenticate(stub, request)
        f = parse_list_query(request.query, TRANSACTION_FILTERS)
        page = merchant_queries.list_transactions(stub.store, record.merchant, f)
        body: dict[str, object] = {
            **f.given,
            "offset": f.offset,
            "limit": f.limit,
            "total": page.total,
            "cashin": page.cashin,
            "cashout": page.cashout,
            "fee": page.fee,
            "transactions": [
                {**stub.render.lookup(tx), "provider": merchant_queries.provider_of(tx.client)}
                for tx in page.transactions
            ],
        }
        return json_response(body)
