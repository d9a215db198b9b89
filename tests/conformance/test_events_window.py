"""EVT-013 (``from``/``to``, RC-24) and EVT-014 (fractional amounts summed, RC-27) pass on the
stub and fail on the stub with each defect the mutation run found no check for.

Each defect is the mutation run's own mutant, applied to the stub's app served in this process:
the function's source with the one operator changed, compiled in its module's namespace
(``mutated``), so the test exercises exactly the code the mutation run changes.
"""

from __future__ import annotations
import __future__

import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conformkit import conform
from stubkit import InProcessStub

import stub_server.handlers.transactions as stub_transactions
import stub_server.timefmt as stub_timefmt
from stub_server.errors import validation_error
from stub_server.rules.fields import validate_amount
from stub_server.store.decimal_sum import DecimalSum
from stub_server.store.events import Events

IDS = "EVT-013,EVT-014"


def mutated(function: Callable[..., Any], old: str, new: str) -> Callable[..., Any]:
    """``function`` compiled again with ``old`` (found exactly once) replaced by ``new``."""
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(old) == 1, f"{old!r} is not in {function.__qualname__} once"
    namespace = dict(function.__globals__)
    code = compile(
        source.replace(old, new),
        inspect.getsourcefile(function) or "<mutant>",
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    exec(code, namespace)  # the stub's own source, one operator changed
    found: Callable[..., Any] = namespace[function.__name__]
    return found


def _run(capsys: pytest.CaptureFixture[str], config: Path, report: Path) -> Any:
    return conform(capsys, report, config=config, profile="reference", strict=True, only=IDS)


def test_the_stub_passes(
    inproc_stub: tuple[InProcessStub, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = _run(capsys, inproc_stub[1], tmp_path / "r")
    assert outcome.status == 0, outcome.report["checks"]
    assert outcome.ids("passed") == {"EVT-013", "EVT-014"}


def test_counting_whole_hours_from_1970_fails_evt_013(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """store/events.py: the first whole hour of a window rounded the wrong way, so ``total``
    counts every event of the merchant before ``from`` too; the page itself is right."""
    mutant = mutated(Events._totals_for_range, "-(-lo // HOUR_US)", "+(-lo // HOUR_US)")
    monkeypatch.setattr(Events, "_totals_for_range", mutant)
    outcome = _run(capsys, inproc_stub[1], tmp_path / "r")
    assert outcome.ids("failed") == {"EVT-013"}, outcome.report["checks"]
    failed = outcome.check("EVT-013")
    assert "total is" in failed["message"] and "but the pages list" in failed["message"], failed
    assert "RC-24" in failed["expected"] and failed["evidence"], failed
    assert outcome.status == 1


def test_a_bare_date_to_at_midnight_fails_evt_013(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """timefmt.py: a bare-date ``to`` means the day's first instant, not its last: the day's
    events are not listed."""
    mutant = mutated(
        stub_timefmt.parse_bound,
        "timedelta(days=1, microseconds=-1)",
        "timedelta(days=0, microseconds=-1)",
    )
    monkeypatch.setattr(stub_timefmt, "parse_bound", mutant)
    outcome = _run(capsys, inproc_stub[1], tmp_path / "r")
    assert outcome.ids("failed") == {"EVT-013"}, outcome.report["checks"]
    failed = outcome.check("EVT-013")
    message = failed["message"]
    assert message.startswith("ref=") and "of the window not listed" in message, message
    assert "a bare date covers the whole day" in failed["expected"], failed


def test_fractions_left_out_of_the_sum_fail_evt_014(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """store/decimal_sum.py: the fractional amounts' aggregate never marks a row seen, so the
    envelope's ``amount`` drops every fractional amount."""
    mutant = mutated(DecimalSum.step, "self.seen = True", "self.seen = False")
    monkeypatch.setattr(DecimalSum, "step", mutant)
    outcome = _run(capsys, inproc_stub[1], tmp_path / "r")
    assert outcome.ids("failed") == {"EVT-014"}, outcome.report["checks"]
    failed = outcome.check("EVT-014")
    assert "the fractional amounts were left out" in failed["message"], failed
    assert failed["expected"].startswith(failed["message"].split("the sum ")[1].split(" ")[0])


def test_a_target_that_refuses_fractions_leaves_evt_014_not_applicable(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RC-13 takes fractional amounts, the document only says number: a target taking whole
    amounts only has nothing fractional to sum, which is no failure."""

    def whole_only(body: dict[str, Any], settings: Any) -> Any:
        amount = validate_amount(body, settings)
        if not float(amount).is_integer():
            raise validation_error("amount", "must be a whole number")
        return amount

    monkeypatch.setattr(stub_transactions, "validate_amount", whole_only)
    outcome = _run(capsys, inproc_stub[1], tmp_path / "r")
    assert outcome.status == 0 and outcome.ids("passed") == {"EVT-013"}, outcome.report["checks"]
    skipped = outcome.check("EVT-014")
    assert skipped["not_applicable"] and "refuses the fractional amount" in skipped["message"]
