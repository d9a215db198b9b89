"""The baselines the benchmarks measure against, each run in its own process:

- ``python servers.py bare``: a bare aiohttp handler answering any request with a small JSON body;
- ``python servers.py forward TARGET``: paysuite proxy's forwarding server with nobody judging.

Both are served as the stub is served (``asyncio.run``, an ``AppRunner`` without access log, a
``TCPSite`` with backlog 1024), so that a ratio or a difference against them measures what the
stub or the proxy does per request, not a difference in serving machinery. Each prints
``NAME listening on URL`` once bound and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable

from aiohttp import web

BODY = {"status": "ok", "ref": "5b0d8f5e-1f8e-4c59-9a53-5e2b0e7f3a11", "amount": 100}


async def bare_handler(request: web.Request) -> web.Response:
    return web.json_response(BODY)


def bare_app() -> web.Application:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", bare_handler)
    return app


def forwarding_app(target: str) -> web.Application:
    from proxy.server import ForwardingProxy, ProxySettings

    return ForwardingProxy(ProxySettings(target=target), lambda _exchange: None).app()


async def serve(name: str, make_app: Callable[[], web.Application]) -> None:
    runner = web.AppRunner(make_app(), access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
    host, port = runner.addresses[0][:2]
    print(f"{name} listening on http://{host}:{port}", flush=True)
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stopping.set)
    await stopping.wait()
    await runner.cleanup()


def main(argv: list[str]) -> int:
    if argv[:1] == ["bare"]:
        asyncio.run(serve("bare handler", bare_app))
    elif argv[:1] == ["forward"] and len(argv) == 2:
        asyncio.run(serve("forwarding only", lambda: forwarding_app(argv[1])))
    else:
        print("usage: servers.py bare | servers.py forward TARGET", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
