"""Fixtures of the conformance self-tests: stubs with faults or variants, one shared stub."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conformkit import STUB_ACCESS_TTL

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


@pytest.fixture(scope="module")
def module_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    """One conformant stub for a whole module (the full-suite runs share it)."""
    stub = start_stub(
        tmp_path_factory.mktemp("stub"), extra_args=STUB_ACCESS_TTL, startup_timeout_s=60
    )
    yield stub
    stop_stub(stub)
