"""Random histories judged by the executable model (MODEL-001..006, MODEL-008), and concurrent
ones judged by the linearizability checker (MODEL-007).

The history phase (``conformance.history``) runs once per session, within its own budget
(``--history-budget``, 30 s by default; 0: not run); each MODEL check reads its family of rules
from that one run: the shortest history that broke one of them, as a numbered list, the step
where the model and the target part, what the model allowed, and a script that replays it.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING

from conformance.checks import check, computed_once, shared_check
from paysuite_core.results.outcome import CheckFailed, CouldNotCheck, not_applicable
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from conformance.history.session import HistoryResult
    from paysuite_core.driver.target import Target

#: ``--history-budget`` when not given: the phase's share of a run. 30 s lets the bundled stub's
#: phase run a few dozen histories, enough that each family of rules meets its random cases.
DEFAULT_HISTORY_BUDGET_S = 30.0
#: run_cache keys: the budget the run gives the phase, and the phase's result.
BUDGET_KEY = "history_budget_s"
RESULT_KEY = "history"
_ONE_RUN = threading.Lock()


def _run(target: Target, cache: dict[str, object]) -> HistoryResult:
    """The history phase, once per session (the first MODEL check pays for all of them)."""
    from conformance.history.run import run_history
    from conformance.history.session import HistoryResult

    budget = cache.get(BUDGET_KEY, DEFAULT_HISTORY_BUDGET_S)
    if not isinstance(budget, int | float) or budget <= 0:
        not_applicable("--history-budget 0: the history phase did not run")
    result = computed_once(
        cache,
        RESULT_KEY,
        _ONE_RUN,
        "the history phase",
        lambda: run_history(target, float(budget), target.seed),
    )
    assert isinstance(result, HistoryResult)
    return result


def _verdict(target: Target, cache: dict[str, object], check_id: str, expected: str) -> None:
    from conformance.history import replay
    from conformance.history.race_replay import RaceReproduction
    from conformance.history.session import world_of
    from paysuite_core.results.evidence import ToolItem

    result = _run(target, cache)
    if result.not_applicable:
        not_applicable(result.not_applicable)
    violation = result.failures.get(check_id)
    world = world_of(target)
    if violation is not None:
        shown = replay.shown_steps(violation, world)
        # the reports' reproduction (a variable per application, fresh keys and numbers), one
        # request after another: a sequential history has no requests in flight together
        made = RaceReproduction(shown)
        error = CheckFailed(
            replay.account(violation, world),
            [exchange for step in shown for exchange in step.exchanges][-10:],
            expected=expected + f"; the model allowed: {violation.problem.allowed}",
            actual=violation.problem.message,
        )
        item = {
            "request": {"history": [step.line()[:500] for step in shown]},
            "response": {"parted at": len(shown), "problem": violation.problem.message},
            "curl": made.render()[0],
        }
        error.extra_evidence = [ToolItem(item, made)]
        raise error
    if check_id == "MODEL-008" and result.reference is not None:
        steps, problem = result.reference
        raise CheckFailed(
            f"{problem.message} (at step {len(steps)} of a history)",
            [exchange for step in steps[-3:] for exchange in step.exchanges],
            expected=problem.allowed,
            actual=problem.message,
        )
    if result.stopped and not result.passed:
        raise CouldNotCheck(f"the history phase stopped before any history ended: {result.stopped}")
    if result.passed == 0:
        raise CouldNotCheck(
            f"no history ran to its end within the budget ({result.budget_s:g} s): "
            "raise --history-budget"
        )
    target.note(
        f"{result.passed} of {result.histories} histories ran to their end "
        f"({result.steps} requests, {result.duration_s:g} s)"
        + (f"; stopped: {result.stopped}" if result.stopped else "")
        + ("; one merchant: isolation not exercised" if result.merchants < 2 else "")
    )


def _concurrent_verdict(target: Target, cache: dict[str, object]) -> None:
    """MODEL-007: the concurrent part of the one history run, judged by the linearizability
    checker (``conformance.history.concurrent``). An undecided search is a note, never a
    failure."""
    from conformance.history import race_replay
    from conformance.history.concurrent import THREADS
    from paysuite_core.results.evidence import ToolItem

    result = _run(target, cache)
    if result.not_applicable:
        not_applicable(result.not_applicable)
    part = result.concurrent
    if part is None:
        raise CouldNotCheck(
            "the concurrent histories did not run: the sequential ones stopped "
            f"({result.stopped or 'the budget ended'})"
        )
    if part.not_applicable:
        not_applicable(part.not_applicable)
    if part.failed and part.problem is not None:
        shown = race_replay.shown_steps(part)
        made = race_replay.reproduction(part)
        error = CheckFailed(
            race_replay.account(part),
            [exchange for step in shown for exchange in step.exchanges][-10:],
            expected="some order of the requests, one at a time, explains every answer; "
            f"the model allowed: {part.problem.allowed}",
            actual=part.problem.message,
        )
        item = {
            "request": {"history": race_replay.lines(part)},
            "response": {
                "no order explains": list(part.verdict.unexplained if part.verdict else ()),
                "problem": part.problem.message,
            },
            "curl": made.render()[0],
        }
        error.extra_evidence = [ToolItem(item, made)]
        raise error
    if part.stopped is not None:
        raise CouldNotCheck(f"the concurrent history stopped: {part.stopped}")
    verdict = part.verdict
    if verdict is None:
        raise CouldNotCheck("the concurrent history sent no request")
    if verdict.budget_exhausted:
        target.note(f"undecided ({verdict.summary()}): not a failure")
        return
    target.note(
        f"{len(part.calls)} requests of {THREADS} threads at once, explained by an order "
        f"({verdict.searched} configurations searched, {part.duration_s:g} s)"
    )


_model_check = partial(shared_check, globals(), _verdict)


_model_check(
    "histories_keep_idempotency",
    "MODEL-001",
    "MUST",
    Section.ERRORS_1,
    "random histories: a key executes once per merchant, on either channel and kind",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
    "every reuse refused and nothing executed for it; keys over 32 characters refused",
)
_model_check(
    "histories_keep_privileges_and_merchants",
    "MODEL-002",
    "MUST",
    Section.AUTHENTICATION_5,
    "random histories: each application does what its privilege names, each merchant sees "
    "only its own",
    "An application has a privilege set: read only, read and write, cashin, or cashout.",
    "no creation by a read-only application, no other merchant's transaction or event",
)
_model_check(
    "histories_keep_the_lifecycle",
    "MODEL-003",
    "MUST",
    Section.STATES,
    "random histories: one pending transaction per creation, as created, processed once the "
    "customer answers",
    "Every transaction starts in the status pending. It stays there until the customer "
    "confirms or cancels.",
    "each creation answered and found as sent, pending, then one terminal status",
)
_model_check(
    "histories_keep_events_and_totals",
    "MODEL-004",
    "MUST",
    Section.EVENTS,
    "random histories: events keep their identity and snapshot; filters, paging and total "
    "agree with what was created",
    "Each stage of a transaction is recorded as an event. Events can be listed with filters.",
    "every event due listed once under each filter, its identity and snapshot kept, the "
    "total counting them",
)
_model_check(
    "histories_hold_over_time",
    "MODEL-005",
    "MUST",
    Section.STATES,
    "random histories: what holds later (a settled status, a pending one, a token's lifetime, "
    "a refresh)",
    "Other transitions, time-outs and failure causes: not shown. Access tokens typically last "
    "15 minutes.",
    "a processed transaction never changes, a pending one waits for the customer, tokens "
    "work until they expire and not after",
)
_model_check(
    "histories_hold_in_other_spellings",
    "MODEL-006",
    "MUST",
    Section.ENDPOINTS,
    "random histories: another spelling (upper-case ref, number with 250, trailing slash) "
    "never reaches what the canonical one is refused",
    "GET {base_url}/transactions/find/{ref}",
    "another spelling refused, or answered as the canonical one is",
)


@check(
    "MODEL-007",
    "MUST",
    Section.ENDPOINTS,
    "concurrent histories: requests sent at once are explained by some order of them (no lost, "
    "doubled or mixed effect)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
)
def histories_hold_under_concurrency(target: Target, run_cache: dict[str, object]) -> None:
    _concurrent_verdict(target, run_cache)


_model_check(
    "histories_follow_the_reference_choices",
    "MODEL-008",
    "SHOULD",
    Section.ENDPOINTS,
    "random histories: the stub's choices hold (200, 409 on reuse, success/failed, keys per "
    "merchant, reads by any privilege, the old access token kept on refresh)",
    "Where the document is silent: docs/reference-choices.md (RC-2, RC-5, RC-6, RC-10, RC-12, "
    "RC-17).",
    "the reference choices",
    profile="reference",
)
