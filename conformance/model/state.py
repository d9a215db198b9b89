"""The model's state: immutable and hashable, so a checker can memoize it (WGL's cache).

Everything a later answer depends on is here: each transaction the history made (its merchant,
kind, amount and customer, when its creation was answered, what the customer asked, the one
terminal word once seen, the identities of its events once listed), the idempotency keys each
merchant used, and each token's standing. What a target is configured with (applications,
lifetimes, the profile's narrowing) is the ``World``: fixed for a whole history.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Narrowing = Literal["seed", "reference"]
KeyUse = Literal["used", "maybe"]
TokenStanding = Literal["live", "ref-live", "maybe"]


@dataclass(frozen=True)
class App:
    """One configured application: what the model knows of it."""

    client_id: str
    privilege: str
    merchant: str

    def may_create(self, kind: str, narrowing: Narrowing) -> bool | None:
        """True: the document allows it; False: it forbids it; None: the document is silent
        (a cashin application's cashout: refused under the reference choice RC-12)."""
        if self.privilege == "read-write":
            return True
        if self.privilege == "read":
            return False
        if self.privilege == kind.lower():
            return True
        return False if narrowing == "reference" else None

    def may_read(self, narrowing: Narrowing) -> bool | None:
        """Reads: read and read-write may; cashin and cashout only under RC-12."""
        if self.privilege in ("read", "read-write") or narrowing == "reference":
            return True
        return None


@dataclass(frozen=True)
class World:
    """What stays fixed over a history: the configuration and the profile's narrowing."""

    apps: tuple[App, ...]
    narrowing: Narrowing = "seed"
    #: How long after its cause an event may still be missing from the list (an outbox).
    settle_s: float = 2.0
    #: The declared pending time-out (RC-18), None when the target declares none.
    pending_timeout_s: float | None = None
    #: The declared refresh rotation (a spent refresh token is refused), None: not declared.
    refresh_rotation: bool | None = None
    #: Whether customer numbers are the history's own (drawn fresh): counts are then judged.
    unique_numbers: bool = True
    #: Slack around a token's expiry and a declared time-out (clocks and transit).
    skew_s: float = 1.0
    #: Customer numbers drawn for the history before any request (the concurrent histories'):
    #: a list under one is the history's own even where no creation of it is placed yet.
    own_numbers: frozenset[str] = frozenset()

    def app(self, client_id: str) -> App:
        for app in self.apps:
            if app.client_id == client_id:
                return app
        raise KeyError(client_id)


@dataclass(frozen=True)
class Txn:
    """One transaction the history created."""

    ref: str
    merchant: str
    kind: str
    amount: int | float
    number: str
    #: monotonic time its creation was answered: its created event is due ``settle_s`` later
    created: float
    #: outcomes the customer asked for, with the time the driver answered
    asked: tuple[tuple[str, float], ...] = ()
    #: the terminal word once seen (find or a processed event), and when it was first seen
    word: str | None = None
    settled: float | None = None
    #: (event kind, event_id) of each event of it the list showed
    event_ids: tuple[tuple[str, str], ...] = ()

    @property
    def pending(self) -> bool:
        return self.word is None


@dataclass(frozen=True)
class Token:
    """A token pair the history holds: its access token's standing and expiry, its refresh
    token's (``spent``: used once already)."""

    label: str
    app: str
    expires: float
    standing: TokenStanding = "live"
    spent: bool = False


@dataclass(frozen=True)
class State:
    txns: tuple[Txn, ...] = ()
    #: (merchant, key, use): "maybe" for a key whose request was refused for another reason
    keys: frozenset[tuple[str, str, KeyUse]] = frozenset()
    tokens: tuple[Token, ...] = ()
    #: (merchant, kind, amount, number) of creations the target refused: an event that no
    #: accepted creation explains and that matches one of these is an executed rejection
    refused: frozenset[tuple[str, str, float, str]] = frozenset()
    #: refresh paths the target answered 404 (not served: it may serve one shape only)
    unserved: frozenset[str] = frozenset()
    #: (merchant, kind, amount, number) of creations that got no answer (a time-out, a cut
    #: connection) in a state where they took effect: their transaction exists under a ref the
    #: history never learnt, until an event shows it (``events._adopt_landed``)
    landed: frozenset[tuple[str, str, float, str]] = frozenset()

    # --- look-ups ---------------------------------------------------------------------
    def txn(self, ref: str) -> Txn | None:
        for txn in self.txns:
            if txn.ref == ref:
                return txn
        return None

    def token(self, label: str) -> Token | None:
        for token in self.tokens:
            if token.label == label:
                return token
        return None

    def key_use(self, merchant: str, key: str) -> KeyUse | None:
        for owner, known, use in self.keys:
            if owner == merchant and known == key:
                return use
        return None

    def key_used_elsewhere(self, merchant: str, key: str) -> bool:
        return any(owner != merchant and known == key for owner, known, _ in self.keys)

    def event_owner(self, event_id: str) -> tuple[str, str] | None:
        """(ref, event kind) of the event that carried ``event_id`` before."""
        for txn in self.txns:
            for kind, known in txn.event_ids:
                if known == event_id:
                    return txn.ref, kind
        return None

    # --- changes (each a new state) -------------------------------------------------------
    def with_txn(self, txn: Txn) -> State:
        others = tuple(t for t in self.txns if t.ref != txn.ref)
        return replace(self, txns=tuple(sorted((*others, txn), key=lambda t: t.ref)))

    def with_key(self, merchant: str, key: str, use: KeyUse) -> State:
        kept = frozenset(k for k in self.keys if not (k[0] == merchant and k[1] == key))
        return replace(self, keys=kept | {(merchant, key, use)})

    def with_token(self, token: Token) -> State:
        others = tuple(t for t in self.tokens if t.label != token.label)
        return replace(self, tokens=tuple(sorted((*others, token), key=lambda t: t.label)))
