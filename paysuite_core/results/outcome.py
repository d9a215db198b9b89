"""How a check ends other than by passing: the rule was broken, the rule could not be judged, or
the rule does not apply to this target.

The difference is the point of the suite. ``CheckFailed`` says the target broke the rule the
check names; ``CouldNotCheck`` says something the check needed first (an authorize, a creation
to look at, the customer's confirm) did not work, so the check has no verdict on its own rule.
Reporting the second as a failure would send a reader to the wrong rule: a sandbox confirm that
answered 404 is not a lifecycle that stays pending.

Both carry the exchanges that prove them and, where the check knows them, h2spec's Expected and
Actual. ``NotApplicable`` says the target's configuration gives the check nothing to judge with (no
cashout application, no customer driver): the check is skipped with that reason. The checks
raise it rather than ``pytest.skip`` so that they, and the catalog that imports them, do not
need pytest; the plugin turns it into a pytest skip.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from paysuite_core.results.evidence import Recorded


class Answered(Protocol):
    """An answer that keeps its exchange (``paysuite_core.driver.http.Reply`` is one): proof of
    a check's outcome, named by shape so that the results stand below the client."""

    @property
    def exchange(self) -> Recorded: ...


#: What a check may give as proof: an answer, a recorded exchange, or nothing (no answer).
Proof = Answered | Recorded | None


def exchanges_of(items: Iterable[object]) -> list[Recorded]:
    """The ``Recorded`` of each reply or exchange among ``items`` (anything else is dropped)."""
    out: list[Recorded] = []
    for item in items:
        if isinstance(item, Recorded):
            out.append(item)
        else:
            exchange = getattr(item, "exchange", None)
            if isinstance(exchange, Recorded):
                out.append(exchange)
    return out


class CheckFailed(AssertionError):
    """The target broke the rule the check names; ``proof`` holds the exchanges that show it."""

    def __init__(
        self,
        message: str,
        proof: list[Recorded] | None = None,
        *,
        expected: str = "",
        actual: str = "",
    ) -> None:
        super().__init__(message)
        self.proof = proof or []
        self.expected = expected
        self.actual = actual
        self.extra_evidence: list[dict[str, Any]] = []


class CouldNotCheck(Exception):
    """A precondition of the check failed: the check is an ``error``, not a failed rule."""

    def __init__(self, message: str, proof: list[Recorded] | None = None) -> None:
        super().__init__(message)
        self.proof = proof or []


def precondition(condition: object, message: str, *proof: Proof) -> None:
    """Stop the check as an ``error`` ("could not check: ...") unless ``condition`` holds.

    A 401 among the proof was not expected (the suite authorized just before): its error
    ``code`` goes into the message, so that "refused (401)" says whether the token had expired
    (``token_expired``: a lifetime too short for the run) or was refused for another reason."""
    if not condition:
        raise CouldNotCheck(message + refused_codes(proof), exchanges_of(proof))


def refused_codes(proof: Iterable[object]) -> str:
    """``" (401 code: token_expired)"`` for the 401 answers among ``proof`` whose JSON body
    says a ``code``; "" when there is none."""
    codes: list[str] = []
    for reply in proof:
        if getattr(reply, "status", None) != 401 or not hasattr(reply, "get"):
            continue
        code = reply.get("code")
        if isinstance(code, str) and code and code not in codes:
            codes.append(code[:60])
    return f" (401 code: {', '.join(codes)})" if codes else ""


#: A traceback kept in the reports is cut here (a recursion's would run to megabytes).
TRACEBACK_CHARS = 20_000


@dataclass(frozen=True)
class EngineError:
    """An exception inside paysuite (a check's own code, a hook, the property engine), not an
    answer of the target: an error of the run, kept with its traceback for the reports, and
    never part of a check's failure message (it says nothing about the target's rules)."""

    where: str  # the check, or the property run's operation, during which it was raised
    message: str  # ``TypeError: unhashable type: 'list'``
    traceback: str

    def line(self) -> str:
        """The run error's one line (the traceback is in report.html and conformance.json)."""
        return (
            f"paysuite's own error (not the target's) during {self.where}: {self.message} "
            "(its traceback: report.html, conformance.json engine_errors)"
        )

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "message": self.message, "traceback": self.traceback}


def engine_error(where: str, exc: BaseException) -> EngineError:
    """``exc`` as an ``EngineError``, its traceback (causes included) formatted now."""
    text = "".join(traceback.format_exception(exc))
    if len(text) > TRACEBACK_CHARS:
        text = text[: TRACEBACK_CHARS // 2] + "\n...\n" + text[-TRACEBACK_CHARS // 2 :]
    message = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    return EngineError(where, message, text)


class NotApplicable(Exception):
    """The check does not apply to this target (what it needs is not configured): skipped."""


def not_applicable(reason: str) -> NoReturn:
    """Skip the running check with ``reason`` ("no cashout application configured")."""
    __tracebackhide__ = True  # pytest reports the skip at the check's line, not here
    raise NotApplicable(reason)


def expect(
    condition: object,
    message: str,
    *proof: Proof,
    expected: str = "",
    actual: str = "",
) -> None:
    """Fail the check with ``message`` and the given exchanges unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(message, exchanges_of(proof), expected=expected, actual=actual)


def fail(message: str, *proof: Proof, expected: str = "", actual: str = "") -> NoReturn:
    raise CheckFailed(message, exchanges_of(proof), expected=expected, actual=actual)
