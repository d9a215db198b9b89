"""The API as the document names it: its paths, its status words, an event record's data.

Plain constants and functions (standard library only), shared by the checks, the ``Target`` and
the pre-flight, so that a check module can name a path without importing the HTTP client.
"""

from __future__ import annotations

import re
from typing import Any

from paysuite_core.request_data import same_number
from paysuite_core.tokens import AUTHORIZE_PATH, REFRESH_PATHS

CASHIN = "/transactions/cashin"
CASHOUT = "/transactions/cashout"
AUTHORIZE = AUTHORIZE_PATH
EVENTS = "/events/transactions"
SUCCESS_STATUSES = ("success", "successful")
UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)

__all__ = [
    "AUTHORIZE",
    "CASHIN",
    "CASHOUT",
    "EVENTS",
    "REFRESH_PATHS",
    "SUCCESS_STATUSES",
    "UUID_RE",
    "created_values_differ",
    "data_of",
    "find_path",
    "kind_path",
]


def find_path(ref: str) -> str:
    return f"/transactions/find/{ref}"


def kind_path(kind: str) -> str:
    return CASHIN if kind.upper() == "CASHIN" else CASHOUT


def data_of(event: dict[str, Any]) -> dict[str, Any]:
    """An event record's ``data`` (empty when it is missing or not an object)."""
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def created_values_differ(
    record: dict[str, Any], ref: str, kind: str, amount: Any, number: str, *, prefix: str = ""
) -> list[str]:
    """How ``record`` (a lookup response, or a created event's data) differs from the pending
    transaction that was created: ref, kind, amount, status pending, and the customer number in
    any notation (``same_number``)."""
    expected = {"ref": ref, "kind": kind, "amount": amount, "status": "pending"}
    wrong = [
        f"{prefix}{name} is {record.get(name)!r}, expected {value!r}"
        for name, value in expected.items()
        if record.get(name) != value
    ]
    if not same_number(record.get("client"), number):
        wrong.append(f"{prefix}client is {record.get('client')!r}, expected {number!r}")
    return wrong
