"""The API as the document names it: its paths, its status words, an event record's data.

Plain constants and functions (standard library only), shared by the checks, the ``Target`` and
the pre-flight, so that a check module can name a path without importing the HTTP client.
"""

from __future__ import annotations

import re
from typing import Any

from paysuite_core.api_types import JsonObject
from paysuite_core.request_data import same_number
from paysuite_core.tokens import AUTHORIZE_PATH
from paysuite_core.tokens import REFRESH_PATHS as REFRESH_PATHS
from paysuite_core.url_paths import segment

CASHIN = "/transactions/cashin"
CASHOUT = "/transactions/cashout"
AUTHORIZE = AUTHORIZE_PATH
EVENTS = "/events/transactions"
SUCCESS_STATUSES = ("success", "successful")
UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


def find_path(ref: str) -> str:
    """The lookup of ``ref``, one encoded path segment: a ref is the target's word, and a ref
    holding ``/`` or ``..`` must not send the suite elsewhere."""
    return f"/transactions/find/{segment(ref)}"


def kind_path(kind: str) -> str:
    return CASHIN if kind.upper() == "CASHIN" else CASHOUT


def data_of(event: JsonObject) -> JsonObject:
    """An event record's ``data`` (empty when it is missing or not an object)."""
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def created_values_differ(
    record: JsonObject, ref: str, kind: str, amount: object, number: str, *, prefix: str = ""
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


# --- rules the suite and the proxy judge alike (one predicate, one check ID) -------------------
def same_outcome(one: object, other: object) -> bool:
    """Two statuses name the same outcome: ``success`` and ``successful`` are one ("treat both
    as a successful outcome"); anything else only itself."""

    def outcome(status: object) -> object:
        return "success" if status in SUCCESS_STATUSES else status

    return bool(outcome(one) == outcome(other))


def reuse_problems(
    kind: str, key_in: str, status: int | None, created_refs: list[str], number: object
) -> list[str]:
    """What a reuse of an idempotency key did wrong, empty when the rule held (IDEM-001): "A
    second cashin or cashout request that reuses an idempotency key already used is rejected,
    and the transaction is not executed twice." ``status`` is the reuse's answer,
    ``created_refs`` the transactions the key's requests created (one expected); a ``status`` of
    None judges the count alone."""
    problems = []
    if status is not None and not 400 <= status < 500:
        problems.append(
            f"a second {kind.lower()} reusing the {key_in} key answered {status}, "
            "expected a rejection (4xx)"
        )
    if len(created_refs) != 1:
        problems.append(
            f"{len(created_refs)} transactions were created for number {number} with one key "
            f"(refs {', '.join(created_refs)})"
        )
    return problems


def status_changed(before: object, after: object) -> str | None:
    """How a processed transaction changed again (LIFE-004), or None when it did not."""
    if same_outcome(before, after):
        return None
    return f"the processed transaction changed from {before!r} to {after!r}"


def event_disagrees_with_find(event_status: object, find_status: object) -> str | None:
    """How the processed event and find disagree on the outcome (LIFE-002/003), or None."""
    if same_outcome(event_status, find_status):
        return None
    return f"the processed event's status {event_status!r} differs from find's {find_status!r}"


def same_amount(one: Any, other: Any) -> bool:
    """Amounts as numbers (100 and 100.0 are one amount; a text amount is read as a number)."""
    if isinstance(one, bool) or isinstance(other, bool):  # a boolean is no amount
        return type(one) is type(other) and one == other
    try:
        return float(one) == float(other)
    except (TypeError, ValueError):
        return bool(one == other)
