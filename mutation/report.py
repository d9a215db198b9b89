"""The mutation score in markdown: the summary (the score with its interval, the kills per
configuration, a table per module), every survivor with its classification, then the earlier
survivors that a check added for them killed.

    python mutation/report.py                     # the session in mutation/results/
    python mutation/report.py --out mutation/results/score.md --docs docs/conformance.md

The counts come from cosmic-ray's session (``mutation/results/session.sqlite``), restricted to
the recorded draw (``sample.json``) when the run was sampled: mutants, run, killed (some
configuration's conform run exited != 0; ``judge.py`` names which), timeout, survived,
incompetent, pending.

Each survivor is shown as ``file:line``, the operator and cosmic-ray's diff, with its
classification from ``mutation/classification.toml``: a table per mutant, keyed
``"path:operator:occurrence"`` (cosmic-ray's identity of a mutant, stable while the file does
not change), with ``class`` (``equivalent``, ``unreached``, ``not-observable``, ``observable``,
``command-line``, ``hardening``, ``killed-by-check``) and ``why``. An unclassified survivor
says so. The same mutation (operator and replacement) at the same line must have the same
class: the report refuses (exit 1) a classification that says otherwise.

``--docs FILE`` writes the summary between the ``<!-- mutation-score:begin -->`` and
``<!-- mutation-score:end -->`` markers of FILE, so the documentation shows the same generated
text as ``score.md`` and never a copy pasted by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SESSION = HERE / "results" / "session.sqlite"
CLASSIFICATION = HERE / "classification.toml"
SAMPLE = HERE / "results" / "sample.json"
BEGIN, END = "<!-- mutation-score:begin -->", "<!-- mutation-score:end -->"
CLASSES = {
    "equivalent": "equivalent mutant",
    "unreached": "unreached: only a fault switch reaches this code",
    "command-line": "the stub's command line only: no request reaches this code",
    "hardening": "server hardening: code that only protects the stub itself",
    "not-observable": "not observable through the document's API",
    "observable": "observable: a check could kill it",
    "killed-by-check": "killed by a check added since",
}


@dataclass
class Mutant:
    path: str
    line: int
    operator: str
    occurrence: int
    outcome: str  # killed | no-verdict | timeout | survived | incompetent | skipped | pending
    diff: str
    configuration: str = ""  # the configuration that killed it (judge.py's last line)

    @property
    def key(self) -> str:
        return f"{self.path}:{self.operator}:{self.occurrence}"

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def outcome_of(result: Any) -> str:
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    if result is None:
        return "pending"
    if result.worker_outcome == WorkerOutcome.SKIPPED:
        return "skipped"
    if result.test_outcome == TestOutcome.SURVIVED:
        return "survived"
    if result.test_outcome == TestOutcome.KILLED:
        if result.output == "timeout":
            return "timeout"
        # no failed check, but no verdict either (exit 2: the stub did not start, a check
        # errored): noticed, yet worth a look, since a busy machine can cause it too
        return "killed" if "VERDICT: FAIL" in (result.output or "") else "no-verdict"
    return "incompetent"


def killed_in(output: str) -> str:
    found = re.search(r"^MUTANT: killed in (\S+)", output, re.MULTILINE)
    return found.group(1) if found else ""


def load_sample(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    sample: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return sample


def load(session: Path) -> list[Mutant]:
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(session), WorkDB.Mode.open) as db:
        results = {item.job_id: result for item, result in db.completed_work_items}
        items = db.work_items
    mutants = []
    for item in items:
        mutation = item.mutations[0]
        result = results.get(item.job_id)
        mutants.append(
            Mutant(
                path=str(mutation.module_path),
                line=int(mutation.start_pos[0]),
                operator=mutation.operator_name.removeprefix("core/"),
                occurrence=int(mutation.occurrence),
                outcome=outcome_of(result),
                diff=(result.diff or "") if result is not None else "",
                configuration=killed_in((result.output or "") if result is not None else ""),
            )
        )
    mutants.sort(key=lambda m: (m.path, m.line, m.operator, m.occurrence))
    return mutants


def load_classification(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    return {str(key): dict(value) for key, value in data.get("mutant", {}).items()}


KILLED = ("killed", "no-verdict", "timeout")
#: Survivors that are not in the score's denominator: no suite could kill them through the API
#: (an equivalent mutant is no bug; unreached code runs only under a fault; command-line code only
#: for the stub's operator, whose command line the scope leaves out; hardening code only protects
#: the stub itself, which the scope leaves out too: mutation/README.md names each part).
NOT_COUNTED = ("equivalent", "unreached", "command-line", "hardening")


def class_of(mutant: Mutant, classified: dict[str, dict[str, str]]) -> str:
    return classified.get(mutant.key, {}).get("class", "unclassified")


@dataclass
class Tally:
    """One row of the score: the mutants of a module, or of the whole scope."""

    mutants: int = 0
    killed: int = 0
    survived: int = 0
    pending: int = 0
    by_class: dict[str, int] | None = None

    def add(self, mutant: Mutant, classified: dict[str, dict[str, str]]) -> None:
        self.by_class = self.by_class or {}
        self.mutants += 1
        if mutant.outcome in KILLED:
            self.killed += 1
        elif mutant.outcome == "survived":
            self.survived += 1
            kind = class_of(mutant, classified)
            self.by_class[kind] = self.by_class.get(kind, 0) + 1
        elif mutant.outcome == "pending":
            self.pending += 1

    def count(self, kind: str) -> int:
        return (self.by_class or {}).get(kind, 0)

    @property
    def behaviour_changing(self) -> int:
        return self.killed + self.survived - sum(self.count(kind) for kind in NOT_COUNTED)

    @property
    def score(self) -> float | None:
        return self.killed / self.behaviour_changing if self.behaviour_changing else None


def other_counts(total: Tally) -> str:
    """The score counted two other ways, so that the choice of denominator is in plain sight:
    with the hardening mutants in it, and over what the document's API can show (killed and
    observable survivors only: not-observable ones out as well)."""
    hardening = total.count("hardening")
    with_hardening = total.behaviour_changing + hardening
    visible = total.behaviour_changing - total.count("not-observable")
    parts = []
    if with_hardening:
        parts.append(
            f"with the {hardening} hardening mutants in the denominator, {total.killed} of "
            f"{with_hardening} = {total.killed / with_hardening:.1%}"
        )
    if visible:
        parts.append(
            f"over the mutants the document's API can show (killed, and survivors classed "
            f"observable), {total.killed} of {visible} = {total.killed / visible:.1%}"
        )
    return "Counted other ways: " + "; ".join(parts) + "." if parts else ""


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion: honest near 100%, where the normal
    approximation's interval would run past it."""
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    centre = share + z * z / (2 * trials)
    margin = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    denominator = 1 + z * z / trials
    return max(0.0, (centre - margin) / denominator), min(1.0, (centre + margin) / denominator)


def drawn(mutants: Sequence[Mutant], sample: dict[str, Any] | None) -> list[Mutant]:
    """The mutants the score is about: the draw's, or every one no filter left out."""
    if sample is None:
        return [m for m in mutants if m.outcome != "skipped"]
    keys = {key for keys in sample["drawn"].values() for key in keys}
    return [m for m in mutants if m.key in keys]


def summary(
    mutants: Sequence[Mutant], classified: dict[str, dict[str, str]], sample: dict[str, Any] | None
) -> str:
    """The score, its interval, the kills per configuration and the table per module."""
    chosen = drawn(mutants, sample)
    skipped = [m for m in mutants if m.outcome == "skipped"]
    total = Tally()
    modules: dict[str, Tally] = {}
    configurations: dict[str, int] = {}
    for mutant in chosen:
        total.add(mutant, classified)
        modules.setdefault(mutant.path, Tally()).add(mutant, classified)
        if mutant.outcome in KILLED:
            where = mutant.configuration or "(unnamed: an earlier run)"
            configurations[where] = configurations.get(where, 0) + 1
    low, high = wilson(total.killed, total.behaviour_changing)
    population = len(mutants) - len(skipped)
    lines = []
    if sample is not None:
        lines.append(
            f"A stratified random sample of **{len(chosen)}** of the {population} mutants of the "
            f"scope (seed {sample['seed']}; each module's share of the sample is its share of "
            f"the mutants, at least one)."
        )
    else:
        lines.append(f"Every one of the {population} mutants of the scope.")
    lines.append(
        f"{len(skipped)} more were left out before it by the operator and annotation filters "
        "(mutation/README.md, *Scope*)."
    )
    lines.append("")
    if total.score is not None:
        lines.append(
            f"**Score: {total.killed} killed of {total.behaviour_changing} mutants that change "
            f"behaviour = {total.score:.1%}** (95% interval {low:.1%} to {high:.1%}, Wilson). "
            f"Not in the denominator: {total.count('equivalent')} equivalent, "
            f"{total.count('unreached')} unreached (only a fault switch reaches them), "
            f"{total.count('command-line')} in code only the stub's command line runs, "
            f"{total.count('hardening')} in server hardening (code that only protects the stub "
            f"itself). Killed over every mutant run: {total.killed} of "
            f"{total.killed + total.survived}."
        )
        lines.append("")
        lines.append(other_counts(total))
    else:
        lines.append("No mutant judged yet.")
    lines += [
        "",
        "Killed, by the configuration that killed it first (mutation/configurations.py):",
        "",
        "| configuration | killed |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {count} |" for name, count in sorted(configurations.items())]
    lines += [
        "",
        "| module | mutants | killed | survived | equivalent | unreached | command line "
        "| hardening | not observable | observable | unclassified | pending | score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = sorted(modules.items())
    for name, tally in [*rows, ("**all**", total)]:
        score = "n/a" if tally.score is None else f"{tally.score:.0%}"
        if sample is not None and name in sample["population"]:
            mutants_cell = f"{tally.mutants} of {sample['population'][name]}"
        else:
            mutants_cell = str(tally.mutants)
        cells = [
            name.removeprefix("stub_server/") if name != "**all**" else name,
            mutants_cell,
            str(tally.killed),
            str(tally.survived),
            *(
                str(tally.count(kind))
                for kind in (
                    "equivalent",
                    "unreached",
                    "command-line",
                    "hardening",
                    "not-observable",
                    "observable",
                )
            ),
            str(tally.count("unclassified")),
            str(tally.pending),
            score,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def survivors(
    mutants: Sequence[Mutant], classified: dict[str, dict[str, str]], *, diffs: bool = True
) -> str:
    alive = [m for m in mutants if m.outcome == "survived"]
    if not alive:
        return "No survivor."
    by_class: dict[str, int] = {}
    parts = []
    for mutant in alive:
        entry = classified.get(mutant.key, {})
        kind = entry.get("class", "unclassified")
        by_class[kind] = by_class.get(kind, 0) + 1
        label = CLASSES.get(kind, "not classified yet")
        why = entry.get("why", "").strip()
        diff = "\n".join(
            line for line in mutant.diff.splitlines() if not line.startswith(("---", "+++"))
        ).strip()
        parts.append(
            f"- **{mutant.where}** `{mutant.operator}` #{mutant.occurrence}: **{label}**"
            + (f". {why}" if why else "")
            + (
                f"\n\n  ```diff\n  {diff.replace(chr(10), chr(10) + '  ')}\n  ```"
                if diff and diffs
                else ""
            )
        )
    summary = ", ".join(f"{count} {kind}" for kind, count in sorted(by_class.items()))
    return f"{len(alive)} survivors: {summary}.\n\n" + "\n".join(parts)


def killed_by_added_checks(mutants: Sequence[Mutant], classified: dict[str, dict[str, str]]) -> str:
    """The survivors of an earlier run that a check added for them killed: the proof that each
    observable survivor got its check (``killed-by-check`` in classification.toml)."""
    lines = [
        f"- **{m.where}** `{m.operator}` #{m.occurrence}: {classified[m.key]['why'].strip()}"
        for m in mutants
        if m.outcome in KILLED and classified.get(m.key, {}).get("class") == "killed-by-check"
    ]
    if not lines:
        return "None."
    return f"{len(lines)} mutants.\n\n" + "\n".join(lines)


def replacement(mutant: Mutant) -> str:
    """The line the mutant writes (its diff's ``+`` line): with the place and the operator, what
    the mutation is (two occurrences at one line may be two replacements, e.g. n+1 and n-1)."""
    added = [
        line
        for line in mutant.diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return " ".join(added[0][1:].split()) if added else ""


def contradictions(mutants: Sequence[Mutant], classified: dict[str, dict[str, str]]) -> list[str]:
    """Survivors of the same mutation at the same line (same operator, same replacement) given
    different classes: a class is about what the mutated line does, so they cannot differ."""
    seen: dict[tuple[str, int, str, str], tuple[str, str]] = {}
    found = []
    for mutant in mutants:
        if mutant.outcome != "survived" or mutant.key not in classified:
            continue
        place = (mutant.path, mutant.line, mutant.operator, replacement(mutant))
        kind = class_of(mutant, classified)
        if place in seen and seen[place][1] != kind:
            found.append(
                f"{mutant.where} {mutant.operator}: {seen[place][0]} is {seen[place][1]}, "
                f"#{mutant.occurrence} is {kind}"
            )
        seen.setdefault(place, (f"#{mutant.occurrence}", kind))
    return found


def render(
    session: Path, classification: Path, sample_path: Path = SAMPLE, *, diffs: bool = True
) -> tuple[str, str]:
    """(the whole report, its summary): the summary is what ``--docs`` writes."""
    mutants = load(session)
    classified = load_classification(classification)
    sample = load_sample(sample_path)
    chosen = drawn(mutants, sample)
    head = summary(mutants, classified, sample)
    whole = (
        "### Score\n\n"
        + head
        + "\n\n### Survivors\n\n"
        + survivors(chosen, classified, diffs=diffs)
        + "\n\n### Survivors of an earlier run, killed by a check added for them\n\n"
        + killed_by_added_checks(chosen, classified)
        + "\n"
    )
    return whole, head


def write_between_markers(path: Path, text: str) -> None:
    page = path.read_text(encoding="utf-8")
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    path.write_text(page[:start] + "\n" + text.strip() + "\n" + page[end:], encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python mutation/report.py", description=__doc__)
    parser.add_argument("--session", type=Path, default=SESSION)
    parser.add_argument("--classification", type=Path, default=CLASSIFICATION)
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the draw (sample.json)")
    parser.add_argument("--out", type=Path, help="write the markdown here too")
    parser.add_argument(
        "--docs", type=Path, help="write the summary between the mutation-score markers of FILE"
    )
    parser.add_argument(
        "--brief", action="store_true", help="one line per survivor, without its diff"
    )
    args = parser.parse_args(argv)
    if not args.session.exists():
        print(f"no session at {args.session}: run python mutation/run.py first", file=sys.stderr)
        return 2
    text, head = render(args.session, args.classification, args.sample, diffs=not args.brief)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    if args.docs is not None:
        write_between_markers(args.docs, head)
    conflicts = contradictions(load(args.session), load_classification(args.classification))
    for line in conflicts:
        print(f"contradicting classes: {line}", file=sys.stderr)
    return 1 if conflicts else 0


if __name__ == "__main__":
    sys.exit(main())
