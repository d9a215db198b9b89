"""The benchmark's baseline: a bare aiohttp handler returning a small JSON body.

Started in its own process with the same event-loop set-up as the stub (``asyncio.run``, an
``AppRunner`` without access log, a ``TCPSite`` with backlog 1024), so that the ratio stub/bare
measures what the stub does per request, not a difference in serving machinery. Prints
``bare handler listening on http://127.0.0.1:PORT`` once bound; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from aiohttp import web

BODY = {"status": "ok", "ref": "5b0d8f5e-1f8e-4c59-9a53-5e2b0e7f3a11", "amount": 100}


async def handle(request: web.Request) -> web.Response:
    return web.json_response(BODY)


async def serve(host: str, port: int) -> int:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    server = getattr(site, "_server", None)
    bound = server.sockets[0].getsockname()[1] if server is not None and server.sockets else port
    sys.stdout.write(f"bare handler listening on http://{host}:{bound}\n")
    sys.stdout.flush()
    await stopping.wait()
    await runner.cleanup()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    return asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    sys.exit(main())
