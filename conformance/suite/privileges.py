"""The document's "Authentication", rule 5 (privileges), and "Resources and their fields:
Application" (merchants) (PRIV-001..004, ISO-001..002).

What each application may do, and what another merchant's application may see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.checks import Section, check
from conformance.outcome import expect, not_applicable

if TYPE_CHECKING:
    from conformance.http import Reply
    from conformance.target import Target


def _denied(target: Target, app, kind: str, problems: list[str], proof: list[Reply]) -> None:
    """Try ``kind`` with ``app``; record the problem if it was allowed or executed."""
    number = target.number()
    witness = target.app("read-write", merchant=app.merchant) or app
    seen = target.known_refs(witness, number)
    reply = target.create(kind, app, number=number, key=target.fresh_key())
    if not reply.rejected:
        problems.append(f"a {app.privilege} application's {kind.lower()} answered {reply.status}")
        proof.append(reply)
    if target.created_events_for_number(witness, number, seen):
        problems.append(f"a {app.privilege} application's {kind.lower()} created a transaction")
        if reply not in proof:
            proof.append(reply)


@check(
    "PRIV-001",
    "MUST",
    Section.AUTHENTICATION_5,
    "a read-only application cannot create transactions",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_read_only_application_cannot_create(configured: Target) -> None:
    target = configured
    app = target.app("read")
    if app is None:
        not_applicable("no read-only application configured")
    problems: list[str] = []
    proof: list[Reply] = []
    _denied(target, app, "CASHIN", problems, proof)
    _denied(target, app, "CASHOUT", problems, proof)
    expect(not problems, "; ".join(problems), *proof)


@check(
    "PRIV-002",
    "MUST",
    Section.AUTHENTICATION_5,
    "read and read-write can read; writers can create their kind",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def each_privilege_allows_what_it_names(configured: Target) -> None:
    target = configured
    problems, proof = [], []
    ref = None
    writer = target.writer("CASHIN")
    if writer is not None:
        ref = target.created("CASHIN", writer)[1]["ref"]
    for app in target.apps():
        for kind, allowed in (("CASHIN", app.can_cashin()), ("CASHOUT", app.can_cashout())):
            if allowed:
                reply = target.create(kind, app, key=target.fresh_key())
                if not reply.ok:
                    problems.append(f"{app.privilege} {kind.lower()} answered {reply.status}")
                    proof.append(reply)
        if app.privilege in ("cashin", "cashout") and not target.reference:
            continue  # whether a cashin/cashout application may read is RC-12, not the document
        listing = target.list_events(app)
        if not listing.ok:
            problems.append(f"{app.privilege} events list answered {listing.status}")
            proof.append(listing)
        same_merchant = writer is not None and writer.merchant == app.merchant
        if ref is not None and same_merchant:
            found = target.find(ref, app)
            if not found.ok:
                problems.append(f"{app.privilege} find answered {found.status}")
                proof.append(found)
    expect(not problems, "; ".join(problems), *proof)


@check(
    "PRIV-003",
    "SHOULD",
    Section.AUTHENTICATION_5,
    "a cashin application cannot cash out",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_cashin_application_cannot_cash_out(configured: Target) -> None:
    app = configured.app("cashin")
    if app is None:
        not_applicable("no cashin application configured")
    problems: list[str] = []
    proof: list[Reply] = []
    _denied(configured, app, "CASHOUT", problems, proof)
    expect(not problems, "; ".join(problems), *proof)


@check(
    "PRIV-004",
    "SHOULD",
    Section.AUTHENTICATION_5,
    "a cashout application cannot cash in",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_cashout_application_cannot_cash_in(configured: Target) -> None:
    app = configured.app("cashout")
    if app is None:
        not_applicable("no cashout application configured")
    problems: list[str] = []
    proof: list[Reply] = []
    _denied(configured, app, "CASHIN", problems, proof)
    expect(not problems, "; ".join(problems), *proof)


def _two_merchants(target: Target):
    merchants = target.need_config().merchants()
    if len(merchants) < 2:
        not_applicable("applications of only one merchant configured")
    owner = next(
        (target.writer("CASHIN") for _ in [0] if target.writer("CASHIN") is not None), None
    )
    if owner is None:
        not_applicable("no application may cashin")
    other = next((a for a in target.apps() if a.merchant != owner.merchant), None)
    if other is None:
        not_applicable(f"no application of a merchant other than {owner.merchant} configured")
    return owner, other


@check(
    "ISO-001",
    "MUST",
    Section.RESOURCES_APPLICATION,
    "another merchant's application cannot find a transaction",
    "An application is created by the merchant in the service dashboard.",
)
def another_merchant_cannot_find_the_transaction(configured: Target) -> None:
    target = configured
    owner, other = _two_merchants(target)
    _, created = target.created("CASHIN", owner)
    reply = target.find(created["ref"], other)
    expect(
        reply.rejected,
        f"merchant {other.merchant}'s application found merchant "
        f"{owner.merchant}'s transaction ({reply.status})",
        reply,
    )


@check(
    "ISO-002",
    "MUST",
    Section.RESOURCES_APPLICATION,
    "another merchant's application does not see the transaction's events",
    "An application is created by the merchant in the service dashboard.",
)
def another_merchant_does_not_see_the_events(configured: Target) -> None:
    target = configured
    owner, other = _two_merchants(target)
    number = target.number()
    _, created = target.created("CASHIN", owner, number=number)
    problems, proof = [], []
    for filters in ({"ref": created["ref"]}, {"client": number}, {}):
        reply = target.list_events(other, **filters)
        proof.append(reply)
        refs = {
            (e.get("data") or {}).get("ref")
            for e in reply.get("transactions") or []
            if isinstance(e, dict)
        }
        if created["ref"] in refs:
            problems.append(f"merchant {other.merchant} sees the event with filters {filters}")
    expect(not problems, "; ".join(problems), *proof)
