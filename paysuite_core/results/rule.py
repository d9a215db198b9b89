"""The rule a check names: its catalog entry (``Check``), the document's sections it cites
(``Section``) and how firmly the document states it (``Level``) in which profile (``Profile``).

Every judge's result names one of these, so the suite, the proxy, the SDK runs and the webhook
listener report the same way; the catalog that lists the suite's own entries stays in
``conformance.catalog``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["MUST", "SHOULD"]
#: The level of a rule outside the catalog: an SDK's operation the document describes
#: ("document"), one only the published SDKs call ("SDK-only"), an SDK as a whole ("SDK").
SdkLevel = Literal["document", "SDK-only", "SDK"]
Profile = Literal["seed", "reference"]
PROFILES: tuple[Profile, ...] = ("seed", "reference")


class Section:
    """The document's sections as the catalog cites them (``Section.ENDPOINT_FIND``)."""

    RESOURCES = "Resources and their fields"
    RESOURCES_APPLICATION = "Resources and their fields, Application"
    STATES = "States and transitions"
    ENDPOINTS = "Endpoints"
    ENDPOINT_CASHIN = "Endpoints, 1. Cashin"
    ENDPOINT_CASHOUT = "Endpoints, 2. Cashout"
    ENDPOINT_FIND = "Endpoints, 3. Find a transaction"
    ENDPOINT_EVENTS = "Endpoints, 4. List transaction events"
    ENDPOINT_AUTHORIZE = "Endpoints, 5. Authorize an application"
    ENDPOINT_REFRESH = "Endpoints, 6. Refresh tokens"
    AUTHENTICATION_1 = "Authentication, 1"
    AUTHENTICATION_2 = "Authentication, 2"
    AUTHENTICATION_3 = "Authentication, 3"
    AUTHENTICATION_4 = "Authentication, 4"
    AUTHENTICATION_5 = "Authentication, 5"
    EVENTS = "Events"
    WEBHOOKS = "Events, webhook delivery (not shown: reference choice)"
    ERRORS_1 = "Errors, rule 1"
    ERRORS_2 = "Errors, rule 2"
    LIMITS = "Limits"


#: Every section, in the document's order (the scorecard's and ``--list``'s order).
SECTIONS: tuple[str, ...] = tuple(
    value for name, value in vars(Section).items() if name.isupper() and isinstance(value, str)
)


@dataclass(frozen=True)
class Check:
    """One catalog entry: the rule a check enforces, where the document states it, how firmly
    (or one SDK operation of ``paysuite clients``, judged and reported the same way)."""

    id: str
    level: Level | SdkLevel
    section: str
    title: str
    quote: str
    profile: Profile = "seed"

    @property
    def group(self) -> str:
        return self.id.split("-", 1)[0]
