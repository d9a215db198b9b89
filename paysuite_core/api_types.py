"""The API's JSON bodies as types (spec/openapi.yaml's schemas), shared by every package.

A body read from a target is untrusted: code holds it as ``JsonObject`` (or ``object``) and
narrows it; one of these TypedDicts is for a body the code built or checked field by field.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

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


class TokenPair(TypedDict):
    """Authorize's and refresh's answer (``TokenPair``; ``expires`` a string or an integer)."""

    access: str
    refresh: str
    expires: str | int
