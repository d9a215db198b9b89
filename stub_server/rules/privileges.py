"""Which application privilege may create which kind of transaction (Authentication, 5).

Checked by PRIV-001..PRIV-004. Reads (find, the events list) need any privilege; a creation
needs ``read-write`` or the privilege named after its kind. Refused with 403, after the token
(401) and before the body is read.
"""

from __future__ import annotations

from collections.abc import Callable

from stub_server.errors import ApiError
from stub_server.store import AppRecord

CAN_CASHIN = frozenset({"cashin", "read-write"})
CAN_CASHOUT = frozenset({"cashout", "read-write"})

#: (privilege, kind) -> whether that privilege may create that kind.
MayCreate = Callable[[str, str], bool]


def may_create(privilege: str, kind: str) -> bool:
    """The rule: ``CASHIN`` needs cashin or read-write, ``CASHOUT`` cashout or read-write."""
    return privilege in (CAN_CASHIN if kind == "CASHIN" else CAN_CASHOUT)


def require_privilege(record: AppRecord, kind: str, allowed: MayCreate = may_create) -> None:
    """Raise the 403 when ``record``'s application may not create ``kind``."""
    if not allowed(record.privilege, kind):
        raise ApiError(
            403,
            "insufficient_privilege",
            f"privilege {record.privilege!r} does not allow {kind.lower()}",
        )
