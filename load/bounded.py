"""A virtual user's HTTP client: bounded exchanges (``load.connection``), each one Locust request.

``with client.request(method, path, name=...) as reply`` sends the request and reads its whole
answer under the run's ``Limits`` (total timeout, capped body, no redirects); the block judges the
reply with ``success()`` or ``failure(why)``; on leaving the block the exchange is reported to
Locust once, through its ``request`` event: the public way for a client of one's own to feed
Locust's statistics, failures table, web UI and distributed mode (Locust's "testing other
systems" documentation). The reported time covers the body, not the judging.

Why not Locust's ``FastHttpSession``: see ``load.connection``. A transport failure, a time-out,
an oversized body or a redirect is a failed request with a reason a person can read; the block
still runs, with ``reply.problem`` set.
"""

from __future__ import annotations

import json as jsonlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from load.connection import Connection, origin_and_target
from paysuite_core import guarded_json
from paysuite_core.bounded_http import Limits, no_answer
from paysuite_core.tls import TLSSettings

#: what every request asks for when its caller names no encoding: the size limit applies to the
#: bytes read, so the body must come as it is (a compressed body would be inflated unbounded)
_IDENTITY = {"Accept-Encoding": "identity"}


class RequestFailed(Exception):
    """A request judged failed; its message is the reason (what Locust's failures table shows).

    Defined here rather than Locust's ``CatchResponseError``: importing anything of Locust
    monkey-patches the process, and this module is imported (and tested) outside Locust too."""


@dataclass(slots=True)
class Reply:
    """What came back: status and body (``problem`` set when neither can be trusted: the reply
    is then failed already, and ``success()``/``failure()`` do not change that)."""

    status: int
    body: bytes
    problem: str | None
    location: str | None = None
    #: the judgement: None until given, True for success, else the failure's reason
    verdict: bool | str | None = None

    def json(self) -> Any:
        """The body as JSON, through the one guarded decoder (``paysuite_core.guarded_json``:
        UTF-8, shallow; ``JsonRefused``, a ``ValueError``, otherwise)."""
        return guarded_json.loads(self.body)

    def success(self) -> None:
        if self.problem is None:
            self.verdict = True

    def failure(self, why: str) -> None:
        if self.problem is None:
            self.verdict = why

    def outcome(self) -> str | None:
        """The failure's reason, or None for a success. A reply nobody judged is judged as
        Locust judges one: a status of 400 or more fails."""
        if self.problem is not None:
            return self.problem
        verdict = self.verdict
        if verdict is True:
            return None
        if verdict is None:
            return f"status {self.status}" if self.status >= 400 else None
        return str(verdict)


class Client:
    """One virtual user's client for ``base_url`` (``scheme://host:port/prefix``): a keep-alive
    connection to its origin (another for each other origin an absolute URL names), and the
    Locust ``request`` event its exchanges are reported to.

    Not shared between greenlets: a Locust user runs its requests one after another.
    """

    def __init__(
        self,
        base_url: str,
        limits: Limits,
        request_event: Any,
        *,
        tls: TLSSettings | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) base URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.limits = limits
        self.tls = tls
        #: Locust's ``request`` event, fired once per exchange
        self.report = request_event.fire
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self._connections: dict[str, Connection] = {}

    def request(
        self,
        method: str,
        path: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        json: object = None,
    ) -> Exchange:
        """``with request(...) as reply``: ``path`` is appended to the base URL, unless it is an
        absolute ``http(s)://`` URL. ``headers`` are not modified (a caller may pass the same
        mapping every time); ``Accept-Encoding: identity`` is added when they name no encoding,
        and with ``json`` the ``Content-Type``/``Accept`` of JSON when they name none."""
        return Exchange(self, method, path, name, headers, json)

    def connection(self, origin: str) -> Connection:
        connection = self._connections.get(origin)
        if connection is None:
            connection = Connection(origin, self.limits, tls=self.tls)
            self._connections[origin] = connection
        return connection

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()


@dataclass(slots=True)
class Exchange:
    """The context manager ``Client.request`` returns: the exchange happens on entry, its
    report to Locust on exit, exactly once (not when the block is left by a ``BaseException``
    that is not an ``Exception``: the user is being stopped, as Locust's own context does).
    A class, not a generator-based ``contextmanager``: it is on every request's path."""

    client: Client
    method: str
    path: str
    name: str
    headers: Mapping[str, str] | None
    json: object
    reply: Reply | None = None
    #: when it started (clock), how long it took (ms), the URL
    meta: tuple[float, float, str] = (0.0, 0.0, "")

    def __enter__(self) -> Reply:
        client = self.client
        path = self.path
        if path.startswith(("http://", "https://")):
            origin, target = origin_and_target(path)
            url = path
        else:
            origin = client.origin
            target = client.prefix + path
            url = client.base_url + path
        headers = self.headers
        if not headers:
            headers = _IDENTITY
        elif "Accept-Encoding" not in headers:
            headers = {**_IDENTITY, **headers}
        body = None
        if self.json is not None:
            body = jsonlib.dumps(self.json).encode()
            headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        start_time = time.time()
        started = time.perf_counter()
        try:
            status, data, location = client.connection(origin).exchange(
                self.method, target, body, headers
            )
        except Exception as exc:  # any transport failure is this request's
            reply = Reply(0, b"", no_answer(exc))
        else:
            reply = Reply(status, data, None, location)
            if 300 <= status < 400:
                reply.problem = (
                    f"status {status} (a redirect to {location!r}; paysuite does not follow "
                    "redirects)"
                )
        self.meta = (start_time, (time.perf_counter() - started) * 1000, url)
        self.reply = reply
        return reply

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        reply, self.reply = self.reply, None
        if reply is None or (exc is not None and not isinstance(exc, Exception)):
            return
        why = reply.outcome()
        if why is None and exc is not None and reply.verdict is None:
            why = f"{type(exc).__name__}: {exc}"  # the block failed before judging
        start_time, response_time, url = self.meta
        self.client.report(
            request_type=self.method,
            name=self.name,
            response_time=response_time,
            response_length=len(reply.body),
            exception=None if why is None else RequestFailed(why),
            context={},
            response=reply,
            url=url,
            start_time=start_time,
        )
