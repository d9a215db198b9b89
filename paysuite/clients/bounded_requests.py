"""The paypack-py driver's HTTP layer: every answer bounded like conform's, and recorded.

paypack-py sends everything through one ``requests.Session`` (``paypack.http_client.client``)
with no timeout, and reads whole bodies: a silent target holds it forever, an endless body grows
it until the machine runs out. Mounting :class:`BoundedAdapter` on that session (``mount`` is
requests' public extension point; the SDK's code is not touched) gives each request conform's
limits (``conformance.http.Limits``, whose figures arrive in the job): a connect and a read
time-out, a total deadline for the whole answer (headers and body), and a cap on the body, read
in chunks and abandoned past it. The driver is single-threaded, so the total deadline is a
``SIGALRM`` timer: it interrupts a read that a trickling target keeps alive.

Each exchange is recorded (request, answer or the reason there was none) so a cell can show the
exchanges behind it and their curl; the parent masks the credentials before anything is written.
"""

from __future__ import annotations

import io
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter

#: How much of an answer a record keeps as text (the body itself is capped by the limits).
RECORD_BODY_CHARS = 64 * 1024
_CHUNK = 64 * 1024
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


@dataclass(frozen=True)
class DriverLimits:
    """conform's request limits, as the job carries them (``conformance.http.Limits``)."""

    connect_s: float
    read_s: float
    total_s: float
    max_body_bytes: int

    @classmethod
    def from_job(cls, job: dict[str, Any]) -> DriverLimits:
        given = job.get("limits") or {}
        return cls(
            connect_s=float(given.get("connect_s", 10.0)),
            read_s=float(given.get("read_s", 30.0)),
            total_s=float(given.get("total_s", 60.0)),
            max_body_bytes=int(given.get("max_body_bytes", 1 << 20)),
        )


class Unanswered(Exception):
    """The target gave no usable answer within the limits; the message is one line.

    ``gone``: no answer at all (refused, timed out), so the rest of the walk would only wait
    again; an answer over the size cap is not ``gone`` (the target answers, too much).
    """

    def __init__(self, message: str, *, gone: bool) -> None:
        super().__init__(message)
        self.gone = gone


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def expire(_signum: int, _frame: Any) -> None:
        raise Unanswered(f"no complete answer within {seconds:g} s", gone=True)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _reason(exc: BaseException) -> str:
    """``connection refused`` rather than 340 characters of ``HTTPConnectionPool(...)``."""
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(1).strip().lower()
    text = " ".join(str(exc).split())
    return text[:160] or type(exc).__name__


def _text(data: bytes) -> str:
    return data[:RECORD_BODY_CHARS].decode("utf-8", errors="replace")


class BoundedAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` that enforces ``limits`` on every answer and records each exchange."""

    def __init__(self, limits: DriverLimits) -> None:
        super().__init__(max_retries=0)
        self.limits = limits
        self.exchanges: list[dict[str, Any]] = []

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        body = request.body
        record: dict[str, Any] = {
            "method": request.method or "GET",
            "url": request.url or "",
            "request_headers": [[k, v] for k, v in request.headers.items()],
            "request_body": body.decode("utf-8", "replace") if isinstance(body, bytes) else body,
            "status": 0,
            "response_headers": [],
            "response_body": "",
            "elapsed_ms": 0.0,
            "error": "",
        }
        self.exchanges.append(record)
        what = f"{record['method']} {record['url']}"
        limits = self.limits
        started = time.monotonic()
        try:
            with _deadline(limits.total_s):
                response = super().send(
                    request,
                    stream=True,
                    timeout=(limits.connect_s, limits.read_s),
                    verify=verify,
                    cert=cert,
                    proxies=proxies,
                )
                try:
                    data = self._read(response)
                except BaseException:
                    response.close()
                    raise
        except Unanswered as exc:
            record["error"] = f"{what}: {exc}"
            raise
        except requests.exceptions.ConnectTimeout:
            reason = f"no connection within {limits.connect_s:g} s"
            record["error"] = f"{what}: {reason}"
            raise Unanswered(reason, gone=True) from None
        except requests.exceptions.ReadTimeout:
            reason = f"nothing received for {limits.read_s:g} s (read time-out)"
            record["error"] = f"{what}: {reason}"
            raise Unanswered(reason, gone=True) from None
        except requests.exceptions.RequestException as exc:
            reason = f"no answer: {_reason(exc)}"
            record["error"] = f"{what}: {reason}"
            raise Unanswered(reason, gone=True) from None
        finally:
            record["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        record["status"] = response.status_code
        record["response_headers"] = [[k, v] for k, v in response.headers.items()]
        record["response_body"] = _text(data)
        # The SDK reads the body it expects from ``raw``: hand it the bytes already read.
        response.raw.release_conn()
        response.raw = io.BytesIO(data)
        return response

    def _read(self, response: requests.Response) -> bytes:
        """The body in chunks, abandoned past the cap (a declared length over it: not read)."""
        cap = self.limits.max_body_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise Unanswered(
                f"declared a body of {int(declared)} bytes, over the {cap}-byte limit: not read",
                gone=False,
            )
        data = bytearray()
        for chunk in response.raw.stream(_CHUNK, decode_content=True):
            data += chunk
            if len(data) > cap:
                raise Unanswered(f"a body over the {cap}-byte limit: read no further", gone=False)
        return bytes(data)
