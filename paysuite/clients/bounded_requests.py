"""The paypack-py driver's HTTP layer: every answer bounded like conform's, and recorded.

paypack-py sends everything through one ``requests.Session`` (``paypack.http_client.client``)
with no timeout, and reads whole bodies: a silent target holds it forever, an endless body grows
it until the machine runs out. Mounting :class:`BoundedAdapter` on that session (``mount`` is
requests' public extension point; the SDK's code is not touched) gives each request conform's
limits (``paysuite_core.bounded_http``, whose figures arrive in the job). The driver is
single-threaded, so the total deadline is a ``SIGALRM`` timer: it interrupts a read that a
trickling target keeps alive.

Each exchange is recorded (request, answer or the reason there was none) so a cell can show the
exchanges behind it and their curl; the parent masks the credentials before anything is written.
"""

from __future__ import annotations

import io
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, TypedDict

import requests
from requests.adapters import HTTPAdapter

from paysuite_core.bounded_http import (
    CONFORM_LIMITS,
    READ_CHUNK,
    BoundedBody,
    ConnectTimeout,
    Limits,
    ReadTimeout,
    ResponseTooLarge,
    TotalTimeout,
    no_answer,
)
from paysuite_core.tls import TLSSettings, explain


class Recorded(TypedDict):
    """One exchange the SDK made, as its driver emits it (headers as ``[name, value]`` pairs)."""

    method: str
    url: str
    request_headers: list[list[str | bytes]]
    request_body: object  # as requests holds it: text, bytes decoded, or None
    status: int
    response_headers: list[list[str]]
    response_body: str
    elapsed_ms: float
    error: str


#: How much of an answer a record keeps as text (the body itself is capped by the limits).
RECORD_BODY_CHARS = 64 * 1024


def limits_of(job: Mapping[str, Any]) -> Limits:
    """The limits the job carries (``matrix.bounded_job``), conform's for any it leaves out."""
    return Limits(**{**asdict(CONFORM_LIMITS), **(job.get("limits") or {})})


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
    def expire(_signum: int, _frame: object) -> None:
        raise TotalTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def tls_of(job: Mapping[str, Any]) -> TLSSettings | None:
    """The run's TLS settings the job carries (resolved once by ``paysuite clients``), or None
    for a job without them (requests then judges certificates its own way)."""
    data = job.get("tls")
    return TLSSettings.from_dict(data) if data is not None else None


class BoundedAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` that enforces ``limits`` on every answer and records each exchange.

    ``tls``: what every request trusts and presents over HTTPS, whatever the SDK's session
    says (``verify``/``cert`` are the adapter's to honour: requests' public extension point),
    so the SDK judges the target's certificate exactly as the pre-flight did."""

    def __init__(self, limits: Limits, tls: TLSSettings | None = None) -> None:
        super().__init__(max_retries=0)
        self.limits = limits
        self.tls = tls
        self.exchanges: list[Recorded] = []

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
        record: Recorded = {
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
        if self.tls is not None:
            verify, cert = self.tls.requests_verify(), self.tls.requests_cert()
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
                    read = BoundedBody(response.headers, limits.max_body_bytes)
                    for chunk in response.raw.stream(READ_CHUNK, decode_content=True):
                        read.add(chunk)
                except BaseException:
                    response.close()
                    raise
        except (TotalTimeout, ResponseTooLarge, requests.exceptions.RequestException) as exc:
            reason = explain(exc, record["url"]) or no_answer(_ours(exc, limits))
            record["error"] = f"{what}: {reason}"
            raise Unanswered(reason, gone=not isinstance(exc, ResponseTooLarge)) from None
        finally:
            record["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        data = bytes(read.data)
        record["status"] = response.status_code
        record["response_headers"] = [[k, v] for k, v in response.headers.items()]
        record["response_body"] = data[:RECORD_BODY_CHARS].decode("utf-8", errors="replace")
        # The SDK reads the body it expects from ``raw``: hand it the bytes already read.
        response.raw.release_conn()
        response.raw = io.BytesIO(data)
        return response


def _ours(exc: BaseException, limits: Limits) -> BaseException:
    """requests' time-outs as the shared ones, which name the option that bounds each."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return ConnectTimeout(limits.connect_s)
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return ReadTimeout(limits.read_s)
    return exc
