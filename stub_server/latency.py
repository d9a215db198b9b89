"""A far target on loopback: every answer held back by the configured latency (``--latency``).

A client developer, or ``paysuite conform``'s own self-tests, see what a service one region away
costs them (a sequential client pays it on every request) without a network in between. The
delay is spent before the request is handled, as a request's way across a network is: what the
stub does with it, and the order in which concurrent requests reach the handlers, stay the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_latency_middleware(latency_s: float) -> Callable[..., Awaitable[web.StreamResponse]]:
    """An aiohttp middleware that sleeps ``latency_s`` before passing each request on."""

    @web.middleware
    async def latency_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        await asyncio.sleep(latency_s)
        return await handler(request)

    return latency_middleware
