"""Query filters of the two list endpoints: the events list and the SDKs' transactions list.

Both read the same filters with the same rules (RC-23..25, RC-34), so one parser validates them
and the handlers only decide what to do with the result. Every bad value is a
``400 validation_error`` naming the parameter, never a 500.
"""

from __future__ import annotations

from dataclasses import dataclass

from multidict import MultiMapping

from stub_server import timefmt
from stub_server.errors import validation_error
from stub_server.rules.single_values import refuse_repeated

#: Status filter values and the stored status each one selects (``successful``: RC-17 alias).
STATUS_FILTERS = {
    "pending": "pending",
    "success": "success",
    "successful": "success",
    "failed": "failed",
}
KINDS = ("CASHIN", "CASHOUT")
EVENT_KINDS = ("transaction:created", "transaction:processed")
DEFAULT_LIMIT = 20
MAX_LIMIT = 100

#: The filters of the events list; the transactions list has all of them but ``event-kind``.
EVENT_FILTERS = ("status", "client", "ref", "kind", "event-kind", "from", "to")
TRANSACTION_FILTERS = ("status", "client", "ref", "kind", "from", "to")
#: The paging parameters both lists read beside their filters.
PAGING = ("limit", "offset")


@dataclass(frozen=True, slots=True)
class ListFilters:
    """The validated filters of one list request."""

    #: Each filter as the client sent it (non-empty values only), for echoing back (RC-26).
    given: dict[str, str]
    #: The stored status the ``status`` filter selects, or None.
    status: str | None
    kind: str | None
    event_kind: str | None
    from_us: int | None
    to_us: int | None
    limit: int
    offset: int

    @property
    def client(self) -> str | None:
        return self.given.get("client")

    @property
    def ref(self) -> str | None:
        return self.given.get("ref")


def parse_list_query(
    query: MultiMapping[str],
    names: tuple[str, ...],
    *,
    lenient: bool = False,
    default_limit: int = DEFAULT_LIMIT,
) -> ListFilters:
    """Validate ``names`` filters plus ``limit`` and ``offset`` from ``query``.

    A filter sent with an empty value counts as not given (RC-25). ``from``/``to`` accept what
    ``timefmt.parse_bound`` does: ISO 8601, and a JavaScript ``Date``'s text (RC-34).
    ``lenient`` (the ``lenient-filters`` behaviour): an unknown status, kind or event kind is
    no 400 but a filter that no stored row matches, so the list is empty. A filter or paging
    parameter sent twice (``?status=success&status=failed``) is a 400 ``ambiguous_parameter``
    (RC-41), whatever the values: the list of one of them would be a guess.
    """
    refuse_repeated(query, (*names, *PAGING), "query parameter")
    given = {name: value for name in names if (value := query.get(name))}
    status = given.get("status")
    if status is not None and status not in STATUS_FILTERS and not lenient:
        raise validation_error("status", f"must be one of {', '.join(STATUS_FILTERS)}")
    kind = given.get("kind")
    if kind is not None and kind not in KINDS and not lenient:
        raise validation_error("kind", f"must be one of {', '.join(KINDS)}")
    event_kind = given.get("event-kind")
    if event_kind is not None and event_kind not in EVENT_KINDS and not lenient:
        raise validation_error("event-kind", f"must be one of {', '.join(EVENT_KINDS)}")
    bounds: dict[str, int] = {}
    for name in ("from", "to"):
        if name in given:
            try:
                bounds[name] = timefmt.parse_bound(given[name], upper=name == "to")
            except (ValueError, OverflowError):
                raise validation_error(
                    name, "must be an ISO 8601 date or date-time (or a JavaScript Date's text)"
                ) from None
    return ListFilters(
        given=given,
        status=None if status is None else STATUS_FILTERS.get(status, status),
        kind=kind,
        event_kind=event_kind,
        from_us=bounds.get("from"),
        to_us=bounds.get("to"),
        limit=int_param(query.get("limit"), "limit", default_limit, 1, MAX_LIMIT),
        offset=int_param(query.get("offset"), "offset", 0, 0, None),
    )


def int_param(raw: str | None, name: str, default: int, low: int, high: int | None) -> int:
    """A non-negative decimal integer query parameter within [low, high]; ASCII digits only
    (``int()`` would also take ``+5``, `` 5`` and full-width digits)."""
    if raw is None or raw == "":
        return default
    bound = f"between {low} and {high}" if high is not None else f">= {low}"
    if not raw.isascii() or not raw.isdigit() or len(raw) > 1000:
        raise validation_error(name, f"must be an integer {bound}")
    value = int(raw)
    if value < low or (high is not None and value > high):
        raise validation_error(name, f"must be an integer {bound}")
    return value
