"""The rules the proxy judges, each under one check ID, and what a broken one leaves behind.

A rule that is the same rule as a suite check carries that check's catalog entry (IDEM-001..005,
AUTH-008, AUTH-012, LIFE-002/003, LIFE-004), so a QA sees one ID per rule whichever tool found
it. The per-exchange comparison with the spec has entries of its own (``PROXY-SCHEMA-REQ``,
``PROXY-SCHEMA-RESP``): the PROP checks name *generated* traffic, the proxy judges the client's.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance import catalog
from paysuite_core.exchange import Exchange
from paysuite_core.results.rule import Check, Section

#: The report's section of the rules a client breaks: its own, apart from the document's sections
#: where the target's rules sit, so a client's mistake never reads as the server's.
CLIENT_SECTION = "The client's requests (the client's fault, not the target's)"
SCHEMA_REQUEST = Check(
    id="PROXY-SCHEMA-REQ",
    level="MUST",
    section=CLIENT_SECTION,
    title="each request the client sent follows the document (body fields and types, key length)",
    quote="All bodies are JSON. [...] Body: amount (number, required), number (string, "
    "required). [...] Idempotency-Key: Unique string, maximum length 32.",
)
SCHEMA_RESPONSE = Check(
    id="PROXY-SCHEMA-RESP",
    level="MUST",
    section=Section.RESOURCES,
    title="each answer follows the spec: a documented status, JSON, the documented schema",
    quote="All bodies are JSON. [...] Response: the transaction creation response / the "
    "transaction lookup response / the event list envelope / the token pair.",
)

#: The suite's checks whose rule the proxy judges on live traffic.
IDEMPOTENCY = catalog.get("IDEM-001")
CROSS_KIND_REUSE = catalog.get("IDEM-002")
KEY_LENGTH = catalog.get("IDEM-003")
QUERY_KEY_REUSE = catalog.get("IDEM-004")
CONCURRENT_REUSE = catalog.get("IDEM-005")
EXPIRY = catalog.get("AUTH-008")
ROTATION = catalog.get("AUTH-012")
FINAL_ONCE_PROCESSED = catalog.get("LIFE-004")
CONFIRMED = catalog.get("LIFE-002")
CANCELLED = catalog.get("LIFE-003")

#: The rules only a client can break (what it sent); every other rule judges the target.
CLIENT_RULES = frozenset({SCHEMA_REQUEST.id})
#: ``--judge``: whose violations gate the exit status.
JUDGED_PARTIES = {"server": frozenset({"server"}), "client": frozenset({"client"}),
                  "both": frozenset({"server", "client"})}  # fmt: skip


def party(check: Check) -> str:
    """Whose fault a violation of ``check`` is: "client" or "server"."""
    return "client" if check.id in CLIENT_RULES else "server"


def outcome_check(status: object) -> Check:
    """LIFE-002 judges a confirmation's outcome, LIFE-003 a cancellation's (``failed``)."""
    return CANCELLED if status == "failed" else CONFIRMED


#: Every rule of a proxy run, in the report's order.
RULES: tuple[Check, ...] = (
    SCHEMA_REQUEST,
    SCHEMA_RESPONSE,
    EXPIRY,
    ROTATION,
    IDEMPOTENCY,
    CROSS_KIND_REUSE,
    KEY_LENGTH,
    QUERY_KEY_REUSE,
    CONCURRENT_REUSE,
    CONFIRMED,
    CANCELLED,
    FINAL_ONCE_PROCESSED,
)


@dataclass(frozen=True)
class Violation:
    """One broken rule: the check, what was expected and seen, and the exchanges that prove it.

    ``exchanges`` are the proxied exchanges in the order they happened (the last is the one that
    revealed the violation); ``confirmations`` are the exchanges the judge made itself through its
    own client (conformance evidence dicts), when the verdict needed them.
    """

    check: Check
    message: str
    exchanges: tuple[Exchange, ...]
    expected: str = ""
    actual: str = ""
    confirmations: tuple[dict[str, object], ...] = ()

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(exchange.seq for exchange in self.exchanges)

    def line(self) -> str:
        """The live terminal line: ID, the exchanges, the message."""
        seqs = ", ".join(f"#{seq}" for seq in self.seqs) or "-"
        whose = "client " if party(self.check) == "client" else ""
        return f"× {whose}{self.check.id:<17} [{seqs}] {self.message}"
