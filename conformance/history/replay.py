"""A failing history as a person reads it: the numbered steps, where model and target parted,
what the model allowed, and a bash script of curl commands that replays it.

The shown history is the shortest hypothesis found, cut to its *slice*: the steps that touch
the failing step's transactions, customer numbers and keys (and those steps' own,
transitively), then each earlier step left out while the model still fails the rest. Both cuts
judge the recorded answers again (no request is sent): what is shown is kept only when the
model fails it on its own, at its last step, for the same family of rules, so it is a
counterexample in its own right.

The replay script is ``race_replay.RaceReproduction`` (the reports' reproduction: a variable per
application, fresh keys and numbers, each ref a creation answered read from the replayed answer);
``substitute`` is how it puts a variable where a value stood.
"""

from __future__ import annotations

import re
from dataclasses import replace

from conformance.history.driver import Step, Violation
from conformance.model.judge import judge
from conformance.model.records import Act, Authorize, Create, Find, ListEvents, Refresh
from conformance.model.state import State, World

MAX_SHOWN = 10


def _touches(step: Step) -> set[str]:
    """The refs, numbers and keys a step names (its request and its answer)."""
    request = step.request
    names: set[str] = set()
    if isinstance(request, Create):
        names.update({request.number, *(k for k in [request.key] if k)})
        ref = step.answer.get("ref")
        if isinstance(ref, str):
            names.add(ref)
    elif isinstance(request, (Find, Act)):
        names.add(request.ref)
    elif isinstance(request, ListEvents):
        names.update(value for _, value in request.filters)
        names.update(_listed_refs(step))
    return names


def _listed_refs(step: Step) -> set[str]:
    pages = step.answer.body if isinstance(step.answer.body, list) else [step.answer.body]
    refs: set[str] = set()
    for page in pages:
        items = page.get("transactions") if isinstance(page, dict) else None
        for item in items if isinstance(items, list) else []:
            data = item.get("data") if isinstance(item, dict) else None
            if isinstance(data, dict) and isinstance(data.get("ref"), str):
                refs.add(data["ref"])
    return refs


def slice_of(violation: Violation, world: World) -> list[Step]:
    """The slice of the failing history, when the model fails it alone; else the history."""
    steps = violation.steps
    last = steps[-1]
    wanted = _touches(last)
    kept: list[Step] = [last]
    for step in reversed(steps[:-1]):
        names = _touches(step)
        if isinstance(step.request, (Authorize, Refresh)) or names & wanted:
            kept.append(step)
            if not isinstance(step.request, (Authorize, Refresh)):
                wanted |= names
    kept.reverse()
    family = violation.problem.family
    if not _fails_alone(kept, world, family):
        kept = list(steps)
    return _minimal(kept, world, family)


def _minimal(steps: list[Step], world: World, family: str) -> list[Step]:
    """Each earlier step left out in turn while the model still fails the rest at its last
    step for ``family``: the recorded answers judged again, no request sent."""
    kept = list(steps)
    position = len(kept) - 2
    while position >= 0:
        trial = kept[:position] + kept[position + 1 :]
        if _fails_alone(trial, world, family):
            kept = trial
        position -= 1
    return kept


def _fails_alone(steps: list[Step], world: World, family: str) -> bool:
    state = State()
    for position, step in enumerate(steps):
        judged = judge(world, state, step.request, step.answer, step.at, step.done)
        if not judged.allowed:
            failed = judged.problem
            return position == len(steps) - 1 and failed is not None and failed.family == family
        state = judged.states[0]
    return False


def shown_steps(violation: Violation, world: World) -> list[Step]:
    """The steps a report shows, numbered anew from 1 (authorizations left implicit)."""
    steps = [s for s in slice_of(violation, world) if not isinstance(s.request, Authorize)]
    return [replace(step, index=number) for number, step in enumerate(steps, start=1)]


def account(violation: Violation, world: World) -> str:
    """The failure's text: the problem, the numbered history, the parting step."""
    steps = shown_steps(violation, world)
    lines = [violation.problem.message]
    lines.append(f"history ({len(steps)} steps; the last is where model and target part):")
    if len(steps) > MAX_SHOWN:
        lines.append(f"  ... {len(steps) - MAX_SHOWN} earlier steps in the evidence")
    lines.extend("  " + step.line()[:300] for step in steps[-MAX_SHOWN:])
    lines.append(f"the model allowed: {violation.problem.allowed}")
    return "\n".join(lines)


_VAR = re.compile(r"[^A-Za-z0-9]")


def substitute(command: str, value: str, variable: str) -> str:
    """``value`` replaced by ``variable`` in a shell command, expanded wherever it stands:
    inside a single-quoted word the quote is closed around it."""
    out: list[str] = []
    position = 0
    while (found := command.find(value, position)) >= 0:
        quoted = command.count("'", 0, found) % 2 == 1
        out.append(command[position:found])
        out.append(f"'\"{variable}\"'" if quoted else f'"{variable}"')
        position = found + len(value)
    out.append(command[position:])
    return "".join(out)
