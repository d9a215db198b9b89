"""The aiohttp application: routes, the error middleware, and the background work's lifecycle.
Nothing here decides an answer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from paysuite_core import listening
from stub_server.errors import make_error_middleware
from stub_server.handlers.auth import AuthHandlers
from stub_server.handlers.events import EventHandlers
from stub_server.handlers.sandbox import SandboxHandlers
from stub_server.handlers.sdk_extensions import SdkHandlers
from stub_server.handlers.transactions import TransactionHandlers
from stub_server.handlers.webhook_deliveries import WebhookDeliveryHandlers
from stub_server.latency import make_latency_middleware
from stub_server.rules.lifecycle import resolve_due_forever
from stub_server.state import StubApp
from stub_server.token_issuer import SHORT_LIVED_PATH
from stub_server.webhook_delivery.dispatcher import Dispatcher

__all__ = ["STUB_KEY", "StubApp", "build_app", "expect_continue"]

STUB_KEY: web.AppKey[StubApp] = web.AppKey("stub", StubApp)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = tuple[str, str, Handler]


async def expect_continue(request: web.Request) -> None:
    """``Expect: 100-continue`` gets its interim answer unless the body's length is over the
    limit (the handler answers 413 without it); any other expectation is ignored
    (``paysuite_core.listening.expect_continue``)."""
    await listening.expect_continue(request, request.app[STUB_KEY].settings.max_body_bytes)


def routes(stub: StubApp) -> list[Route]:
    settings = stub.settings
    auth = AuthHandlers(stub)
    transactions = TransactionHandlers(stub)
    events = EventHandlers(stub)
    sandbox = SandboxHandlers(stub)
    sdk = SdkHandlers(stub)
    table: list[Route] = [
        ("POST", "/api/auth/agents/authorize", auth.authorize),
        ("GET", "/api/auth/refresh/{token}", auth.refresh),
        ("POST", "/api/transactions/cashin", transactions.cashin),
        ("POST", "/api/transactions/cashout", transactions.cashout),
        ("GET", "/api/transactions/find/{ref}", transactions.find),
        ("GET", "/api/events/transactions", events.list_events),
        ("GET", "/healthz", sandbox.healthz),
        # the published SDKs' routes beyond the document
        ("GET", "/api/merchants/me", sdk.merchant_me),
        ("GET", "/api/transactions/list", sdk.list_transactions),
    ]
    if not settings.variant("short-refresh-only"):
        table.append(("GET", "/api/auth/agents/refresh/{token}", auth.refresh))
    if settings.sandbox:
        deliveries = WebhookDeliveryHandlers(stub)
        table += [
            ("POST", "/_sandbox/transactions/{ref}/{action:confirm|cancel}", sandbox.settle),
            ("POST", SHORT_LIVED_PATH, auth.authorize_short_lived),
            ("GET", "/_sandbox/webhooks/deliveries", deliveries.list_deliveries),
            ("POST", "/_sandbox/webhooks/deliveries/{event_id}/resend", deliveries.resend),
        ]
    return table


def build_app(stub: StubApp, *, background: bool = True) -> web.Application:
    """Wire ``stub`` into an aiohttp application; ``background`` runs auto-resolution and
    the webhook dispatcher."""
    settings = stub.settings
    middlewares = [make_error_middleware(settings.variant("go-error-body"), stub.in_flight)]
    if settings.latency_s > 0:  # outermost: an error answer comes back as late as any other
        middlewares.insert(0, make_latency_middleware(settings.latency_s))
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes)
    app[STUB_KEY] = stub
    r = app.router
    for method, path, handler in routes(stub):
        if method == "GET":
            r.add_get(path, handler, expect_handler=expect_continue)
        else:
            r.add_post(path, handler, expect_handler=expect_continue)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        tasks = []
        if background and stub.hooks.resolve_in_background:
            tasks.append(asyncio.create_task(resolve_due_forever(stub)))
        if background:
            dispatcher = Dispatcher(
                stub.store, stub.render, settings.webhook_retry, stub.webhook_hooks
            )
            tasks.append(asyncio.create_task(dispatcher.run_forever()))
        yield
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        stub.auth_guard.close()
        stub.store.close()

    app.cleanup_ctx.append(lifecycle)
    return app
