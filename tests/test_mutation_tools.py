"""The mutation score's own tools (mutation/): the draw, the interval, the annotation filter, the
classes' consistency, and the generated summary in the docs. The score itself is not run here
(hours of conform runs); these are what its numbers rest on."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "mutation"))

import annotation_filter  # noqa: E402
import configurations  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402


def test_the_draw_gives_each_module_its_share_and_at_least_one() -> None:
    sizes = {"a.py": 1000, "b.py": 100, "c.py": 3, "d.py": 1}
    counts = run.allocate(sizes, 110)
    assert sum(counts.values()) == 110
    assert counts["c.py"] >= 1 and counts["d.py"] == 1
    assert counts["a.py"] > 9 * counts["b.py"] > 0
    assert all(counts[name] <= sizes[name] for name in sizes)
    assert run.allocate({"a.py": 2, "b.py": 2}, 10) == {"a.py": 2, "b.py": 2}


def test_the_wilson_interval_holds_the_share_and_stays_within_0_and_1() -> None:
    low, high = report.wilson(90, 100)
    assert 0.82 < low < 0.9 < high < 0.95
    assert report.wilson(10, 10)[1] == 1.0 and report.wilson(10, 10)[0] > 0.65
    assert report.wilson(0, 0) == (0.0, 1.0)


def test_annotations_are_found_only_where_they_are_postponed(tmp_path: Path) -> None:
    postponed = tmp_path / "postponed.py"
    postponed.write_text(
        "from __future__ import annotations\n"
        "def f(a: int | None, b=1 | 2) -> str | None:\n"
        "    x: int | None = a | 4\n"
        "    return x\n",
        encoding="utf-8",
    )
    path = str(postponed)
    assert annotation_filter.in_annotation(path, (2, 13))  # a: int | None
    assert annotation_filter.in_annotation(path, (2, 39))  # -> str | None
    assert annotation_filter.in_annotation(path, (3, 11))  # x: int | None
    assert not annotation_filter.in_annotation(path, (2, 25))  # b=1 | 2: a default, evaluated
    assert not annotation_filter.in_annotation(path, (3, 22))  # a | 4: a value
    evaluated = tmp_path / "evaluated.py"
    evaluated.write_text("def f(a: int | None) -> None:\n    pass\n", encoding="utf-8")
    assert not annotation_filter.in_annotation(str(evaluated), (1, 13))


def _mutant(
    line: int, occurrence: int, outcome: str = "survived", diff: str = "+x = 1"
) -> report.Mutant:
    return report.Mutant("stub_server/x.py", line, "NumberReplacer", occurrence, outcome, diff)


def test_one_mutation_at_one_line_with_two_classes_is_a_contradiction() -> None:
    classes = {
        "stub_server/x.py:NumberReplacer:0": {"class": "equivalent", "why": "."},
        "stub_server/x.py:NumberReplacer:1": {"class": "not-observable", "why": "."},
        "stub_server/x.py:NumberReplacer:2": {"class": "not-observable", "why": "."},
    }
    found = report.contradictions([_mutant(5, 0), _mutant(5, 1), _mutant(9, 2)], classes)
    assert len(found) == 1 and "stub_server/x.py:5" in found[0]
    assert report.contradictions([_mutant(5, 1), _mutant(9, 2)], classes) == []
    # two replacements at one line (n+1, n-1) are two mutations: their classes may differ
    other = _mutant(5, 1, diff="+x = -1")
    assert report.contradictions([_mutant(5, 0), other], classes) == []


def test_the_score_leaves_equivalent_unreached_command_line_and_hardening_out() -> None:
    classes = {
        "stub_server/x.py:NumberReplacer:1": {"class": "equivalent"},
        "stub_server/x.py:NumberReplacer:2": {"class": "unreached"},
        "stub_server/x.py:NumberReplacer:3": {"class": "not-observable"},
        "stub_server/x.py:NumberReplacer:4": {"class": "command-line"},
        "stub_server/x.py:NumberReplacer:5": {"class": "hardening"},
        "stub_server/x.py:NumberReplacer:6": {"class": "observable"},
    }
    tally = report.Tally()
    for mutant in [_mutant(1, 0, "killed"), *(_mutant(n, n) for n in (1, 2, 3, 4, 5, 6))]:
        tally.add(mutant, classes)
    assert (tally.killed, tally.survived, tally.behaviour_changing) == (1, 6, 3)
    assert tally.score == 1 / 3
    # the other counts put the choice of denominator in plain sight
    assert "with the 1 hardening mutants in the denominator, 1 of 4 = 25.0%" in (
        report.other_counts(tally)
    )
    assert "observable), 1 of 2 = 50.0%" in report.other_counts(tally)


def test_the_ladder_starts_with_the_default_stub_and_bounds_every_run() -> None:
    ladder = configurations.ladder()
    names = [c.name for c in ladder]
    assert names[0] == "default" and len(set(names)) == len(names)
    assert all("--max-duration" in c.conform_args for c in ladder)
    assert {"history", "resolving-and-delivering", "other-settings", "all-variants"} <= set(names)


SCORE = ROOT / "mutation" / "results" / "score.md"
DOCS = ROOT / "docs" / "conformance.md"


def _generated_summary(page: str) -> str:
    return page.split(report.BEGIN, 1)[1].split(report.END, 1)[0].strip()


def test_the_docs_show_the_score_the_report_generated() -> None:
    """docs/conformance.md's summary is report.py's, not a copy that drifted: it must be the
    ``### Score`` part of results/score.md, word for word."""
    score = SCORE.read_text(encoding="utf-8")
    head = score.split("### Score\n\n", 1)[1].split("\n\n### Survivors", 1)[0].strip()
    assert _generated_summary(DOCS.read_text(encoding="utf-8")) == head


def test_every_survivor_of_the_last_run_is_classified() -> None:
    lines = SCORE.read_text(encoding="utf-8").splitlines()
    total = next(line for line in lines if line.startswith("| **all**"))
    cells = [cell.strip() for cell in total.strip("|").split("|")]
    # module | mutants | killed | survived | equivalent | unreached | command line
    # | not observable | observable | unclassified | pending | score
    assert cells[10] == "0" and cells[11] == "0", total  # none unclassified, none pending
    assert int(cells[2]) > 0, total


@pytest.mark.parametrize("entry", sorted(report.load_classification(report.CLASSIFICATION).items()))
def test_every_class_is_known_and_says_why(entry: tuple[str, dict[str, str]]) -> None:
    key, value = entry
    assert value.get("class") in report.CLASSES, key
    assert len(value.get("why", "").strip()) > 20, key
    if value["class"] == "unreached":
        assert re.search(r"fault|--fault|switch", value["why"]), key


def test_the_classification_file_parses() -> None:
    with open(report.CLASSIFICATION, "rb") as handle:
        assert "mutant" in tomllib.load(handle)
