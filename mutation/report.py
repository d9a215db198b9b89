"""The mutation score in markdown: the table, every survivor with its classification, then the
earlier survivors that a check added for them killed.

    python mutation/report.py                     # the session in mutation/results/
    python mutation/report.py --out mutation/results/score.md

The counts come from cosmic-ray's session (``mutation/results/session.sqlite``): mutants (every
work item but those the operator filter skipped), run, killed (conform exited != 0), timeout
(killed by the per-mutant time-out; counted apart from killed), survived (conform passed),
incompetent or abnormal (the mutant could not be run), pending (not run yet).

Each survivor is shown as ``file:line``, the operator and cosmic-ray's diff, with its
classification from ``mutation/classification.toml`` when one is recorded there: a table per
mutant, keyed ``"path:operator:occurrence"`` (cosmic-ray's identity of a mutant, stable while the
file does not change), with ``class`` (``equivalent``, ``not-observable``, ``observable``,
``killed-by-check``) and ``why``. An unclassified survivor says so.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SESSION = HERE / "results" / "session.sqlite"
CLASSIFICATION = HERE / "classification.toml"
CLASSES = {
    "equivalent": "equivalent mutant",
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


def table(mutants: Sequence[Mutant]) -> str:
    names = ("killed", "no-verdict", "timeout", "survived", "incompetent", "pending")
    count = {name: 0 for name in names}
    skipped = 0
    for mutant in mutants:
        if mutant.outcome == "skipped":
            skipped += 1
        else:
            count[mutant.outcome] += 1
    total = len(mutants) - skipped
    run = total - count["pending"]
    killed = count["killed"] + count["no-verdict"] + count["timeout"]
    judged = killed + count["survived"]
    score = killed / judged if judged else 0.0
    rows = [
        ("mutants", total),
        ("run", run),
        ("killed: a check failed (exit 1)", count["killed"]),
        ("killed: no verdict (exit 2, e.g. the stub did not start)", count["no-verdict"]),
        ("timeout (killed by the time-out)", count["timeout"]),
        ("survived", count["survived"]),
        ("incompetent", count["incompetent"]),
        ("pending (not run yet)", count["pending"]),
    ]
    lines = ["| | count |", "|---|---:|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines.append(f"| score: killed (all three) / (killed + survived) | {score:.1%} |")
    lines.append("")
    lines.append(f"({skipped} more left out by the operator filter of mutation/cosmic-ray.toml.)")
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
        if m.outcome in ("killed", "timeout", "no-verdict")
        and classified.get(m.key, {}).get("class") == "killed-by-check"
    ]
    if not lines:
        return "None."
    return f"{len(lines)} mutants.\n\n" + "\n".join(lines)


def beside_equivalents(mutants: Sequence[Mutant], classified: dict[str, dict[str, str]]) -> str:
    """The score over the mutants that behave differently at all: an equivalent mutant is not a
    bug, so no suite could kill it, and counting it only lowers every suite's score alike."""
    killed = sum(m.outcome in ("killed", "timeout", "no-verdict") for m in mutants)
    survived = [m for m in mutants if m.outcome == "survived"]
    equivalent = sum(classified.get(m.key, {}).get("class") == "equivalent" for m in survived)
    judged = killed + len(survived) - equivalent
    share = killed / judged if judged else 0.0
    return (
        f"Without the {equivalent} survivors classified equivalent: {killed} killed of {judged} "
        f"mutants that change behaviour, **{share:.1%}**."
    )


def render(session: Path, classification: Path, *, diffs: bool = True) -> str:
    mutants = load(session)
    classified = load_classification(classification)
    return (
        "### Counts\n\n"
        + table(mutants)
        + "\n\n"
        + beside_equivalents(mutants, classified)
        + "\n\n### Survivors\n\n"
        + survivors(mutants, classified, diffs=diffs)
        + "\n\n### Survivors of an earlier run, killed by a check added for them\n\n"
        + killed_by_added_checks(mutants, classified)
        + "\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python mutation/report.py", description=__doc__)
    parser.add_argument("--session", type=Path, default=SESSION)
    parser.add_argument("--classification", type=Path, default=CLASSIFICATION)
    parser.add_argument("--out", type=Path, help="write the markdown here too")
    parser.add_argument(
        "--brief", action="store_true", help="one line per survivor, without its diff"
    )
    args = parser.parse_args(argv)
    if not args.session.exists():
        print(f"no session at {args.session}: run python mutation/run.py first", file=sys.stderr)
        return 2
    text = render(args.session, args.classification, diffs=not args.brief)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
