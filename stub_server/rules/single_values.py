"""Headers and query parameters the stub reads one value of must be sent once (RC-41).

aiohttp keeps every copy of a repeated header or query parameter, and ``get`` returns the first.
Taking the first of ``?status=success&status=failed``, of two ``Authorization`` headers or of two
``X-Webhook-Mode`` headers would act on a guess of what the client meant, and another server (or
a proxy on the way) may take the last: the same request would mean two things. So each is
refused with ``400 ambiguous_parameter`` naming it, as the ``Idempotency-Key`` already is
(RC-39, ``rules.idempotency``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from multidict import MultiMapping

from stub_server.errors import ambiguous

Where = Literal["header", "query parameter"]


def single(values: MultiMapping[str], name: str, where: Where) -> str | None:
    """The one value of ``name`` in ``values``, None when absent; a 400 when repeated."""
    found = values.getall(name, ())
    if len(found) > 1:
        raise ambiguous(name, len(found), where)
    return found[0] if found else None


def refuse_repeated(values: MultiMapping[str], names: Iterable[str], where: Where) -> None:
    """A 400 naming the first of ``names`` that ``values`` holds more than once.

    A request without any repeated key (nearly all of them) costs one set of its keys."""
    if len(values) == len(set(values.keys())):
        return
    for name in names:
        single(values, name, where)
