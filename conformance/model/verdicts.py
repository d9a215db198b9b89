"""The model's answer to one request: the states it allows next, or the problem that none is.

``Judged.states`` empty means the answer is not allowed; a ``Problem`` says why. A problem that
only the reference choices raise (``Problem.reference``) keeps the states: the document allows
the answer, the stub's choices do not, and the history goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.model.records import Problem
from conformance.model.state import State


@dataclass(frozen=True)
class Judged:
    states: tuple[State, ...]
    problem: Problem | None = None

    @property
    def allowed(self) -> bool:
        return self.problem is None or self.problem.reference


def allow(state: State) -> Judged:
    return Judged((state,))


def forbid(family: str, message: str, allowed: str) -> Judged:
    return Judged((), Problem(family, message, allowed))


def note_reference(state: State, message: str, allowed: str) -> Judged:
    """The document allows it; the reference choices do not (the history goes on)."""
    from conformance.model.records import REFERENCE

    return Judged((state,), Problem(REFERENCE, message, allowed, reference=True))
