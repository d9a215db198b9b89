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

if TYPE_CHECKING:
    from conformance.model.linearizability import Call


def judge(
    world: World, state: State, request: Request, answer: Answer, at: float, done: float
) -> Judged:
    """What the document (and, in the reference narrowing, the stub's choices) allows."""
    if answer.status is None:
        return allow(state)  # no answer: the request may or may not have taken effect
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


def step_of(world: World) -> Callable[[State, Call], Iterable[State]]:
    """The checker's step: the states the model allows after ``call`` (empty: not allowed).
    A reference-only problem still allows the answer: concurrency judges the document."""

    def step(state: State, call: Call) -> Iterable[State]:
        answer = call.answer if isinstance(call.answer, Answer) else Answer(None)
        done = call.completed if call.completed is not None else call.invoked
        judged = judge(world, state, call.request, answer, call.invoked, done)
        return judged.states if judged.allowed else ()

    return step
