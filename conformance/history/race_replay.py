"""A concurrent history that no order explains, as a person reads it: the requests involved as
a numbered list (thread, when each was sent and answered, request, answer), and a bash script
that sends the racing ones at once again (``curl ... & curl ... & wait``).

The shown requests are those no order explains, the requests in flight with them, and every
earlier request that names one of their refs, customer numbers or keys (the history that leads
there);
the customer's token pairs are left implicit. The script follows the sequential replay's rules
(``replay``): each key becomes a fresh one, each ref a creation answered the ref the replayed
creation is answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.history.driver import Step
from conformance.history.replay import _touches, substitute
from conformance.model.records import Authorize, Create

if TYPE_CHECKING:
    from conformance.history.concurrent import ConcurrentResult

MAX_SHOWN = 14
_REF_OF = 'python3 -c \'import json,sys;print(json.load(sys.stdin).get("ref",""))\''


def _overlap(one: Step, other: Step) -> bool:
    return one.at <= other.done and other.at <= one.done


def shown_steps(result: ConcurrentResult) -> list[Step]:
    """The steps a report shows, in the order they were sent (indexes as recorded)."""
    verdict = result.verdict
    if verdict is None:
        return []
    steps = [s for s in result.steps if not isinstance(s.request, Authorize)]
    frontier = [s for s in steps if s.index in set(verdict.unexplained)]
    names: set[str] = set()
    for step in frontier:
        names |= _touches(step)
    if not frontier:
        return []
    last = max(f.done for f in frontier)  # what came after the parting cannot explain it
    kept = [
        s
        for s in steps
        if s in frontier
        or any(_overlap(s, f) for f in frontier)
        or (s.at <= last and _touches(s) & names)
    ]
    return sorted(kept, key=lambda s: (s.at, s.index))


def _line(step: Step, start: float, unexplained: set[int]) -> str:
    sent = f"{(step.at - start) * 1000:.1f}"
    answered = "no answer" if step.answer.status is None else f"{(step.done - start) * 1000:.1f}"
    what = step.line().split(". ", 1)[1]
    mark = "  <- no order explains it" if step.index in unexplained else ""
    return f"{step.index}. thread {step.thread}, sent {sent} ms, answered {answered}: {what}{mark}"


def lines(result: ConcurrentResult) -> list[str]:
    """The numbered list (offsets in ms from the concurrent history's first request)."""
    steps = shown_steps(result)
    if not steps or result.verdict is None:
        return []
    start = min(s.at for s in result.steps)
    unexplained = set(result.verdict.unexplained)
    return [_line(step, start, unexplained)[:400] for step in steps]


def account(result: ConcurrentResult) -> str:
    """The failure's text: the problem, the checker's summary, the requests, what was allowed."""
    problem, verdict = result.problem, result.verdict
    assert problem is not None and verdict is not None
    shown = lines(result)
    out = [problem.message, f"the concurrent history ({len(result.calls)} requests): "]
    out[-1] += verdict.summary()
    out.append("the requests involved (thread; sent and answered, ms from the history's start):")
    if len(shown) > MAX_SHOWN:
        out.append(f"  ... {len(shown) - MAX_SHOWN} earlier in the evidence")
    out.extend("  " + line for line in shown[-MAX_SHOWN:])
    out.append(f"the model allowed: {problem.allowed}")
    return "\n".join(out)


def _answered_refs(steps: list[Step]) -> set[str]:
    refs = {s.answer.get("ref") for s in steps if isinstance(s.request, Create) and s.answer.ok}
    return {ref for ref in refs if isinstance(ref, str)}


def _groups(steps: list[Step]) -> list[list[Step]]:
    """Runs of steps in flight together (each overlaps the run so far), in sending order; a
    step that names a ref its run's creations answered starts the next run (the script knows
    that ref once the run is over)."""
    groups: list[list[Step]] = []
    until = float("-inf")
    for step in steps:
        if groups and step.at <= until and not _touches(step) & _answered_refs(groups[-1]):
            groups[-1].append(step)
        else:
            groups.append([step])
            until = float("-inf")
        until = max(until, step.done if step.answer.status is not None else step.at)
    return groups


class _Script:
    """The script being written: its lines and the keys and refs it substitutes."""

    def __init__(self, exports: list[str]) -> None:
        self.out = ["#!/usr/bin/env bash", "# replays the racing requests; fill the exports first"]
        self.out.extend(exports)
        self.keys: dict[str, str] = {}
        self.refs: dict[str, str] = {}

    def command(self, step: Step) -> str | None:
        if not step.exchanges:
            return None
        command = step.exchanges[-1].curl()
        for key, name in self.keys.items():
            command = substitute(command, key, "${" + name + "}")
        for ref, name in self.refs.items():
            command = substitute(command, ref, "${" + name + "}")
            command = substitute(command, ref.upper(), "${" + name + "^^}")
        return command

    def new_ref(self, step: Step) -> str | None:
        """The variable for the ref this creation answered, or None."""
        ref = step.answer.get("ref")
        if isinstance(step.request, Create) and step.answer.ok and isinstance(ref, str):
            name = f"REF{len(self.refs) + 1}"
            self.refs[ref] = name
            return name
        return None

    def one(self, step: Step) -> None:
        command = self.command(step)
        self.out.append(f"# {step.line()[:200]}")
        if command is None:
            self.out.append("# (sent by the customer driver: play it as the driver does)")
            return
        name = self.new_ref(step)
        if name is None:
            self.out.extend([command, "echo"])
            return
        quiet = command.replace("curl -sS -i ", "curl -sS ", 1)
        self.out.extend([f"{name}=$({quiet} | {_REF_OF})", f'echo "{name}=${name}"'])

    def race(self, steps: list[Step]) -> None:
        self.out.append(f"# at once: {', '.join(str(s.index) for s in steps)}")
        after: list[str] = []
        for step in steps:
            command = self.command(step)
            self.out.append(f"# {step.line()[:200]}")
            if command is None:
                self.out.append("# (sent by the customer driver: play it as the driver does)")
                continue
            file = f'"$OUT/{step.index}"'
            if isinstance(step.request, Create) and step.answer.ok:
                command = command.replace("curl -sS -i ", "curl -sS ", 1)
            self.out.append(f"{command} > {file} &")
            name = self.new_ref(step)
            if name is None:
                after.extend([f"cat {file}", "echo"])
            else:
                after.extend([f"{name}=$({_REF_OF} < {file})", f'echo "{name}=${name}"'])
        self.out.append("wait")
        self.out.extend(after)


def script(result: ConcurrentResult, exports: list[str]) -> str:
    """A bash script that sends the shown requests again, the racing ones at once."""
    steps = shown_steps(result)
    writer = _Script(exports)
    for step in steps:
        request = step.request
        if isinstance(request, Create) and request.key and request.key not in writer.keys:
            name = f"KEY{len(writer.keys) + 1}"
            writer.keys[request.key] = name
            suffix = "x" if len(request.key) > 32 else ""
            writer.out.append(f"{name}=$(python3 -c 'import uuid;print(uuid.uuid4().hex)'){suffix}")
    writer.out.append("OUT=$(mktemp -d)")
    for group in _groups(steps):
        if len(group) == 1:
            writer.one(group[0])
        else:
            writer.race(group)
    return "\n".join(writer.out)
