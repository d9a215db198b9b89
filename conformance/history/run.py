"""The history phase's entry point: ``run_history(target, budget_s)``, once per conformance run.

hypothesis runs the ``HistoryMachine`` (``run_state_machine_as_test``'s own test, seeded from
the run's ``--seed``; no example database, no deadline) on requests through a client of the
phase's own under the run's limits and throttle, every request cut at the phase's budget. The
concurrent histories (``concurrent``: threads at once, judged by the linearizability checker)
run first, within a share of the budget; the sequential ones take the rest.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from conformance.history import concurrent
from conformance.history.machine import HistoryMachine
from conformance.history.session import HISTORIES, STEPS, HistoryResult, Session, world_of
from paysuite_core.driver.http import RecordingClient

if TYPE_CHECKING:
    from paysuite_core.driver.target import Target


def why_not(target: Target) -> str | None:
    """Why no history can run against this configuration, or None."""
    if target.config is None:
        return "no applications configured: pass --config with the target's applications"
    if not any(app.can_cashin() or app.can_cashout() for app in target.apps()):
        return "read-only credentials: a history needs an application that may create"
    customer = target.customer
    if customer is None:
        return "no customer driver configured"
    reason = customer.unavailable_reason()
    if reason:
        return reason
    if customer.driver not in ("sandbox", "command"):
        return (
            f"customer.driver is {customer.driver}: a history needs a driver that answers "
            "for a given ref"
        )
    return None


def run_history(target: Target, budget_s: float, seed: int) -> HistoryResult:
    """Random histories against ``target`` for at most ``budget_s`` seconds."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis import seed as with_seed
    from hypothesis.stateful import get_state_machine_test

    reason = why_not(target)
    if reason is not None:
        return HistoryResult(not_applicable=reason, budget_s=budget_s)
    started = time.monotonic()
    # first, within its share: the concurrent histories (MODEL-007); the sequential ones then
    # take whatever the budget has left (the concurrent part takes about a second on the
    # bundled stub, a few on a target that records events late)
    part = concurrent.run_concurrent(
        target, world_of(target), started + concurrent.budget_share(budget_s)
    )
    client = RecordingClient(
        target.base_url, lambda: None, target.limits, target.throttle, target.tls
    )
    client.masker = target.masker  # what the phase is issued, the run's curls name
    session = Session(target, client, budget_s - (time.monotonic() - started))
    session.result.concurrent = part
    session.result.budget_s = budget_s
    client.check_deadline = session.deadline + 5.0

    class History(HistoryMachine):
        def __init__(self) -> None:
            super().__init__(session)

    test = get_state_machine_test(
        History,
        settings=settings(
            max_examples=HISTORIES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            derandomize=False,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            print_blob=False,
        ),
    )
    try:
        with_seed(seed)(test)()
    except Exception:  # the session kept what failed; hypothesis's own
        pass  # account (a failure, or "flaky" once the budget ended the replay) adds nothing
    finally:
        client.close()
    session.result.duration_s = round(time.monotonic() - started, 3)
    return session.result
