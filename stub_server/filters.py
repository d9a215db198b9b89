"""Query filters of the events list and the SDKs' transactions list: both read the same filters
with the same rules (RC-23..25, RC-34), so one parser validates them; every bad value is a
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

EVENT_FILTERS = ("status", "client", "ref", "kind", "event-kind", "from", "to")
TRANSACTION_FILTERS = ("status", "client", "ref", "kind", "from", "to")
PAGING = ("limit", "offset")


@dataclass(frozen=True, slots=True)
class ListFilters:
    #: Each filter as the client sent it (non-empty values only), for echoing back (RC-26).
    given: dict[str, str]
    #: The stored status the ``status`` filter selects.
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
    """A filter sent empty counts as not given (RC-25). ``lenient`` (the ``lenient-filters``
    behaviour): an unknown status, kind or event kind is a filter no row matches, not a 400. A
    parameter sent twice is a 400 ``ambiguous_parameter`` (RC-41): either list would be a guess.
    """
    refuse_repeated(query, (*names, *PAGING), "query parameter")
    given = {name: value for name in names if (value := query.get(name))}
    for name, allowed in (("status", STATUS_FILTERS), ("kind", KINDS), ("event-kind", EVENT_KINDS)):
        value = given.get(name)
        if value is not None and value not in allowed and not lenient:
            raise validation_error(name, f"must be one of {', '.join(allowed)}")
    status = given.get("status")
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
        kind=given.get("kind"),
        event_kind=given.get("event-kind"),
        from_us=bounds.get("from"),
        to_us=bounds.get("to"),
        limit=int_param(query.get("limit"), "limit", default_limit, 1, MAX_LIMIT),
        offset=int_param(query.get("offset"), "offset", 0, 0, None),
    )


def int_param(raw: str | None, name: str, default: int, low: int, high: int | None) -> int:
    """ASCII digits only: ``int()`` would also take ``+5``, `` 5`` and full-width digits."""
    if raw is None or raw == "":
        return default
    bound = f"between {low} and {high}" if high is not None else f">= {low}"
    valid = raw.isascii() and raw.isdigit() and len(raw) <= 1000  # then int() is safe
    if not valid or int(raw) < low or (high is not None and int(raw) > high):
        raise validation_error(name, f"must be an integer {bound}")
    return int(raw)
