"""One bounded HTTP exchange outside Locust (the pre-check): stdlib ``http.client``.

Why not ``urllib.request``: it follows redirects, and its ``timeout`` bounds each socket
operation, not the exchange, so an endless chunked body hung the pre-check for good. Here the
connect and each read have their own timeouts, a watchdog closes the socket at the total
deadline (however the bytes trickle in), the body is read only up to ``max_response_bytes``, and
a 3xx is returned as it is.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from load.limits import ClientLimits, ResponseTooLarge, read_capped


class ProbeError(Exception):
    """No usable answer; the message says why in words."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    location: str | None
    retry_after: str | None = None


def post_json(url: str, payload: Any, limits: ClientLimits) -> Answer:
    """POST ``payload`` as JSON to ``url`` within ``limits``."""
    parts = urlsplit(url)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        # the virtual users verify no certificate (``load.connection``): nor does their pre-check
        unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=limits.connect_timeout_s, context=unverified
        )
    else:
        conn = http.client.HTTPConnection(
            parts.hostname or "", parts.port, timeout=limits.connect_timeout_s
        )
    expired = threading.Event()

    def watchdog() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(limits.total_timeout_s, watchdog)
    timer.daemon = True
    timer.start()
    started = time.monotonic()
    try:
        try:
            conn.connect()
        except OSError as exc:
            raise ProbeError(f"unreachable ({_reason(exc)})") from None
        assert conn.sock is not None
        conn.sock.settimeout(limits.read_timeout_s)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        body = json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
        }
        try:
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            data = read_capped(response.read, limits.max_response_bytes)
            if expired.is_set():  # the watchdog cut the body short: a partial body is no answer
                raise TimeoutError
        except ResponseTooLarge as exc:
            raise ProbeError(str(exc)) from None
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set():
                raise ProbeError(
                    f"no complete answer within {limits.total_timeout_s:g} s (--total-timeout)"
                ) from None
            if isinstance(exc, TimeoutError):
                raise ProbeError(
                    f"no answer: a read waited {limits.read_timeout_s:g} s (--read-timeout)"
                ) from None
            raise ProbeError(f"no usable answer after {time.monotonic() - started:.1f} s "
                             f"({_reason(exc)})") from None  # fmt: skip
        return Answer(
            response.status, data, response.getheader("Location"), response.getheader("Retry-After")
        )
    finally:
        timer.cancel()
        conn.close()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
