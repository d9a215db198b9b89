"""Reading a request body: JSON, of the right media type, small enough, in time.

Enforces Endpoints (request bodies are JSON objects), Limits (the body size) and Errors, rule 2
(malformed input is a 4xx, never a 5xx). Checked by ERR-001, ERR-003, TXN-003 and PROP-005.
Order of the answers: 415 (media type), 413 (size), 408 (slow body), 400 (not a JSON object, or
one that names a key twice: RC-42).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from aiohttp import web

from stub_server.errors import ApiError
from stub_server.settings import StubSettings

#: Integers with more digits than this stand for "out of bounds" instead of failing the parse
#: (Python refuses int() of more than 4300 digits; a JSON number that long is still JSON).
MAX_INT_DIGITS = 400
_HUGE: int = 10**MAX_INT_DIGITS

#: A decoded JSON object; its values are whatever JSON holds, checked field by field.
JsonObject = dict[str, object]


def _parse_int(text: str) -> int:
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    return -_HUGE if text.startswith("-") else _HUGE


class DuplicateKey(ValueError):
    """A JSON object names one key twice (RC-42); ``args[0]`` is the key."""


def _unique_keys(pairs: list[tuple[str, object]]) -> JsonObject:
    """An object whose keys are each named once: ``{"amount":100,"amount":200}`` has two
    meanings (Python's json, and most parsers, keep the last; some keep the first), so the
    request is refused rather than executed on a guess, as a repeated header is (RC-41)."""
    body = dict(pairs)
    if len(body) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return body


_json_decode = json.JSONDecoder(parse_int=_parse_int, object_pairs_hook=_unique_keys).decode


def malformed_json() -> Exception:
    """The answer to a body that is not JSON (the ``server-error-on-malformed`` fault swaps
    it for a 500 through ``RuleHooks.malformed_json``)."""
    return ApiError(400, "malformed_json", "the request body is not valid JSON")


async def read_json(
    request: web.Request,
    settings: StubSettings,
    *,
    any_media_type: bool,
    on_malformed: Callable[[], Exception] = malformed_json,
) -> JsonObject:
    """The request's body as a JSON object, or the ``ApiError`` that says why it is not one.

    ``any_media_type``: the ``any-media-type`` behaviour (no 415).
    """
    if request.content_type != "application/json" and not any_media_type:
        raise ApiError(415, "unsupported_media_type", "the request body must be application/json")
    length = request.content_length
    if length is not None and length > settings.max_body_bytes:
        raise ApiError(
            413,
            "payload_too_large",
            f"the request body exceeds {settings.max_body_bytes} bytes",
            # the body is not read: closing saves aiohttp draining it for the body time-out
            headers={"Connection": "close"},
        )
    try:
        if request.content.is_eof():  # the whole body arrived with the head: nothing to wait for
            raw = await request.read()
        else:
            async with asyncio.timeout(settings.body_timeout_s):
                raw = await request.read()
    except TimeoutError:  # a slow body (slowloris) must not hold a handler for ever
        raise ApiError(
            408,
            "request_timeout",
            f"the request body did not arrive within {settings.body_timeout_s:g} s",
            headers={"Connection": "close"},
        ) from None
    except web.RequestPayloadError as exc:  # e.g. Content-Encoding: gzip on plain bytes
        reason = " ".join(str(exc).split()).removeprefix("400, message: ")
        raise ApiError(
            400, "malformed_json", f"the request body cannot be decoded: {reason}"
        ) from None
    except ConnectionError:  # the client went away mid-body; nobody reads this answer
        raise ApiError(400, "malformed_json", "the request body ended early") from None
    try:
        body = _json_decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except DuplicateKey as exc:
        raise ApiError(
            400,
            "duplicate_key",
            f"the request body names the key {exc.args[0]!r} more than once; send it once",
        ) from None
    except (ValueError, RecursionError):
        raise on_malformed() from None
    if not isinstance(body, dict):
        raise ApiError(400, "malformed_json", "the request body must be a JSON object")
    return body
