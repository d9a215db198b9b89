"""What the model judges: one request of a history, the answer the target gave, and a problem.

Requests are plain frozen records, free of HTTP: the history phase builds them beside the
exchange it sends, and the concurrent checker (``linearizability.Call.request``) carries them
as they are. Tokens are named by a label the history gives each pair (``A1#2``): the model
tracks what the document lets each one do, never its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["CASHIN", "CASHOUT"]
Channel = Literal["header", "query"]
#: How a request names its resource: as the document writes it, or another way that names the
#: same thing (a ref in upper case, a number with the country code, a path with a trailing
#: slash). Another spelling may be refused; it never reaches what the canonical one is refused.
Spelling = Literal["canonical", "upper", "country-code", "slash"]
Outcome = Literal["confirm", "cancel"]

#: The families of rules, each judged by one MODEL check (docs/conformance.md, History phase).
IDEMPOTENCY = "MODEL-001"
PRIVILEGES = "MODEL-002"
LIFECYCLE = "MODEL-003"
EVENTS = "MODEL-004"
OVER_TIME = "MODEL-005"
SPELLINGS = "MODEL-006"
CONCURRENT = "MODEL-007"
REFERENCE = "MODEL-008"


@dataclass(frozen=True)
class Authorize:
    """A new pair for ``app`` (its access token named ``label``), living ``ttl_s``."""

    app: str
    label: str
    ttl_s: float


@dataclass(frozen=True)
class Create:
    """A cashin or cashout; ``key`` travels in ``channel``; ``spelling`` is the path's."""

    app: str
    token: str
    kind: Kind
    amount: int | float
    number: str
    key: str | None = None
    channel: Channel = "header"
    spelling: Spelling = "canonical"


@dataclass(frozen=True)
class Find:
    """Find ``ref`` (as the model knows it); ``spelling`` says how the request wrote it."""

    app: str
    token: str
    ref: str
    spelling: Spelling = "canonical"
    #: the customer acted long enough ago (the driver's time-out): pending is no answer now
    expect_processed: bool = False


@dataclass(frozen=True)
class ListEvents:
    """The events list with ``filters`` (name, value as the model knows it), one page or a walk
    of every page (``walk``: the answer's body is the list of the pages' bodies)."""

    app: str
    token: str
    filters: tuple[tuple[str, str], ...]
    limit: int | None = None
    offset: int | None = None
    walk: bool = False
    spelling: Spelling = "canonical"


@dataclass(frozen=True)
class Act:
    """The customer confirms or cancels ``ref`` through the configured driver."""

    ref: str
    outcome: Outcome


@dataclass(frozen=True)
class Refresh:
    """Refresh the pair of token ``token`` on ``path``; the new pair is named ``label``."""

    app: str
    token: str
    label: str
    path: str
    ttl_s: float


Request = Authorize | Create | Find | ListEvents | Act | Refresh


@dataclass(frozen=True)
class Answer:
    """What the target answered: its status (None: no answer) and its JSON body."""

    status: int | None
    body: object = field(default=None, compare=False, hash=False)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        """A 4xx, or a redirect for another spelling (what a framework does with a slash)."""
        return self.status is not None and 300 <= self.status < 500

    def get(self, key: str, default: object = None) -> object:
        return self.body.get(key, default) if isinstance(self.body, dict) else default


@dataclass(frozen=True)
class Problem:
    """How an answer parts from the model: the rule family (its MODEL check), what was wrong,
    and what the model allowed there. ``reference``: only the reference choices forbid it."""

    family: str
    message: str
    allowed: str
    reference: bool = False

    def line(self) -> str:
        return f"{self.message} (the model allowed: {self.allowed})"
