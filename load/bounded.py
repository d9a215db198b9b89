"""One Locust request under ``ClientLimits``: total timeout, capped body, no redirects.

Why a wrapper and not FastHttpSession alone: its ``network_timeout`` bounds each socket read,
not the request (a body trickled a byte at a time never ends), and without ``stream=True`` it
buffers the whole body (an endless chunked body grew the process past 1.5 GB). Here the request
is made with ``stream=True`` and ``allow_redirects=False`` (public arguments of
``FastHttpSession.request``), the body is read in chunks up to ``max_response_bytes``, and the
whole exchange runs under a ``gevent.Timeout``. Every outcome is one Locust request event: a
transport failure, a time-out or an oversized body is a failure with a readable reason, and the
reported time and size cover the body too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from load.limits import ClientLimits, ResponseTooLarge, TotalTimeout, read_capped

#: ``json.loads``'s own decoder (the one it uses when given no options)
_DECODER = json.JSONDecoder()


@dataclass(slots=True)
class Reply:
    """What came back: status and body (``problem`` set when neither can be trusted)."""

    status: int
    body: bytes
    problem: str | None
    _resp: Any

    def json(self) -> Any:
        """``json.loads(body)``, without its encoding detection when the body starts with
        ``{`` and an ASCII byte: then the detection's answer is UTF-8 (a JSON object in
        UTF-16/32 has a NUL byte second), so the result, and any error, are the same."""
        body = self.body
        if body[:1] == b"{" and body[1:2] != b"\x00":
            return _DECODER.decode(body.decode("utf-8", "surrogatepass"))
        return json.loads(body)

    def success(self) -> None:
        self._resp.success()

    def failure(self, why: str) -> None:
        self._resp.failure(why)


def _fire_failure(client: Any, method: str, name: str, started: float, exc: Exception) -> None:
    client.request_event.fire(
        request_type=method,
        name=name,
        response_time=(time.perf_counter() - started) * 1000,
        response_length=0,
        exception=exc,
        context={},
        response=None,
        url=name,
        start_time=time.time(),
    )


def _timed_out(error: BaseException | None) -> bool:
    """A socket time-out, possibly wrapped (geventhttpclient's ``RetriesExceeded`` keeps it only
    in its message, ``original=timed out``)."""
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, TimeoutError) or str(error).endswith("original=timed out"):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _transport_problem(error: BaseException | None, limits: ClientLimits) -> str:
    if _timed_out(error):
        return f"no answer: a read waited {limits.read_timeout_s:g} s (--read-timeout)"
    if error is None:
        return "no answer (connection failed)"
    return " ".join(f"no answer: {type(error).__name__}: {error}".split())[:300]


#: what every request asks for when its caller names no encoding: the size limit applies to the
#: bytes read, so the body must come as it is (a compressed body would be inflated unbounded)
_IDENTITY = {"Accept-Encoding": "identity"}


def request(
    client: Any,
    limits: ClientLimits,
    method: str,
    path: str,
    *,
    name: str,
    timer: Any = None,
    **kwargs: Any,
) -> BoundedRequest:
    """``with request(...) as reply``: ``None`` when nothing came back in time (already counted
    as a failure); else a ``Reply`` to judge with ``success()``/``failure()``. A reply with a
    ``problem`` is already marked failed.

    ``timer``: the calling user's own ``gevent.Timeout`` of ``limits.total_timeout_s``, started
    and cancelled around each of its requests (they run one after another in its greenlet), so
    that a load test's hot path does not make and free a timer per request; without one, a
    timer is made for this request. ``headers`` are not modified (a caller may pass the
    same dictionary every time); ``Accept-Encoding: identity`` is added when they name none."""
    return BoundedRequest(client, limits, method, path, name, kwargs, timer)


class BoundedRequest:
    """The context manager ``request`` returns: a class rather than a generator-based
    ``contextmanager``, because it is on every request's path of a load test (a generator, its
    frame and the ``contextlib`` wrapper cost more than the rest of this code)."""

    __slots__ = ("client", "limits", "method", "path", "name", "kwargs", "_ctx", "_timer")

    def __init__(
        self,
        client: Any,
        limits: ClientLimits,
        method: str,
        path: str,
        name: str,
        kwargs: dict[str, Any],
        timer: Any = None,
    ) -> None:
        self.client = client
        self.limits = limits
        self.method = method
        self.path = path
        self.name = name
        self.kwargs = kwargs
        self._ctx: Any = None
        self._timer = timer

    def __enter__(self) -> Reply | None:
        import gevent  # here, not at import: load.auth is imported outside Locust too

        kwargs = self.kwargs
        limits = self.limits
        headers = kwargs.pop("headers", None)
        if not headers:
            headers = _IDENTITY
        elif "Accept-Encoding" not in headers:
            headers = {**_IDENTITY, **headers}
        started = time.perf_counter()
        timer = self._timer if self._timer is not None else gevent.Timeout(limits.total_timeout_s)
        timer.start()
        ctx = None
        try:
            ctx = self.client.request(
                self.method,
                self.path,
                name=self.name,
                headers=headers,
                catch_response=True,
                stream=True,
                allow_redirects=False,
                **kwargs,
            )
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
        finally:
            if ctx is None:
                timer.cancel()
        if ctx is None:
            _fire_failure(
                self.client, self.method, self.name, started, TotalTimeout(limits.total_timeout_s)
            )
            return None
        resp = ctx.__enter__()
        self._ctx = ctx
        try:
            return self._reply(resp, timer, started)
        except BaseException as exc:
            timer.cancel()  # whatever escaped before _reply's own cancel: never left running
            self._ctx = None
            if not ctx.__exit__(type(exc), exc, exc.__traceback__):
                raise
            raise _Suppressed() from exc

    def _reply(self, resp: Any, timer: Any, started: float) -> Reply:
        import gevent

        limits = self.limits
        status = int(resp.status_code or 0)
        body, problem = b"", None
        try:
            if status:
                body = read_capped(resp.read, limits.max_response_bytes)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            problem = str(TotalTimeout(limits.total_timeout_s))
        except ResponseTooLarge as exc:
            problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - any transport error is this request's failure
            problem = f"reading the response failed: {type(exc).__name__}: {exc}"
        finally:
            timer.cancel()
            if problem is not None:
                resp.release()  # an unfinished body: the connection is closed, not reused
        resp.request_meta["response_time"] = (time.perf_counter() - started) * 1000
        resp.request_meta["response_length"] = len(body)
        if not status:  # nothing came back: say why in words, not "status 0"
            problem = _transport_problem(getattr(resp, "error", None), limits)
        if problem is not None:
            resp.failure(problem)
        elif 300 <= status < 400:
            problem = f"status {status} (a redirect to {resp.headers.get('Location')!r}; "
            problem += "paysuite does not follow redirects)"
            resp.failure(problem)
        return Reply(status, body, problem, resp)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        ctx, self._ctx = self._ctx, None
        if ctx is None:
            return False
        return bool(ctx.__exit__(exc_type, exc, tb))


class _Suppressed(Exception):
    """Never raised to a caller in practice: Locust's response context swallowed an exception
    raised while the reply was being read, which a ``with`` statement cannot express from
    ``__enter__``; raised instead so that the caller's block does not run without a reply."""
