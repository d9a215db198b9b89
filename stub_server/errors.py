"""The error catalogue (reference choice RC-4) and the one middleware that enforces it.

Handlers raise ``ApiError``; aiohttp's own 404/405/413 arrive as ``web.HTTPException``; anything
else is a bug, logged with its traceback and answered ``500 internal_error``. Every one of them
leaves as the JSON body ``{"status", "code", "message"}`` (``{"status", "message"}`` under the
``go-error-body`` variant), so no client ever sees HTML or a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger("stub_server")

_CODES_BY_STATUS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class ApiError(Exception):
    """A client error with its HTTP status, machine code and a message naming what is wrong."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def validation_error(field: str, problem: str) -> ApiError:
    return ApiError(400, "validation_error", f"{field}: {problem}")


def ambiguous(name: str, count: int, where: str, code: str = "ambiguous_parameter") -> ApiError:
    """The 400 of a header or query parameter sent ``count`` times where the stub reads one
    value (RC-39, RC-41): honouring either copy would guess what the client meant."""
    return ApiError(400, code, f"{name}: sent {count} times as a {where}; send it once")


def json_body(data: object) -> bytes:
    """``data`` as the stub's compact UTF-8 JSON."""
    return _dumps(data).encode()


def json_response(data: object, status: int = 200) -> web.Response:
    """A JSON response without aiohttp's per-call content negotiation overhead."""
    return web.Response(body=_dumps(data).encode(), status=status, content_type="application/json")


def error_response(
    status: int, code: str, message: str, *, go_body: bool, headers: dict[str, str] | None = None
) -> web.Response:
    body: dict[str, int | str] = {"status": status, "message": message}
    if not go_body:
        body = {"status": status, "code": code, "message": message}
    response = json_response(body, status)
    if headers:
        response.headers.update(headers)
    return response


class InFlight:
    """Counts requests inside a handler, so shutdown can wait for them (aiohttp's own graceful
    shutdown stops reading request bodies that are still arriving)."""

    def __init__(self) -> None:
        self.active = 0


def make_error_middleware(
    go_body: bool, in_flight: InFlight | None = None
) -> Callable[..., Awaitable[web.StreamResponse]]:
    counter = in_flight or InFlight()

    @web.middleware
    async def error_middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        counter.active += 1
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(
                exc.status, exc.code, exc.message, go_body=go_body, headers=exc.headers
            )
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            headers: dict[str, str] = {}
            if exc.status == 405:
                allowed = getattr(exc, "allowed_methods", None) or ()
                headers["Allow"] = ", ".join(sorted(allowed))
                message = f"method {request.method} is not allowed on {request.path}"
            elif exc.status == 404:
                message = f"no such route: {request.method} {request.path}"
            elif exc.status == 413:
                message = "request body is too large"
            else:
                message = exc.reason or "request rejected"
            code = _CODES_BY_STATUS.get(exc.status, "bad_request")
            return error_response(exc.status, code, message, go_body=go_body, headers=headers)
        except Exception:
            log.exception("unexpected error on %s %s", request.method, request.path)
            return error_response(500, "internal_error", "internal error", go_body=go_body)
        finally:
            counter.active -= 1

    return error_middleware
