"""Is a concurrent history explainable by some order of its requests? A linearizability checker.

A few client threads send requests at once; each request is known by when it was sent, when its
answer arrived (if it did) and what that answer was. The target is right when there is one order
of the requests, one at a time, such that

- a request that was answered before another was sent comes before it (real-time order), and
- replaying the requests in that order through a model of the rules gives, at each step, the
  answer the target gave (the model may allow several answers, or several states after one).

A lost update, a doubled effect or two answers that mix two states have no such order, and the
checker then names the longest prefix it could explain and the requests none of whose orders fit
after it. This is Wing and Gong's search with Lowe's memo of configurations, the algorithm Jepsen's
Knossos uses for registers, written over any model: the model is a ``Step`` function, the state
any immutable, hashable value.

Why a search over *configurations*: a configuration is the set of requests placed so far and the
model state they leave. Two different orders of the same requests that leave the same state have
the same future, so each configuration is explored once; for the small histories a test makes
(a few threads, a few dozen requests) that keeps the search polynomial in practice, and a hard
bound (``max_configurations``, optionally a ``deadline``) keeps it bounded whatever the history.

A request without an answer (a time-out, a run cut short) may have taken effect at any moment
after it was sent, or never: the checker tries both, and such a request never holds another back
in real-time order.

Stopping on the bound is not a verdict: ``check`` then returns ``ok=True`` with
``budget_exhausted=True`` and no witness order, so that a caller reports "could not decide"
instead of a false alarm.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["Call", "Step", "Verdict", "check"]

S = TypeVar("S", bound=Hashable)

#: How many configurations are visited between two looks at the clock (a deadline is optional;
#: reading the clock at every configuration would cost more than most model steps).
_CLOCK_EVERY = 256


@dataclass(frozen=True)
class Call:
    """One request of a concurrent history, as the client saw it.

    ``request`` and ``answer`` are opaque to the checker: only the model's step reads them.
    ``completed`` is ``None`` when no answer came (time-out, cut): the request may then have
    taken effect or not, and ``answer`` is ``None``.
    """

    index: int
    thread: int
    invoked: float
    completed: float | None
    request: object
    answer: object


class Step(Protocol[S]):
    """The model: the states it allows after ``call`` from ``state``, given the target's answer.

    Empty means this answer is not allowed here; more than one means the document leaves a
    choice. For a call without an answer the step says what the request would do if it took
    effect; the checker itself tries the other case (it never happened). The step must be pure:
    the checker calls it many times on the same state.
    """

    def __call__(self, state: S, call: Call, /) -> Iterable[S]: ...


@dataclass(frozen=True)
class Verdict:
    """The checker's answer.

    ``ok`` with an ``order``: the history is explained by that order of call indexes (calls
    without an answer that are absent from it never took effect). Not ``ok``: ``explained`` is
    the longest prefix of an order the checker could build (an order of it that the model
    accepts) and ``unexplained`` the answered calls that real-time order allowed next and that
    the model refused in every state that prefix can leave. ``budget_exhausted`` says the search
    stopped on its bound before deciding: ``ok`` is then ``True`` and ``order`` is ``None``; a
    caller must report that as undecided, never as a pass with a witness.
    """

    ok: bool
    order: tuple[int, ...] | None
    explained: tuple[int, ...] = ()
    unexplained: tuple[int, ...] = ()
    searched: int = 0
    budget_exhausted: bool = False

    def summary(self) -> str:
        """One line for a report, e.g. ``after 1, 3, 2 no order explains 4 and 5``."""
        if self.budget_exhausted:
            return f"could not decide: the search stopped after {self.searched} configurations"
        if self.ok and not self.order:
            return "explained with no call placed (only unanswered calls, which need not happen)"
        if self.ok:
            return f"explained by the order {_listed(self.order or ())}"
        if self.explained:
            return (
                f"after {_listed(self.explained)} no order explains "
                f"{_listed(self.unexplained, ' and ')}"
            )
        return f"no order explains {_listed(self.unexplained, ' and ')} from the initial state"


def check(
    initial: Iterable[S],
    calls: Sequence[Call],
    step: Step[S],
    *,
    max_configurations: int = 200_000,
    deadline: float | None = None,
) -> Verdict:
    """Search for an order of ``calls`` that real-time order and the model ``step`` allow.

    ``initial`` holds the states the model may start from (one, usually). The search visits at
    most ``max_configurations`` configurations and, when ``deadline`` (a ``time.monotonic()``
    value) is given, stops soon after it; either bound ends it with ``budget_exhausted=True``.
    The result depends only on the input: candidates are tried in the order the calls were
    sent (then by index) and a step's states in sorted order where they can be sorted, else in
    the order the step gives them. Malformed calls raise ``ValueError``; the step's own
    exceptions propagate (a model bug is not a verdict on the target).
    """
    if max_configurations < 1:
        raise ValueError(f"max_configurations must be at least 1, not {max_configurations}")
    plan = _Plan(calls)
    starts = _ordered(initial)
    if not starts:
        raise ValueError("the model gives no initial state")
    return _Search(plan, step, max_configurations, deadline).run(starts)


def _listed(indexes: Sequence[int], last: str = ", ") -> str:
    """``1, 2 and 3`` (or ``1, 2, 3`` when ``last`` is a comma)."""
    words = [str(i) for i in indexes]
    if len(words) < 2:
        return "".join(words)
    return ", ".join(words[:-1]) + last + words[-1]


def _ordered(states: Iterable[S]) -> list[S]:
    """Distinct ``states`` in a reproducible order: sorted when they compare, else as given.

    A model that returns a set of unorderable states gets the set's iteration order, which for
    strings varies between processes: such a model should return a list for a reproducible
    witness (the verdict itself does not depend on the order).
    """
    distinct = list(dict.fromkeys(states))
    try:
        return sorted(distinct)  # type: ignore[type-var]
    except TypeError:
        return distinct


class _Plan:
    """The calls in the order they were sent, and what real-time order requires of each.

    Positions (bits of a configuration's mask) follow the sending order, so that a call's
    predecessors (answered calls whose answer came before it was sent) only grow along it.
    """

    def __init__(self, calls: Sequence[Call]) -> None:
        _validate(calls)
        self.calls = sorted(calls, key=lambda c: (c.invoked, c.index))
        self.answered = 0
        for position, call in enumerate(self.calls):
            if call.completed is not None:
                self.answered |= 1 << position
        self.before = [self._predecessors(call) for call in self.calls]

    def _predecessors(self, later: Call) -> int:
        mask = 0
        for position, call in enumerate(self.calls):
            if call.completed is not None and call.completed < later.invoked:
                mask |= 1 << position
        return mask

    def candidates(self, mask: int) -> Iterator[int]:
        """Positions that real-time order allows next after the calls of ``mask``."""
        for position in range(len(self.calls)):
            if self.before[position] & ~mask:
                return  # this call and every later-sent one wait for an unplaced answer
            if not mask >> position & 1:
                yield position

    def indexes(self, positions: Iterable[int]) -> tuple[int, ...]:
        return tuple(self.calls[p].index for p in positions)


def _validate(calls: Sequence[Call]) -> None:
    seen: set[int] = set()
    for call in calls:
        if call.index in seen:
            raise ValueError(f"two calls have the index {call.index}")
        seen.add(call.index)
        if not math.isfinite(call.invoked):
            raise ValueError(f"call {call.index}: invoked is {call.invoked}")
        if call.completed is not None and not call.completed >= call.invoked:
            raise ValueError(
                f"call {call.index}: completed {call.completed} is not at or after "
                f"invoked {call.invoked}"
            )


class _BudgetExhausted(Exception):
    """The search reached its bound (configurations or deadline)."""


class _Search(Generic[S]):
    """One depth-first search over configurations (mask of placed calls, model state)."""

    def __init__(self, plan: _Plan, step: Step[S], limit: int, deadline: float | None) -> None:
        self.plan = plan
        self.step = step
        self.limit = limit
        self.deadline = deadline
        self.seen: set[tuple[int, Hashable]] = set()
        #: The furthest configuration reached, by (answered calls placed, calls placed), and
        #: the order that reached it first.
        self.best: tuple[tuple[int, int], tuple[int, ...]] = ((-1, -1), ())

    def run(self, starts: list[S]) -> Verdict:
        try:
            for state in starts:
                order = self._from(state)
                if order is not None:
                    return Verdict(True, self.plan.indexes(order), searched=len(self.seen))
        except _BudgetExhausted:
            return Verdict(True, None, searched=len(self.seen), budget_exhausted=True)
        return self._failure()

    def _visit(self, mask: int, state: S, path: list[int]) -> bool:
        """Record a configuration; False when it was seen before (its future is known)."""
        config = (mask, state)
        if config in self.seen:
            return False
        if len(self.seen) >= self.limit:
            raise _BudgetExhausted
        if (
            self.deadline is not None
            and len(self.seen) % _CLOCK_EVERY == 0
            and time.monotonic() >= self.deadline
        ):
            raise _BudgetExhausted
        self.seen.add(config)
        key = ((mask & self.plan.answered).bit_count(), mask.bit_count())
        if key > self.best[0]:
            self.best = (key, tuple(path))
        return True

    def _successors(self, mask: int, state: S) -> Iterator[tuple[int, S]]:
        for position in self.plan.candidates(mask):
            for after in _ordered(self.step(state, self.plan.calls[position])):
                yield position, after

    def _from(self, state: S) -> list[int] | None:
        """An order of positions that explains every answered call, starting from ``state``."""
        path: list[int] = []
        if not self._visit(0, state, path):
            return None
        if not self.plan.answered:
            return path
        stack = [(0, self._successors(0, state))]
        while stack:
            mask, successors = stack[-1]
            following = next(successors, None)
            if following is None:
                stack.pop()
                if path:
                    path.pop()
                continue
            position, after = following
            placed = mask | 1 << position
            path.append(position)
            if not self._visit(placed, after, path):
                path.pop()
                continue
            if placed & self.plan.answered == self.plan.answered:
                return path
            stack.append((placed, self._successors(placed, after)))
        return None

    def _failure(self) -> Verdict:
        """No order: the furthest prefix, and the answered calls that could not follow it.

        At the furthest configuration every call real-time order allows next was refused by the
        model (one it accepted would have reached further), so those calls are the frontier.
        """
        prefix = self.best[1]
        mask = 0
        for position in prefix:
            mask |= 1 << position
        frontier = [p for p in self.plan.candidates(mask) if self.plan.answered >> p & 1]
        return Verdict(
            False,
            None,
            explained=self.plan.indexes(prefix),
            unexplained=self.plan.indexes(frontier),
            searched=len(self.seen),
        )
