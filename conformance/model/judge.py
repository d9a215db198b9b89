"""The model's one entry point: the states a request's answer allows, or why none.

``judge`` is a pure function of the world, the state, the request, its answer and when it was
sent and answered: the sequential history calls it answer by answer, and ``step_of`` gives the
linearizability checker the same function over its ``Call`` records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from conformance.model import credentials, events, transactions
from conformance.model.records import (
    Act,
    Answer,
    Authorize,
    Create,
    Find,
    ListEvents,
    Refresh,
    Request,
)
from conformance.model.state import State, World
from conformance.model.verdicts import Judged, allow
from paysuite_core.throttle import THROTTLED

if TYPE_CHECKING:
    from conformance.model.linearizability import Call


def judge(
    world: World, state: State, request: Request, answer: Answer, at: float, done: float
) -> Judged:
    """What the document (and, in the reference narrowing, the stub's choices) allows."""
    if answer.status is None:
        return unanswered(world, state, request, at)
    if answer.status == THROTTLED:
        return allow(state)  # the target's rate limit: the request was not taken
    if isinstance(request, Authorize):
        return credentials.authorize(state, request, answer, at)
    if isinstance(request, Refresh):
        return credentials.refresh(world, state, request, answer, at)
    if isinstance(request, Act):
        return transactions.act(world, state, request, answer, done)
    through, problem = credentials.gate(world, state, request.token, answer, at)
    if problem is not None:
        return Judged((state,) if problem.reference else (), problem)
    if through != credentials.THROUGH:
        return allow(state)
    if isinstance(request, Create):
        return transactions.create(world, state, request, answer, done)
    if isinstance(request, Find):
        return transactions.find(world, state, request, answer, done)
    assert isinstance(request, ListEvents)
    return events.list_events(world, state, request, answer, at, done)


def unanswered(world: World, state: State, request: Request, at: float) -> Judged:
    """The state had the request taken effect although no answer came (a time-out, a cut
    connection): a creation's transaction exists, the customer's answer was taken, a refresh
    spent its token. Whether it took effect at all is the linearizability checker's to try
    (it also places the call nowhere); a read changes nothing either way."""
    if isinstance(request, Act):
        return transactions.act(world, state, request, Answer(200), at)
    if isinstance(request, Refresh):
        return credentials.spend(world, state, request)
    if isinstance(request, Authorize):
        return allow(state)  # a pair the history never received is never used
    through, _ = credentials.gate(world, state, request.token, Answer(None), at)
    if through != credentials.THROUGH or not isinstance(request, Create):
        return allow(state)
    return transactions.landed(world, state, request)


def step_of(world: World) -> Callable[[State, Call], Iterable[State]]:
    """The checker's step: the states the model allows after ``call`` (empty: not allowed).
    A reference-only problem still allows the answer: concurrency judges the document. A call
    without an answer is judged as if it took effect (``unanswered``)."""

    def step(state: State, call: Call) -> Iterable[State]:
        judged = judge_call(world, state, call)
        return judged.states if judged.allowed else ()

    return step


def judge_call(world: World, state: State, call: Call) -> Judged:
    """``judge`` over one of the checker's calls (no answer: ``Answer(None)``)."""
    if not isinstance(call.request, Request):
        raise TypeError(f"call {call.index} carries {call.request!r}, not a model request")
    answer = call.answer if isinstance(call.answer, Answer) else Answer(None)
    done = call.completed if call.completed is not None else call.invoked
    return judge(world, state, call.request, answer, call.invoked, done)
