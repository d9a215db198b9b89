"""The document's "Authentication", rule 5 (privileges), and "Resources and their fields:
Application" (merchants) (PRIV-001..004, ISO-001..002).

What each application may do, with the token authorize gave it and with the token each refresh
path renews it to, and what another merchant's application may see, on find and on the events
list unfiltered and under each filter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from conformance.checks import Findings, check
from conformance.suite.authentication import refreshed_pairs
from paysuite_core.driver.api import data_of
from paysuite_core.results.outcome import expect, not_applicable
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application


def _denied(
    target: Target,
    app: Application,
    kind: str,
    found: Findings,
    token: tuple[str, str | None] = ("", None),
) -> None:
    """Try ``kind`` with ``app``; record the problem if it was allowed or executed.

    ``token``: (how it was obtained, the access token), or the authorize token by default.
    """
    how, access = token
    number = target.number()
    witness = target.app("read-write", merchant=app.merchant) or app
    seen = target.known_refs(witness, number)
    reply = target.create(kind, app, number=number, key=target.fresh_key(), token=access)
    what = f"a {app.privilege} application's {kind.lower()}{how}"
    if not reply.rejected:
        found.add(f"{what} answered {reply.status}", reply)
    if target.created_events_for_number(witness, number, seen):
        found.add(f"{what} created a transaction", *([] if reply in found.proof else [reply]))


def _tokens_of(target: Target, app: Application) -> Iterator[tuple[str, str | None]]:
    """The tokens a privilege must hold for: authorize's, and the one each refresh path that
    serves a pair renews it to (a refresh returns the same application's pair). Each is
    obtained when the caller moves on to it, so it is used within its lifetime."""
    yield "", None
    for template, reply in refreshed_pairs(target, app):
        yield f" with the token refreshed on GET {template}", reply.get("access")


def _denied_with_every_token(target: Target, privilege: str, kinds: tuple[str, ...]) -> None:
    """The ``privilege`` application may create none of ``kinds``, with any token it holds
    (authorized or refreshed); not applicable when none is configured."""
    app = target.app(privilege)
    if app is None:
        shown = "read-only" if privilege == "read" else privilege
        not_applicable(f"no {shown} application configured")
    found = Findings()
    for token in _tokens_of(target, app):
        for kind in kinds:
            _denied(target, app, kind, found, token)
    found.verdict(
        f"{' and '.join(k.lower() for k in kinds)} refused (4xx) and nothing created, "
        "with the authorized and every refreshed token"
    )


@check(
    "PRIV-001",
    "MUST",
    Section.AUTHENTICATION_5,
    "a read-only application cannot create transactions, with its authorized or refreshed token",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_read_only_application_cannot_create(target: Target) -> None:
    _denied_with_every_token(target, "read", ("CASHIN", "CASHOUT"))


@check(
    "PRIV-002",
    "MUST",
    Section.AUTHENTICATION_5,
    "read and read-write can read; writers can create their kind, with their authorized and "
    "refreshed tokens",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def each_privilege_allows_what_it_names(target: Target) -> None:
    """Each privilege allows what it names. A writer's token renewed by refresh still creates
    its kind (a refresh returns the same application's pair: a privilege lost on refresh is
    the session broken after 15 minutes)."""
    found, ref = Findings(), None
    writer, kind = target.writer("CASHIN"), "CASHIN"
    if writer is None:
        writer, kind = target.writer("CASHOUT"), "CASHOUT"
    if writer is not None:
        ref = target.created(kind, writer)[1]["ref"]
    for app in target.apps():
        for kind, allowed in (("CASHIN", app.can_cashin()), ("CASHOUT", app.can_cashout())):
            if allowed:
                reply = target.create(kind, app, key=target.fresh_key())
                if not reply.ok:
                    found.add(f"{app.privilege} {kind.lower()} answered {reply.status}", reply)
        if app.can_cashin() or app.can_cashout():
            kind = "CASHIN" if app.can_cashin() else "CASHOUT"
            for how, access in _tokens_of(target, app):
                if access is None:
                    continue  # authorize's token: created with just above
                reply = target.create(kind, app, key=target.fresh_key(), token=access)
                if not reply.ok:
                    what = f"a {app.privilege} application's {kind.lower()}{how}"
                    found.add(f"{what} answered {reply.status}", reply)
        if app.privilege in ("cashin", "cashout") and not target.reference:
            continue  # whether a cashin/cashout application may read is RC-12, not the document
        listing = target.list_events(app)
        if not listing.ok:
            found.add(f"{app.privilege} events list answered {listing.status}", listing)
        same_merchant = writer is not None and writer.merchant == app.merchant
        if ref is not None and same_merchant:
            lookup = target.find(ref, app)
            if not lookup.ok:
                found.add(f"{app.privilege} find answered {lookup.status}", lookup)
    found.verdict("every privilege allowed what it names, with authorized and refreshed tokens")


@check(
    "PRIV-003",
    "SHOULD",
    Section.AUTHENTICATION_5,
    "a cashin application cannot cash out, with its authorized or refreshed token",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_cashin_application_cannot_cash_out(target: Target) -> None:
    _denied_with_every_token(target, "cashin", ("CASHOUT",))


@check(
    "PRIV-004",
    "SHOULD",
    Section.AUTHENTICATION_5,
    "a cashout application cannot cash in, with its authorized or refreshed token",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
)
def a_cashout_application_cannot_cash_in(target: Target) -> None:
    _denied_with_every_token(target, "cashout", ("CASHIN",))


def _two_merchants(target: Target) -> tuple[Application, Application]:
    """An application that may cash in and one of another merchant, or not applicable."""
    merchants = target.need_config().merchants()
    if len(merchants) < 2:
        not_applicable("applications of only one merchant configured")
    owner = target.writer("CASHIN")
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
def another_merchant_cannot_find_the_transaction(target: Target) -> None:
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
    "another merchant's application does not see the transaction's events: unfiltered, or by "
    "ref, client, kind or status",
    "An application is created by the merchant in the service dashboard.",
)
def another_merchant_does_not_see_the_events(target: Target) -> None:
    """Every way the list can return data is scoped: unfiltered, and under each filter the
    document names (ref, client, kind, status), since an implementation may build each filter's
    query apart and forget the merchant in one. One page per filter keeps it cheap; a leak still
    shows on it whatever the order, as any event of the owner's merchant code (the owner's
    transactions fill the list), not only the one just created."""
    owner, other = _two_merchants(target)
    number = target.number()
    _, created = target.created("CASHIN", owner, number=number)
    ref = created["ref"]
    owner_code = _merchant_code(target, owner, ref)
    found = Findings()
    filters: list[dict[str, str]] = [
        {"ref": ref},
        {"client": number},
        {"kind": "CASHIN"},
        {"status": "pending"},
        {},
    ]
    for params in filters:
        reply = target.list_events(other, **params)
        found.proof.append(reply)
        records = reply.get("transactions") if reply.ok else None
        data = (
            [data_of(e) for e in records if isinstance(e, dict)]
            if isinstance(records, list)
            else []
        )
        if any(d.get("ref") == ref for d in data):
            found.problems.append(f"merchant {other.merchant} sees the event with filters {params}")
        elif owner_code is not None and any(d.get("merchant") == owner_code for d in data):
            found.problems.append(
                f"merchant {other.merchant} sees events of merchant {owner_code} with filters "
                f"{params}"
            )
    found.verdict(
        f"no event of merchant {owner.merchant} in merchant {other.merchant}'s list, "
        "unfiltered or under any filter"
    )


def _merchant_code(target: Target, owner: Application, ref: str) -> str | None:
    """The merchant code the target writes on ``owner``'s transactions (find's ``merchant``), read
    by an application of the owner's merchant that may read; None when none can tell."""
    reader = (
        target.app("read-write", merchant=owner.merchant)
        or target.app("read", merchant=owner.merchant)
        or (owner if target.reference else None)
    )
    found = target.find(ref, reader) if reader is not None else None
    code = found.get("merchant") if found is not None and found.ok else None
    return code if isinstance(code, str) and code else None
