"""One keep-alive HTTP/1.1 connection to one origin, every exchange bounded by ``Limits``:
the load side's one HTTP client under gevent (the users' ``load.bounded`` and the reconciliation).

Why geventhttpclient's ``HTTPClient`` itself and not Locust's ``FastHttpSession`` built on it: the
session's per-request extras (URL building, cookies, redirects, retries, a response wrapper)
cost about half again the CPU of a bare request on find against the stub, which made paysuite's
own user, not the target, the limit of a load test (docs/load.md). An exchange that did not end
cleanly discards the connection, so the rest of a half-read answer is never taken for the next.

geventhttpclient keeps every header line a target sends: a 200 status line followed by 8 KB
header lines for ever took a run to 3 GB in 17 s, and its total time-out never fired (a socket
that always has bytes to read never yields to gevent's timer). So each answer's header lines
are counted as the parser hands them over (``BoundedHeaders``, given through the client's public
``headers_type``): more than ``MAX_HEADER_LINES`` or ``MAX_HEADER_BYTES`` in all is
``HeadersTooLarge``, the connection discarded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import gevent
from geventhttpclient.header import Headers

from paysuite_core.bounded_http import (
    MAX_HEADER_BYTES,
    MAX_HEADER_LINES,
    ConnectTimeout,
    HeadersTooLarge,
    Limits,
    ReadTimeout,
    TotalTimeout,
    read_capped,
)
from paysuite_core.http_clients import gevent_client
from paysuite_core.tls import TLSSettings

#: The ``User-Agent`` of every request the load side sends.
USER_AGENT = "paysuite-load"


class BoundedHeaders(Headers):
    """geventhttpclient's ``Headers``, refusing a line past ``MAX_HEADER_LINES`` or a byte past
    ``MAX_HEADER_BYTES``: the parser adds each line of an answer as it completes, and clears
    the lot when an interim (1xx) answer ends. The same type holds the requests' own headers (a
    few lines, far below the limits)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lines = 0
        self.size = 0
        super().__init__(*args, **kwargs)

    def add(self, field: str, value: str | list[str] | tuple[str, ...]) -> None:
        self.lines += 1
        self.size += len(field) + len(value if isinstance(value, str) else str(value))
        if self.lines > MAX_HEADER_LINES or self.size > MAX_HEADER_BYTES:
            raise HeadersTooLarge
        super().add(field, value)

    def clear(self) -> None:
        self.lines = self.size = 0
        super().clear()


def origin_and_target(url: str) -> tuple[str, str]:
    """An absolute URL's origin (``scheme://host:port``: its ``Connection``) and its request
    target (path and query: what ``exchange`` sends)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{parts.scheme}://{parts.netloc}", target


class Connection:
    """A keep-alive connection to ``origin`` (``scheme://host:port``), one exchange at a time.

    ``tls``: what to trust and present over HTTPS (the run's ``LoadPlan.tls``). Unlike Locust's
    ``FastHttpUser``, the certificate is verified unless the settings say ``insecure``: a load
    target is a staging deployment as often as a local stand-in, and a run that measured a
    man in the middle would say nothing of the target.
    """

    __slots__ = ("origin", "limits", "tls", "_client", "_timer")

    def __init__(self, origin: str, limits: Limits, *, tls: TLSSettings | None = None) -> None:
        self.origin = origin
        self.limits = limits
        self.tls = tls
        self._client = self._connect()
        #: the total timeout, one timer restarted per exchange (not made and freed each time)
        self._timer = gevent.Timeout(limits.total_s)

    def _connect(self) -> Any:
        return gevent_client(
            self.origin,
            self.tls,
            concurrency=1,
            connection_timeout=self.limits.connect_s,
            network_timeout=self.limits.read_s,
            headers={"User-Agent": USER_AGENT},
            headers_type=BoundedHeaders,
        )

    def exchange(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: Mapping[str, str],
        *,
        header: str = "location",
    ) -> tuple[int, bytes, str | None]:
        """Send one request (``target``: path and query) and read its whole answer.

        Returns the status, the body and the ``Location`` header (or the one named by
        ``header``: the reconciliation reads ``Retry-After``). Raises ``TotalTimeout``,
        ``ConnectTimeout``, ``ReadTimeout``, ``ResponseTooLarge`` or the transport's own error
        (``OSError``, a parse error); after any of them the connection is discarded and the
        next exchange opens a new one.
        """
        limits = self.limits
        timer = self._timer
        if timer.pending:  # an exchange started from inside another (never on the hot path)
            timer = gevent.Timeout(limits.total_s)
        timer.start()
        started = time.perf_counter()
        response = None
        try:
            response = self._client.request(method, target, body=body, headers=headers)
            data = read_capped(response.read, limits.max_body_bytes)
            location = response.get(header)
            if isinstance(location, list):  # a repeated header: the first, as a browser takes
                location = location[0]
            return response.status_code, data, location
        except gevent.Timeout as exc:
            # a time-out in the middle of sending leaves the pool's one slot taken: the whole
            # client goes, not only the socket
            self._discard()
            if exc is not timer:
                raise
            if timer is self._timer:
                # a gevent.Timeout that has fired fires at once when started again: a new one
                self._timer = gevent.Timeout(limits.total_s)
            raise TotalTimeout(limits.total_s) from None
        except TimeoutError as exc:
            # the socket's own time-out, the same error for a connect and a read: a read time-out
            # needs ``read_s`` of silence, so one that came sooner was the connect's
            self._discard()
            if time.perf_counter() - started < limits.read_s:
                raise ConnectTimeout(limits.connect_s) from exc
            raise ReadTimeout(limits.read_s) from exc
        except BaseException:
            self._discard()
            raise
        finally:
            timer.cancel()
            if response is not None:
                # a complete answer has already given the connection back; an unfinished one
                # is closed here, never reused (geventhttpclient's ``should_close``)
                response.release()

    def _discard(self) -> None:
        self._client.close()
        self._client = self._connect()

    def close(self) -> None:
        self._client.close()
