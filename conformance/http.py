"""The suite's HTTP client: httpx, with every exchange recorded as evidence.

Checks call the target only through ``RecordingClient`` (or its async twin for races), so each
failure can show the requests that prove it. Transport errors are recorded too and re-raised as
``TargetUnreachable``, which the plugin reports as an error of the check, not a failure.
"""

from __future__ import annotations

import json as jsonlib
import time
from collections.abc import Callable
from typing import Any

import httpx

from conformance.evidence import Evidence, Exchange

DEFAULT_TIMEOUT_S = 30.0
USER_AGENT = "paysuite-conformance"


class TargetUnreachable(RuntimeError):
    """The target did not answer at all (connection refused, timeout)."""


class Reply:
    """A response as a check sees it: status, headers, parsed JSON, and its exchange."""

    def __init__(self, response: httpx.Response, exchange: Exchange) -> None:
        self.status = response.status_code
        self.headers = response.headers
        self.text = response.text
        self.exchange = exchange
        #: Set by ``Target.create``: the creation answered a ref an earlier one had answered.
        self.ref_reused = False
        try:
            self.body: Any = response.json()
            self.is_json = True
        except ValueError:
            self.body = None
            self.is_json = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def rejected(self) -> bool:
        return 400 <= self.status < 500

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def get(self, key: str, default: Any = None) -> Any:
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    def __repr__(self) -> str:
        return f"<Reply {self.exchange.summary()}>"


def _prepare(
    method: str,
    headers: dict[str, str | None] | None,
    json: Any,
    content: str | bytes | None,
    token: str | None,
) -> tuple[dict[str, str], str | bytes | None]:
    # "Send Accept: application/json and Content-Type: application/json on every call."
    merged = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    body: str | bytes | None = content
    if json is not None:
        body = jsonlib.dumps(json)
    if token is not None:
        merged["Authorization"] = f"Bearer {token}"
    for name, value in (headers or {}).items():
        # ``None`` removes a default header, so a check can send a request without it.
        matching = [key for key in merged if key.lower() == name.lower()]
        for key in matching:
            del merged[key]
        if value is not None:
            merged[name] = value
    return merged, body


class RecordingClient:
    """Synchronous client bound to the target's base URL, recording into ``sink()``."""

    def __init__(
        self,
        base_url: str,
        sink: Callable[[], Evidence | None],
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._sink = sink
        self._client = httpx.Client(timeout=timeout_s, follow_redirects=False)

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return self.base_url + path

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
        content: str | bytes | None = None,
        headers: dict[str, str | None] | None = None,
        params: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> Reply:
        url = self.url(path)
        merged, body = _prepare(method, headers, json, content, token)
        request = self._client.build_request(
            method, url, headers=merged, content=body, params=params
        )
        exchange = Exchange.build(method, str(request.url), merged, body, note=note)
        evidence = self._sink()
        if evidence is not None:
            evidence.add(exchange)
        started = time.perf_counter()
        try:
            response = self._client.send(request)
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise TargetUnreachable(f"{method} {url}: {exchange.error}") from None
        exchange.record_response(
            response.status_code,
            dict(response.headers),
            response.text,
            (time.perf_counter() - started) * 1000,
        )
        return Reply(response, exchange)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Reply:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self._client.close()


async def async_requests(
    base_url: str,
    calls: list[dict[str, Any]],
    evidence: Evidence | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[Reply]:
    """Send ``calls`` (each the keyword arguments of ``RecordingClient.request``) concurrently.

    Used by the idempotency race: the requests are all in flight before any answer is read.
    """
    import asyncio

    limits = httpx.Limits(max_connections=len(calls) + 1, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as client:
        prepared = []
        for call in calls:
            method = call["method"]
            url = call["path"]
            if not url.startswith(("http://", "https://")):
                url = base_url.rstrip("/") + url
            merged, body = _prepare(
                method, call.get("headers"), call.get("json"), None, call.get("token")
            )
            request = client.build_request(
                method, url, headers=merged, content=body, params=call.get("params")
            )
            exchange = Exchange.build(method, str(request.url), merged, body)
            if evidence is not None:
                evidence.add(exchange)
            prepared.append((request, exchange))

        async def send(request: httpx.Request, exchange: Exchange) -> Reply:
            started = time.perf_counter()
            try:
                response = await client.send(request)
            except httpx.HTTPError as exc:
                exchange.error = f"{type(exc).__name__}: {exc}"
                raise TargetUnreachable(
                    f"{request.method} {request.url}: {exchange.error}"
                ) from None
            exchange.record_response(
                response.status_code,
                dict(response.headers),
                response.text,
                (time.perf_counter() - started) * 1000,
            )
            return Reply(response, exchange)

        return list(await asyncio.gather(*(send(r, e) for r, e in prepared)))
