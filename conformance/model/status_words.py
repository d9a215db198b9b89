"""A transaction's status over time: pending until the customer acts, then one terminal state
that never changes (the words are the target's own: ``success`` and ``successful`` are one)."""

from __future__ import annotations

from dataclasses import replace

from conformance.model.records import LIFECYCLE, OVER_TIME, Problem
from conformance.model.state import Txn, World
from paysuite_core.driver.api import same_outcome

PENDING = "pending"


def terminal_cause(world: World, txn: Txn, done: float) -> str | None:
    """Why ``txn`` may be terminal by ``done``: the customer acted, or the declared pending
    time-out passed; None when the document keeps it pending."""
    if txn.asked:
        return "the customer's " + " and ".join(outcome for outcome, _ in txn.asked)
    timeout = world.pending_timeout_s
    if timeout is not None and done - txn.created >= timeout - world.skew_s:
        return f"the declared pending time-out ({timeout:g} s)"
    return None


def read_status(
    world: World, txn: Txn, word: object, done: float, where: str
) -> tuple[Txn, Problem | None]:
    """``txn`` once ``word`` was read for it (by find or in a processed event) at ``done``."""
    if not isinstance(word, str) or not word:
        allowed = "pending" if txn.pending else repr(txn.word)
        return txn, Problem(LIFECYCLE, f"{where} carries status {word!r}", allowed)
    if word == PENDING:
        if txn.pending:
            return txn, None
        return txn, Problem(
            OVER_TIME,
            f"{where} reads pending after the transaction read {txn.word!r}",
            f"{txn.word!r}: a processed transaction never changes",
        )
    if not txn.pending:
        if same_outcome(txn.word, word):
            return txn, None
        return txn, Problem(
            OVER_TIME,
            f"{where} reads {word!r} after the transaction read {txn.word!r}",
            f"{txn.word!r}: a processed transaction never changes",
        )
    if terminal_cause(world, txn, done) is None:
        return txn, Problem(
            OVER_TIME,
            f"{where} reads {word!r} although the customer never acted",
            "pending: it stays there until the customer confirms or cancels",
        )
    return replace(txn, word=word, settled=done), None


def reference_word(txn: Txn, word: str) -> str | None:
    """The reference choice RC-17: confirm reads success, cancel and the time-out failed;
    None when ``word`` is what it chose (or the customer's two answers leave it open)."""
    outcomes = {outcome for outcome, _ in txn.asked}
    if outcomes == {"confirm"} and word != "success":
        return "success"
    if outcomes <= {"cancel"} and word != "failed":
        return "failed"
    return None
