"""Shared by every test folder: loading this file puts ``tests/`` on ``sys.path`` (pytest's
prepend import mode), so helpers meant for several suites, such as ``hostile``, import by name.
Fixtures that several folders use live here too."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from paysuite_core.launcher import RunningStub, start_stub, stop_stub


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
