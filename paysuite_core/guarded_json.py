"""The one JSON decoder for what paysuite reads from a target or a file: bounded, one-line errors.

A target's answer, a webhook delivery, a HAR file, a token's claims: none is trusted to be JSON,
to be small, or to be shallow. ``json.loads`` alone reads any size, guesses UTF-16 and UTF-32,
and raises ``RecursionError`` (not ``ValueError``) on an array nested deeper than Python's stack:
a 200 KB body of ``[`` ended ``paysuite replay`` and ``webhooks listen`` in a traceback. So every
such decode goes through ``loads`` (an architecture test keeps it so), which refuses, with
``JsonRefused`` (a ``ValueError``) and one line saying why:

- more than ``max_bytes`` (the caller's cap: the body cap of its limits, a HAR file's);
- bytes that are not UTF-8 (RFC 8259 section 8.1: JSON exchanged between systems is UTF-8);
- text that is not JSON;
- nesting deeper than ``max_depth`` (no document of this API, nor a HAR file, nests past 10).

The depth is checked without a walk when the text holds fewer brackets than the limit (every
answer of this API: it is on each load request's path), else on the parsed value, iteratively.
"""

from __future__ import annotations

import json
from typing import Any

#: No JSON paysuite reads nests deeper (a HAR file is 6 levels, an answer of this API 3).
MAX_DEPTH = 64
#: What a caller that names no size reads at most: a HAR file's cap (``proxy.har``).
MAX_BYTES = 32 << 20

_DECODER = json.JSONDecoder()


class JsonRefused(ValueError):
    """Not read as JSON; the message is one line naming what and why."""


def loads(
    data: bytes | bytearray | str,
    *,
    what: str = "the body",
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``data`` decoded as JSON, or ``JsonRefused``: over ``max_bytes``, not UTF-8 (a leading
    byte-order mark is allowed, as RFC 8259 lets a parser), not JSON, or nested past
    ``max_depth``."""
    if len(data) > max_bytes:
        raise JsonRefused(f"{what}: {len(data)} bytes, over the {max_bytes} read as JSON")
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonRefused(
                f"{what}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise JsonRefused(
            f"{what}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise JsonRefused(f"{what}: JSON nested deeper than {max_depth} levels") from None
    if text.count("[") + text.count("{") > max_depth and _depth(value, max_depth) > max_depth:
        raise JsonRefused(f"{what}: JSON nested deeper than {max_depth} levels")
    return value


def _depth(value: object, limit: int) -> int:
    """How deep ``value`` nests, counted up to one past ``limit`` (no recursion)."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        todo.extend((child, depth + 1) for child in children)
    return deepest
