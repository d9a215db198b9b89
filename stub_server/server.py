"""Run the stub: bind, write the credentials file, announce, serve until SIGTERM/SIGINT.

The announcement is a contract with the launcher: exactly one line ``paysuite stub listening on
http://HOST:PORT`` (the real port when 0 was asked), then ``credentials: /abs/path``. Shutdown
takes at most ``SHUTDOWN_TIMEOUT_S`` (docs/stub.md promises 10 s): requests inside a handler get
until ``SHUTDOWN_TIMEOUT_S - CLOSE_GRACE_S``, then aiohttp's own shutdown ``CLOSE_GRACE_S``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from aiohttp import web

from paysuite_core.listening import LINGER_S
from stub_server import access_log, fault_injection, protocol, signing_key
from stub_server.app import build_app
from stub_server.credentials import credentials_path, url_host, write_credentials
from stub_server.fd_errors import ResourceErrorLog, raise_fd_limit
from stub_server.settings import StubSettings
from stub_server.state import StubApp

log = logging.getLogger("stub_server")

SHUTDOWN_TIMEOUT_S = 10.0
CLOSE_GRACE_S = 1.5


def reload_signing_key(stub: StubApp) -> None:
    """SIGHUP, after ``paysuite stub keys rotate``."""
    path = signing_key.key_path(stub.settings.db)
    if stub.settings.jwt_key or path is None:
        log.warning("SIGHUP: the signing key is not read from a file; nothing to reload")
        return
    try:
        key = signing_key.read_key(path)
    except signing_key.SigningKeyError as exc:
        log.warning("SIGHUP: %s; keeping the current key", exc)
        return
    if key is not None and key != stub.tokens.key:
        stub.tokens.rekey(key)
        log.warning("SIGHUP: new signing key loaded from %s; older tokens are refused", path)


async def serve(settings: StubSettings) -> int:
    stub = fault_injection.assemble(settings)
    app = build_app(stub)
    runner = web.AppRunner(
        app,
        **access_log.runner_arguments(settings.access_log, settings.access_log_file),
        shutdown_timeout=CLOSE_GRACE_S,
        keepalive_timeout=settings.idle_timeout_s,
        # a refused body (413, 408) is read and dropped this long at most, then the connection
        # closes: aiohttp's default would drain it for 10 s
        lingering_time=LINGER_S,
    )
    await runner.setup()
    protocol.install(runner, go_body=settings.variant("go-error-body"))
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(ResourceErrorLog())
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    loop.add_signal_handler(signal.SIGHUP, reload_signing_key, stub)
    try:
        site = web.TCPSite(runner, settings.host, settings.port, backlog=settings.listen_backlog)
        await site.start()
        port = settings.port
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            port = server.sockets[0].getsockname()[1]
        root_url = f"http://{url_host(settings.host)}:{port}"
        path = write_credentials(stub.store, settings, root_url, credentials_path(settings))
        sys.stdout.write(f"paysuite stub listening on {root_url}\ncredentials: {path}\n")
        sys.stdout.flush()  # first: the launcher, and a person, read "listening on" first
        for endpoint in stub.new_webhook_endpoints:  # made by this start: shown once
            sys.stderr.write(
                f"webhook endpoint {endpoint.mode} {endpoint.url}\nsecret: {endpoint.secret}\n"
                f"(the signing secret is shown only now; it is also in {path})\n"
            )
        sys.stderr.flush()
        await stopping.wait()
        # Stop accepting, then let requests already inside a handler (even ones whose body is
        # still arriving) finish before aiohttp closes the connections.
        deadline = loop.time() + SHUTDOWN_TIMEOUT_S - CLOSE_GRACE_S
        await site.stop()
        while stub.in_flight.active and loop.time() < deadline:
            await asyncio.sleep(0.01)
    finally:
        await runner.cleanup()
    return 0


def run(settings: StubSettings) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    raise_fd_limit()
    try:
        return asyncio.run(serve(settings))
    except OSError as exc:
        print(f"paysuite stub: cannot listen on {settings.host}:{settings.port}: {exc}",
              file=sys.stderr)  # fmt: skip
        return 1
