"""Which application of the replay's target sends what a recorded application sent.

In order: ``--map RECORDED=CLIENT_ID``; the same ``client_id`` when the target knows it; else an
application with the same privilege, one merchant's recorded applications going to one merchant's,
so that what the document scopes per merchant keeps its shape. What cannot be mapped is said in
terms of the mapping (application, privilege, the ``--map`` that would settle it), never of URLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from paysuite_core.exchange import Exchange
from paysuite_core.target_config import PRIVILEGES, Application, TargetConfig
from paysuite_core.tokens import token_claims
from paysuite_core.usage import UsageError
from proxy.routes import route_of


class MappingError(UsageError, ValueError):
    """A ``--map`` argument that cannot be used (exit status 2)."""


def authorized(exchanges: Iterable[Exchange]) -> Iterator[tuple[str, Exchange]]:
    """(client_id, exchange) of each accepted authorize, first per client_id (a HAR from another
    tool, or an older one, says nothing else of its applications)."""
    seen: set[str] = set()
    for exchange in exchanges:
        route = route_of(exchange)
        body = exchange.request_json()
        if route is None or route.operation != "authorize" or not isinstance(body, dict):
            continue
        client_id = body.get("client_id")
        if 200 <= exchange.status < 300 and isinstance(client_id, str) and client_id not in seen:
            seen.add(client_id)
            yield client_id, exchange


def recorded_applications(
    exchanges: Iterable[Exchange], config: TargetConfig | None
) -> dict[str, dict[str, str]]:
    """client_id -> {"privilege", "merchant"} of each application a session authorized (in
    clear: the proxy calls this before masking). The configuration's word first; else the
    access token's claims (``perm``, ``merchant``)."""
    known = {app.client_id: app for app in (config.applications if config else ())}
    found: dict[str, dict[str, str]] = {}
    for client_id, exchange in authorized(exchanges):
        answer = exchange.response_json()
        access = answer.get("access") if isinstance(answer, dict) else None
        claims = token_claims(access if isinstance(access, str) else None) or {}
        facts: dict[str, str] = {}
        if isinstance(claims.get("merchant"), str):
            facts["merchant"] = claims["merchant"]
        if client_id in known:
            facts["privilege"] = known[client_id].privilege
            facts.setdefault("merchant", known[client_id].merchant)
        elif claims.get("perm") in PRIVILEGES:
            facts["privilege"] = str(claims["perm"])
        found[client_id] = facts
    return found


def parse_maps(values: Iterable[str]) -> dict[str, str]:
    """``--map RECORDED=CLIENT_ID`` arguments as a dict."""
    maps: dict[str, str] = {}
    for value in values:
        recorded, sep, target = value.partition("=")
        if not sep or not recorded.strip() or not target.strip():
            raise MappingError(f"--map {value!r}: expected RECORDED_CLIENT_ID=CLIENT_ID")
        maps[recorded.strip()] = target.strip()
    return maps


@dataclass
class AppMap:
    """The mapping decided for a replay, and what could not be mapped."""

    apps: dict[str, Application] = field(default_factory=dict)  # recorded client_id -> target's
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per mapped application that changed, for the terminal."""
        return [
            f"application {recorded} -> {app.client_id} ({app.privilege}, merchant {app.merchant})"
            for recorded, app in self.apps.items()
            if recorded != app.client_id
        ]


def map_applications(
    recorded: dict[str, dict[str, str]],
    config: TargetConfig | None,
    explicit: dict[str, str] | None = None,
) -> AppMap:
    """Map each recorded application onto one of ``config``'s (see the module's docstring)."""
    result = AppMap()
    explicit = explicit or {}
    apps = list(config.applications) if config else []
    by_id = {app.client_id: app for app in apps}
    for source, target in explicit.items():
        if target not in by_id:
            result.problems.append(
                f"--map {source}={target}: the configuration has no application {target}"
            )
        else:
            result.apps[source] = by_id[target]
    merchants: dict[str, str] = {}  # recorded merchant -> the configuration's merchant label
    used: set[str] = set()
    for client_id, facts in recorded.items():
        if client_id in result.apps or client_id in explicit:
            continue
        if client_id in by_id:
            result.apps[client_id] = by_id[client_id]
            continue
        app = _by_privilege(apps, facts, merchants, used)
        if app is None:
            result.problems.append(_unmapped(client_id, facts, config))
            continue
        result.apps[client_id] = app
        used.add(app.client_id)
        if facts.get("merchant"):
            merchants.setdefault(facts["merchant"], app.merchant)
    return result


def _by_privilege(
    apps: list[Application], facts: dict[str, str], merchants: dict[str, str], used: set[str]
) -> Application | None:
    privilege, merchant = facts.get("privilege"), facts.get("merchant")
    if privilege is None:
        return apps[0] if len(apps) == 1 else None  # one application: no doubt which
    able = [app for app in apps if app.privilege == privilege]
    if merchant is not None and merchant in merchants:
        able = [app for app in able if app.merchant == merchants[merchant]]
    else:  # a merchant of its own, when the configuration has one left
        taken = set(merchants.values())
        able.sort(key=lambda app: app.merchant in taken)
    able.sort(key=lambda app: app.client_id in used)  # stable: the merchant order holds
    return able[0] if able else None


def _unmapped(client_id: str, facts: dict[str, str], config: TargetConfig | None) -> str:
    if config is None:
        return (
            f"the recording's application {client_id} cannot be mapped: no --config gives the "
            f"target's applications (give --config, and --map {client_id}=CLIENT_ID if needed)"
        )
    if "privilege" not in facts:
        return (
            f"the recording's application {client_id} cannot be mapped: the recording does not "
            f"say its privilege and --config has {len(config.applications)} applications; give "
            f"--map {client_id}=CLIENT_ID"
        )
    merchant = f", merchant {facts['merchant']}" if facts.get("merchant") else ""
    return (
        f"the recording's application {client_id} ({facts['privilege']}{merchant}) cannot be "
        f"mapped: --config has no {facts['privilege']} application"
        + (" of the merchant its other applications map to" if merchant else "")
        + f"; give --map {client_id}=CLIENT_ID"
    )
