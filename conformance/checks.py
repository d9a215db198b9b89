"""What a check is: its catalog entry (``Check``) and ``@check``, which declares the entry right
above the function that enforces it (docs/conformance.md, *Where each check lives*).

This module imports nothing but the standard library: ``conformance.catalog`` gathers the entries
by importing the section modules, and ``--list`` must not pay for pytest, httpx or schemathesis.
MUST is what the interface document states or plainly implies; SHOULD is a reference choice of
paysuite or good practice. A ``reference`` check judges a choice the document leaves open and
runs only in the reference profile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from paysuite_core.results.rule import Check, Level, Profile

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target

#: The attribute ``@check`` sets on a check function: its ``Check``.
ENTRY_ATTRIBUTE = "conformance_check"


F = TypeVar("F", bound=Callable[..., object])


def check(
    id: str, level: Level, section: str, title: str, quote: str, profile: Profile = "seed"
) -> Callable[[F], F]:
    """Declare the catalog entry that the decorated function implements."""
    entry = Check(id=id, level=level, section=section, title=title, quote=quote, profile=profile)

    def declare(func: F) -> F:
        func.__doc__ = f"{entry.id} [{entry.level}] {entry.title}"
        setattr(func, ENTRY_ATTRIBUTE, entry)
        return func

    return declare


class Findings:
    """What a check found wrong, and the replies that show it: a check reports every problem at
    once, so that fixing the first finding does not merely reveal the next."""

    def __init__(self, problems: Iterable[str] = (), *proof: Reply) -> None:
        self.problems: list[str] = list(problems)
        self.proof: list[Reply] = list(proof)

    def add(self, problem: str, *proof: Reply) -> None:
        self.problems.append(problem)
        self.proof.extend(proof)

    def verdict(
        self,
        expected: str = "",
        *,
        shown: int | None = None,
        prefix: str = "",
        limit: int | None = None,
        actual: Literal["all", "first", "none"] = "all",
    ) -> None:
        """Fail unless nothing was found: the message is ``prefix`` and the first ``limit``
        problems (a long list stays readable), its Actual every problem, the first or none;
        ``shown``: the first replies only."""
        from paysuite_core.results.outcome import fail

        if self.problems:
            found = {"all": "; ".join(self.problems), "first": self.problems[0], "none": ""}
            message = prefix + "; ".join(self.problems[:limit])
            fail(message, *self.proof[:shown], expected=expected, actual=found[actual])


#: A verdict read from one run-wide result: (target, run_cache, check ID, what it demands).
SharedVerdict = Callable[["Target", dict[str, object], str, str], None]


def shared_check(
    namespace: dict[str, object],
    verdict: SharedVerdict,
    name: str,
    id: str,
    level: Level,
    section: str,
    title: str,
    quote: str,
    expected: str,
    profile: Profile = "seed",
) -> None:
    """Declare, as the function ``name`` of the section module whose ``namespace`` is given, a
    check judged by ``verdict`` on one run-wide result (the property run, the history phase):
    such checks differ only in their entry and in what they demand."""

    def judge(target: Target, run_cache: dict[str, object]) -> None:
        verdict(target, run_cache, id, expected)

    judge.__name__ = judge.__qualname__ = name
    judge.__module__ = str(namespace["__name__"])  # collected where it is declared
    namespace[name] = check(id, level, section, title, quote, profile)(judge)


def computed_once(
    cache: dict[str, object],
    key: str,
    lock: threading.Lock,
    what: str,
    compute: Callable[[], object],
) -> object:
    """``cache[key]``, computed by the first caller (the others wait on ``lock``): the run-wide
    result every check of a family reads. An exception of the computation is kept too, and
    raised to each reader as its check's error."""
    with lock:  # checks that run at once (--concurrency) wait for the first one's run
        if key not in cache:
            try:
                cache[key] = compute()
            except Exception as exc:  # reported as the check's error
                cache[key] = exc
    result = cache[key]
    if isinstance(result, Exception):
        raise RuntimeError(f"{what} could not complete: {result}") from result
    return result


#: Checks judged at the end of the run on what they set up when it starts: time passes while
#: every other check runs, not in a wait of their own (a token ages, a transaction is left
#: alone, a spent refresh token outlives the target's housekeeping). Check ID -> its set-up,
#: which keeps what it made in ``target.early[check ID]``; one that fails leaves the check to
#: set up for itself and to say what stops it.
EARLY_SETUPS: dict[str, Callable[[Target], None]] = {}

#: The check that runs last of all: its wait, if any, is shortened by every check before it.
LAST = "AUTH-008"

S = TypeVar("S", bound="Callable[[Target], None]")


def set_up_early(check_id: str) -> Callable[[S], S]:
    """Register the run-start set-up of check ``check_id`` (see ``EARLY_SETUPS``)."""

    def register(func: S) -> S:
        EARLY_SETUPS[check_id] = func
        return func

    return register


def late_order(check_ids: list[str]) -> list[str]:
    """``check_ids`` with the checks set up early moved to the end, ``LAST`` last of all."""
    early = [cid for cid in check_ids if cid in EARLY_SETUPS]
    early.sort(key=lambda cid: cid == LAST)
    return [cid for cid in check_ids if cid not in EARLY_SETUPS] + early


#: Checks that must have the target to themselves while they run, and why. A concurrent run
#: (``--concurrency`` above 1) runs every other check in parallel, each counting only its own
#: traffic (fresh numbers, its own refs and keys); these each run by themselves: ``FIRST``
#: ones before the others (they need no history), the rest once every other check is done.
ALONE: dict[str, str] = {
    "AUTH-018": "it floods authorize with wrong secrets to provoke the rate limit's 429s: the "
    "other checks' authorizes would meet that limit, and their attempts would spend its own",
    "AUTH-019": "AUTH-018's reason: its flood spends the peer's allowance, and the other checks' "
    "attempts meanwhile would spend what its Retry-After promised back",
    "IDEM-006": "its keyless creations must follow one another at the target: a target that "
    "hands out every second ref twice shows it within any three consecutive creations, which "
    "the other checks' creations in between would break up",
    "IDEM-005": "a race: its 16 requests with one key must reach the target together, each "
    "met at the same instant by the others; the other checks' traffic beside it spreads their "
    "arrival, and a target's narrow window between checking a key and recording it is missed",
    "IDEM-013": "the same race through the query key (IDEM-005's reason)",
    "EVT-010": "it reads the merchant's whole list at far offsets and then each far event alone, "
    "telling an event recorded between the two reads apart by a window of three positions: "
    "the other checks' creations meanwhile would shift the list past that window; and it needs "
    "the events of the whole run to page that far",
}
FIRST = frozenset({"AUTH-018", "AUTH-019", "IDEM-006", "IDEM-005", "IDEM-013"})
#: Checks that judge what every other scripted check did, and why: in a concurrent run they
#: run once the other scripted checks are done, beside the checks set up early.
AFTER_OTHERS: dict[str, str] = {
    "FMT-001": "it judges the refs of every creation of the run so far: after the others, it "
    "sees them all, whichever check's creation drew a ref twice",
    "EVT-014": "its fractional amounts stay in the merchant's totals: a target may sum whole "
    "amounts one way and switch for good once a fraction is among them, so the checks that "
    "count (EVT-013's windows) judge the whole amounts' way first",
}


@dataclass(frozen=True)
class Plan:
    """The order of a concurrent run (``concurrent_plan``)."""

    #: each by itself, before the others
    first: list[str]
    #: at once, the checks that share a run-wide result (the property run) among them
    together: list[str]
    #: batches run once ``together``'s other checks are done (each batch at once, one after
    #: the other), while the property run may still go on: it acts on none of their data
    then: list[list[str]]
    #: each by itself once everything else is done
    last: list[str]


def concurrent_plan(check_ids: list[str]) -> Plan:
    """``check_ids`` (in run order, ``late_order``'s) as a concurrent run: the ``ALONE`` checks
    by themselves (``FIRST`` first, the others last), every independent check at once, then
    ``AFTER_OTHERS`` beside the checks set up early, and ``LAST`` after those, as in a run one
    after another (a check set up early is judged once time has passed for it)."""
    special = set(ALONE) | set(AFTER_OTHERS) | set(EARLY_SETUPS)
    late = [cid for cid in check_ids if cid in AFTER_OTHERS or cid in EARLY_SETUPS]
    then = [[cid for cid in late if cid != LAST], [cid for cid in late if cid == LAST]]
    return Plan(
        first=[cid for cid in check_ids if cid in FIRST],
        together=[cid for cid in check_ids if cid not in special],
        then=[batch for batch in then if batch],
        last=[cid for cid in check_ids if cid in ALONE and cid not in FIRST],
    )


def entry_of(obj: object) -> Check | None:
    """The catalog entry ``obj`` implements, if it is a check function."""
    entry = getattr(obj, ENTRY_ATTRIBUTE, None) if callable(obj) else None
    return entry if isinstance(entry, Check) else None
