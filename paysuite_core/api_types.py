"""The API's JSON bodies as types (spec/openapi.yaml's schemas), shared by every package.

A body read from a target is untrusted: code holds it as ``JsonObject`` (or ``object``) and
narrows it; one of these TypedDicts is for a body the code built or checked field by field, and
``field_types`` gives a check the types to check a body's fields against.

Evaluated at import (no ``from __future__ import annotations``): Python 3.11's TypedDict reads
``NotRequired`` only from an evaluated annotation.
"""

from types import UnionType
from typing import (
    Literal,
    NotRequired,
    TypedDict,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

#: A JSON object as read, before any check of its fields: every value must be narrowed.
JsonObject = dict[str, object]
Kind = Literal["CASHIN", "CASHOUT"]
EventKind = Literal["transaction:created", "transaction:processed"]


class Transaction(TypedDict):
    """A creation's answer (``CreationResponse``)."""

    ref: str
    kind: Kind
    amount: int | float
    status: str
    created_at: str


class Lookup(TypedDict):
    """Find's answer (``LookupResponse``)."""

    amount: int | float
    client: str
    fee: int | float
    kind: Kind
    merchant: str
    ref: str
    status: str
    timestamp: str


class EventData(TypedDict):
    """An event record's transaction snapshot (``EventData``)."""

    ref: str
    kind: Kind
    fee: int | float
    merchant: str
    client: str
    amount: int | float
    status: str
    created_at: str
    processed_at: NotRequired[str | None]


class Event(TypedDict):
    """One record of the events list (``EventRecord``)."""

    event_id: str
    event_kind: EventKind
    created_at: str
    data: EventData


#: The events list's envelope (``EventList``); its optional echoes include ``event-kind``.
EventsPage = TypedDict(
    "EventsPage",
    {
        "limit": int,
        "offset": int,
        "total": int,
        "transactions": list[Event],
        "amount": NotRequired[int | float],
        "client": NotRequired[str],
        "event-kind": NotRequired[str],
        "kind": NotRequired[str],
        "ref": NotRequired[str],
        "status": NotRequired[str],
    },
)


class ErrorBody(TypedDict):
    """The reference stub's error body (``Error``, RC-3)."""

    status: int
    code: str
    message: str


class TokenPairBody(TypedDict):
    """Authorize's and refresh's answer (``TokenPair``; ``expires`` a string or an integer)."""

    access: str
    refresh: str
    expires: str | int


def field_types(body: type) -> dict[str, tuple[type, ...]]:
    """Each field of the TypedDict ``body``, in its order, as the types ``isinstance`` takes (a
    Literal: its values' type; ``list[Event]``: list; a TypedDict: dict)."""
    found: dict[str, tuple[type, ...]] = {}
    for name, hint in get_type_hints(body).items():
        origin = get_origin(hint)
        if origin is Literal:
            found[name] = (type(get_args(hint)[0]),)
        else:
            union = get_args(hint) if origin is UnionType else (hint,)
            found[name] = tuple(
                dict if is_typeddict(one) else get_origin(one) or one for one in union
            )
    return found
