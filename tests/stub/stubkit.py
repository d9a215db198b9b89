"""Helpers for the stub's tests: an HTTP client that knows the target configuration, and an
in-process stub (a real socket, served from a background thread) for settings and faults that
would be wasteful to start as a subprocess each."""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web

from paysuite_core import tokens
from paysuite_core.target_config import Application
from paysuite_core.tokens import AUTHORIZE_PATH, REFRESH_PATHS
from stub_server import fault_injection, protocol, timefmt
from stub_server.app import build_app
from stub_server.credentials import write_credentials
from stub_server.settings import StubSettings, settings_from_mapping

#: The document's two refresh paths (the heading's, then the examples' one), taken
#: from the one token client, for tests that probe the endpoint itself.
AGENTS_REFRESH_PATH, SHORT_REFRESH_PATH = REFRESH_PATHS
#: Each refresh path without its ``/{token}``, for tests parametrized over both.
REFRESH_PREFIXES = tuple(path.removesuffix("/{token}") for path in REFRESH_PATHS)


def refresh_url(token: str, template: str = SHORT_REFRESH_PATH) -> str:
    """The refresh path for ``token`` (relative to the base URL); the short one by default."""
    return tokens.refresh_request(token, template).path


_counter = itertools.count()
_rng = random.Random()


def new_number(prefix: str = "078") -> str:
    """A valid customer number not used before in this session and not ending in 0000/1111,
    the suffixes the session stub resolves by itself."""
    while True:
        digits = f"{(next(_counter) * 7919 + _rng.randrange(10**6)) % 10**7:07d}"
        if not digits.endswith(("0000", "1111")):
            return prefix + digits


class Api:
    """httpx against one stub, with a token per application (authorized once, then cached)."""

    def __init__(self, base_url: str, root_url: str, applications: Iterable[Application]) -> None:
        self.base_url = base_url
        self.root_url = root_url
        self.applications = list(applications)
        self.http = httpx.Client(base_url=base_url, timeout=15)
        self._tokens: dict[str, dict[str, Any]] = {}

    def close(self) -> None:
        self.http.close()

    def app(self, privilege: str = "read-write", merchant: str | None = None) -> Application:
        for app in self.applications:
            if app.privilege == privilege and (merchant is None or app.merchant == merchant):
                return app
        raise LookupError(f"no {privilege} application for merchant {merchant}")

    def authorize(self, app: Application) -> httpx.Response:
        """The authorize exchange itself, for tests that look at the whole HTTP answer."""
        return self.http.post(
            AUTHORIZE_PATH,
            json={"client_id": app.client_id, "client_secret": app.client_secret},
        )

    def pair(self, app: Application | None = None, *, fresh: bool = False) -> dict[str, Any]:
        """The token pair of ``app``, authorized through the one token client."""
        app = app or self.app()
        if fresh or app.client_id not in self._tokens:
            answer = tokens.authorize(tokens.httpx_send(self.http, self.base_url), app)
            assert answer is not None and answer.status == 200, answer
            body = dict(answer.json())
            if fresh:
                return body
            self._tokens[app.client_id] = body
        return self._tokens[app.client_id]

    def token(self, app: Application | None = None) -> str:
        return str(self.pair(app)["access"])

    def headers(self, app: Application | None = None, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(app)}", **extra}

    def create(
        self,
        kind: str = "cashin",
        *,
        app: Application | None = None,
        amount: Any = 100,
        number: str | None = None,
        key: str | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        all_headers = self.headers(app)
        if key is not None:
            all_headers["Idempotency-Key"] = key
        all_headers.update(headers or {})
        return self.http.post(
            f"/transactions/{kind}",
            json={"amount": amount, "number": number or new_number()},
            headers=all_headers,
            **kwargs,
        )

    def find(self, ref: str, app: Application | None = None) -> httpx.Response:
        return self.http.get(f"/transactions/find/{ref}", headers=self.headers(app))

    def events(self, app: Application | None = None, **params: Any) -> httpx.Response:
        return self.http.get("/events/transactions", headers=self.headers(app), params=params)

    def sandbox(self, ref: str, action: str) -> httpx.Response:
        return httpx.post(f"{self.root_url}/_sandbox/transactions/{ref}/{action}", timeout=15)


class InProcessStub:
    """The stub's aiohttp app on 127.0.0.1:0, served by a loop in a daemon thread."""

    def __init__(
        self,
        settings: StubSettings,
        apps: Iterable[tuple[str, str]] = (("DEMO01", "read-write"), ("DEMO02", "read-write")),
        *,
        background: bool = True,
    ) -> None:
        self.settings = settings
        self.stub = fault_injection.assemble(settings)
        self.applications = []
        for merchant, privilege in apps:
            client_id, secret = self.stub.store.create_app(merchant, privilege, timefmt.now_us())
            self.applications.append(Application(client_id, secret, privilege, merchant))  # type: ignore[arg-type]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runner = web.AppRunner(build_app(self.stub, background=background), access_log=None)
        port = self.run(self._start())
        self.root_url = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.root_url}/api"
        self.api = Api(self.base_url, self.root_url, self.applications)

    async def _start(self) -> int:
        await self.runner.setup()
        protocol.install(self.runner, go_body=self.settings.variant("go-error-body"))
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return int(self.runner.addresses[0][1])

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn`` on the server's loop thread (the store belongs to it)."""

        async def wrapper() -> Any:
            return fn(*args)

        return self.run(wrapper())

    def write_credentials(self, path: Path) -> Path:
        """The credentials file ``paysuite stub`` writes (a target configuration for conform),
        for this stub: what a conformance self-test hands the suite."""
        written: Path = self.call(
            write_credentials, self.stub.store, self.settings, self.root_url, path
        )
        return written

    def close(self) -> None:
        """Stop serving and close the store; a second call does nothing."""
        if self.loop.is_closed():
            return
        self.api.close()
        try:
            self.run(self.runner.cleanup())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


def make_settings(**config: Any) -> StubSettings:
    """Settings from config-file keys (``faults=[...]``, ``auto_resolve={...}``) over defaults,
    with an in-memory database unless ``db`` is given."""
    base = replace(StubSettings(), db=":memory:", port=0)
    return settings_from_mapping(config, base)
