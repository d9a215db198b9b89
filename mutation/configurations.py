"""The configurations a mutant is judged in: each one the self-tests already use to reach a path
of the stub that the default stub never takes.

Why more than one: a rule that only runs when the stub resolves transactions by itself, delivers
webhooks or renders a variant's field is invisible to a conform run against the default stub,
so a mutant there "survives" without any check having had a chance to see it. A mutant is killed
when any configuration kills it; they run cheapest and most telling first, and the ladder stops
at the first kill (``judge.py``).

Every configuration runs ``paysuite conform`` from the worker's copy of the tree, against a
stub started from that copy: the mutant is in both the stub that is judged and nowhere else
(the suite does not import the stub).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The stub's own customer, as test_drivers.py's magic-number test gives it: numbers ending in
#: 1111 are confirmed, 0000 cancelled, after 0.3 s; every other number waits for nobody.
MAGIC_NUMBERS: Mapping[str, Any] = {
    "default": {"outcome": "none"},
    "rules": [
        {"number_suffix": "1111", "outcome": "success", "delay_s": 0.3},
        {"number_suffix": "0000", "outcome": "failed", "delay_s": 0.3},
    ],
}
MAGIC_CUSTOMER: Mapping[str, Any] = {
    "driver": "magic-numbers",
    "confirm_number": "0781111111",
    "cancel_number": "0780000000",
    "timeout_s": 10,
}
#: Numbers at the stub's length cap (64 characters; the default pattern is Rwanda's 10 digits).
LONG_NUMBERS = "^07[0-9]{62}$"
#: A client_id refilled at one attempt every 5 s, and no waiting room for secret checks.
SLOW_LIMITS: Mapping[str, Any] = {"per_client": {"burst": 2, "per_s": 0.2}, "hash_queue": 0}
#: Deliveries retried quickly (tests/webhookstub.py's policy): a lost delivery shows in seconds.
FAST_RETRY: Mapping[str, Any] = {"base_s": 0.1, "cap_s": 0.4, "max_attempts": 10, "timeout_s": 3}


@dataclass(frozen=True)
class Configuration:
    """One way to run the stub and the suite against it.

    ``own_stub``: False lets conform start the bundled stub itself (the default stub, exactly
    what a user's ``paysuite conform`` judges); True starts it here with ``stub_config``,
    ``variants`` and ``stub_args`` and hands conform a target configuration.
    """

    name: str
    reaches: str
    conform_args: tuple[str, ...]
    own_stub: bool = False
    stub_config: Mapping[str, Any] = field(default_factory=dict)
    variants: tuple[str, ...] = ()
    stub_args: tuple[str, ...] = ()
    customer: Mapping[str, Any] | None = None
    webhooks: bool = False


REFERENCE = ("--profile", "reference", "--strict")
NOT_PROPERTIES = "AUTH,TXN,IDEM,FIND,EVT,LIFE,FMT,ERR,PRIV"
#: Bounds of one conform run: a mutant that hangs the stub is noticed, not waited for.
BOUNDS = ("--check-timeout", "60s", "--max-duration", "150s")


def every_variant() -> tuple[str, ...]:
    """Every variant: the simple ones and the bundles (``live``, ``lenient``), which also switch
    on behaviours no simple variant has (nanosecond timestamps, omitted empty envelope keys,
    lenient filters, a page of 10, ...)."""
    from stub_server.fault_catalog import VARIANTS

    return tuple(VARIANTS)


def ladder() -> tuple[Configuration, ...]:
    return (
        Configuration(
            "default",
            "the bundled stub as `paysuite conform` starts it: every check but the history phase",
            (*REFERENCE, "--history-budget", "0", *BOUNDS),
        ),
        Configuration(
            "history",
            "the same stub, judged by the model over random histories (MODEL-001..008)",
            (*REFERENCE, "--only", "MODEL", "--history-budget", "10", *BOUNDS),
        ),
        Configuration(
            "resolving-and-delivering",
            "auto-resolution rules (settings `auto_resolve`: the stub's own customer confirms and "
            "cancels by number, with a delay) and a `webhooks` section (events delivered, signed, "
            "retried): the lifecycle, its events and their deliveries judged",
            (*REFERENCE, "--only", "LIFE,EVT,FMT,TXN,WEBHOOK", "--history-budget", "0", *BOUNDS),
            own_stub=True,
            stub_config={"auto_resolve": dict(MAGIC_NUMBERS), "webhook_retry": dict(FAST_RETRY)},
            customer=MAGIC_CUSTOMER,
            webhooks=True,
        ),
        Configuration(
            "other-settings",
            "settings the default leaves alone: numbers of 64 characters (`number_pattern`), "
            "authorize attempts refilled slowly and no queue for secret checks "
            "(`authorize_limits`), an amount maximum past 2**63 (`amount`): creations and finds "
            "with such numbers, amounts at a 64-bit integer's edge, authorize and a slow "
            "limit's Retry-After judged, one check at a time (a queue of none serves one check "
            "at once)",
            (
                *REFERENCE,
                "--only",
                "TXN,FIND,AUTH-001,AUTH-019",
                "--concurrency",
                "1",
                "--history-budget",
                "0",
                *BOUNDS,
            ),
            own_stub=True,
            stub_config={
                "number_pattern": LONG_NUMBERS,
                "authorize_limits": dict(SLOW_LIMITS),
                "amount": {"min": 100, "max": 10**20},  # 2**63 meets the store's own limit
            },
        ),
        Configuration(
            "all-variants",
            "every variant at once, the `live` and `lenient` bundles included (other status "
            "words, 201, nanosecond timestamps, omitted empty keys, lenient filters, a page of "
            "10, ...): the seed profile, which each variant passes, judges what they render "
            "(every group but the property tests, which the default stub's run already has)",
            ("--strict", "--only", NOT_PROPERTIES, "--history-budget", "0", *BOUNDS),
            own_stub=True,
            variants=every_variant(),
            stub_args=("--access-ttl", "2"),
        ),
        Configuration(
            "revoke-on-refresh",
            "the `revoke-on-refresh` variant with access tokens of 4 s and refresh tokens of 1 s: "
            "a spent refresh token's record must revoke its pair's access token until that "
            "expires, past the refresh token's own expiry (AUTH-020 watches it), and refresh "
            "rotation with tokens that expire during the run",
            (*REFERENCE, "--only", "AUTH-009,AUTH-012,AUTH-020", "--history-budget", "0", *BOUNDS),
            own_stub=True,
            variants=("revoke-on-refresh",),
            stub_args=("--access-ttl", "4", "--refresh-ttl", "1"),
        ),
        Configuration(
            "default-retries",
            "a `webhooks` section and no `webhook_retry`: the stub's own retry schedule, RC-40's "
            "1 s doubling, judged by WEBHOOK-012 (every other configuration that delivers sets "
            "fast retries and declares them)",
            (*REFERENCE, "--only", "WEBHOOK-012", "--history-budget", "0", *BOUNDS),
            own_stub=True,
            webhooks=True,
        ),
    )


def by_name(name: str) -> Configuration:
    for configuration in ladder():
        if configuration.name == name:
            return configuration
    raise KeyError(name)
