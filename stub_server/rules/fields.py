"""The creation request's fields: ``amount``, ``number`` and the ``X-Webhook-Mode`` header.

Enforces Endpoints, 1. Cashin and 2. Cashout (required fields, their types and bounds) and the
Limits on text the stub stores. Checked by TXN-003, ERR-001, ERR-003 and PROP-005.
"""

from __future__ import annotations

import math
import re

from aiohttp import web

from stub_server.errors import validation_error
from stub_server.rules.request_body import JsonObject
from stub_server.rules.single_values import single
from stub_server.settings import StubSettings
from stub_server.store import Amount

MAX_WEBHOOK_MODE_LENGTH = 64
MAX_NUMBER_LENGTH = 64
#: SQLite's integers end here: a larger amount could not be stored exactly.
SQLITE_INT = 2**63


def is_text(value: str) -> bool:
    """True when ``value`` is real Unicode text: aiohttp decodes header bytes that are not UTF-8
    to lone surrogates (``surrogateescape``), and JSON's ``\\ud800`` escapes make them too;
    SQLite cannot store them."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def required_string(body: JsonObject, name: str) -> str:
    """The body's ``name``: present, not null, and a string."""
    value = body.get(name)
    if value is None:
        raise validation_error(name, "is required")
    if not isinstance(value, str):
        raise validation_error(name, "must be a string")
    return value


def validate_amount(body: JsonObject, settings: StubSettings) -> Amount:
    """The ``amount``: a finite JSON number within the configured bounds."""
    if "amount" not in body or body["amount"] is None:
        raise validation_error("amount", "is required")
    amount = body["amount"]
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        raise validation_error("amount", "must be a number")
    if isinstance(amount, float) and not math.isfinite(amount):
        raise validation_error("amount", "must be a finite number")
    if amount < settings.amount_min:
        raise validation_error("amount", f"must be at least {_plain(settings.amount_min)}")
    if amount > settings.amount_max or (isinstance(amount, int) and amount >= SQLITE_INT):
        raise validation_error("amount", f"must be at most {_plain(settings.amount_max)}")
    return amount


def validate_number(body: JsonObject, number_regex: re.Pattern[str], pattern: str) -> str:
    """The customer ``number``: a string matching the configured phone number pattern."""
    number = required_string(body, "number")
    if len(number) > MAX_NUMBER_LENGTH or not is_text(number) or not number_regex.fullmatch(number):
        raise validation_error("number", f"must be a phone number matching {pattern}")
    return number


def webhook_mode(request: web.Request) -> str | None:
    """The ``X-Webhook-Mode`` header, stored with the transaction; ``""`` is none (RC-35).
    Sent twice, it is refused (RC-41): the events would go to one of two modes by guess."""
    mode = single(request.headers, "X-Webhook-Mode", "header") or None
    if mode is not None and len(mode) > MAX_WEBHOOK_MODE_LENGTH:
        raise validation_error(
            "X-Webhook-Mode", f"must be at most {MAX_WEBHOOK_MODE_LENGTH} characters"
        )
    if mode is not None and not is_text(mode):
        raise validation_error("X-Webhook-Mode", "must be UTF-8 text")
    return mode


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
