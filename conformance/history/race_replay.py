"""A concurrent history that no order explains, as a person reads it: the requests involved as
a numbered list (thread, when each was sent and answered, request, answer), and a bash script
that sends the racing ones at once again (``curl ... & curl ... & wait``).

The shown requests are those no order explains, the requests in flight with them, and every
earlier request that names one of their refs, customer numbers or keys (the history that leads
there);
the customer's token pairs are left implicit. The script is the reports' reproduction
(``evidence.Reproduction``: each application's token by variable, fresh keys and numbers) with
the sequential replay's ref rule (``replay``): each ref a creation answered becomes the ref the
replayed creation is answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.history.driver import Step
from conformance.history.replay import _touches, substitute
from conformance.model.records import Authorize, Create
from paysuite_core.results.evidence import Reproduction

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
    """The script being written: its lines, each step's rendered curl, the refs it names."""

    def __init__(self, head: list[str], curls: dict[int, str]) -> None:
        self.out = [*head, "OUT=$(mktemp -d)  # each racing answer, read once the run is over"]
        self.curls = curls
        self.refs: dict[str, str] = {}

    def command(self, step: Step) -> str | None:
        command = self.curls.get(step.index)
        if command is None:
            return None
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


class RaceReproduction(Reproduction):
    """The shown requests as the reports' reproduction (``evidence.Reproduction``: the run's
    variables per application, fresh keys and numbers), each run of requests that were in
    flight together sent at once, each ref a creation answered read from the replayed answer."""

    def __init__(self, steps: list[Step]) -> None:
        self.shown = [step for step in steps if step.exchanges]
        super().__init__([step.exchanges[-1] for step in self.shown])
        self.all = steps

    def render(self, reveal: bool = False) -> tuple[str, dict[str, str]]:
        text, needs = super().render(reveal)
        lines = text.split("\n")
        count = len(self.shown)
        if count == 0 or len(lines) < count:
            return text, needs  # a curl of several lines: the plain reproduction
        head, curls = lines[:-count], lines[-count:]
        writer = _Script(head, {s.index: c for s, c in zip(self.shown, curls, strict=True)})
        for group in _groups(self.all):
            if len(group) == 1:
                writer.one(group[0])
            else:
                writer.race(group)
        return "\n".join(writer.out), needs


def reproduction(result: ConcurrentResult) -> RaceReproduction:
    """The reproduction of the shown requests (the racing ones at once)."""
    return RaceReproduction(shown_steps(result))


def script(result: ConcurrentResult) -> str:
    """A bash script (safe: credentials by variable) that sends the shown requests again."""
    return reproduction(result).render()[0]
