"""Shared by every test folder: loading this file puts ``tests/`` on ``sys.path`` (pytest's
prepend import mode), so helpers meant for several suites, such as ``hostile``, import by name.
Fixtures that several folders use live here too."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from paysuite_core.launcher import RunningStub, start_stub, stop_stub

#: The checkout's own reports folder: a user's runs write there, the self-tests never do.
CHECKOUT_REPORTS = Path(__file__).resolve().parents[1] / "reports"


def _reports_files() -> dict[str, int]:
    """Each file under the checkout's reports/ with its modification time."""
    if not CHECKOUT_REPORTS.is_dir():
        return {}
    return {
        str(path.relative_to(CHECKOUT_REPORTS)): path.stat().st_mtime_ns
        for path in CHECKOUT_REPORTS.rglob("*")
        if path.is_file()
    }


@pytest.fixture(autouse=True)
def _nothing_written_into_the_checkout_reports() -> Iterator[None]:
    """A self-test writes under its tmp dirs only: a run without --report-dir (or a command
    whose working directory is the checkout) would mix its files with the user's reports."""
    before = _reports_files()
    yield
    after = _reports_files()
    written = sorted(name for name, stamp in after.items() if before.get(name) != stamp)
    if written:
        pytest.fail(
            f"this test wrote into the checkout's reports/ ({', '.join(written[:5])}): give "
            "the command a --report-dir (or a working directory) under tmp_path",
            pytrace=False,
        )


@pytest.fixture
def make_stub(tmp_path: Path) -> Iterator[Any]:
    """Start stubs with the given faults/variants; all stopped at the end of the test."""
    started: list[RunningStub] = []

    def factory(
        faults: Sequence[str] = (), variants: Sequence[str] = (), extra_args: Sequence[str] = ()
    ) -> RunningStub:
        stub = start_stub(
            tmp_path / f"stub{len(started)}",
            faults=tuple(faults),
            variants=tuple(variants),
            extra_args=tuple(extra_args),
            startup_timeout_s=60,
        )
        started.append(stub)
        return stub

    yield factory
    for stub in started:
        stop_stub(stub)
