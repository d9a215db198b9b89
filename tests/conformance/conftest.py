"""Fixtures of the conformance self-tests: stubs with faults or variants, one shared stub."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conformkit import STUB_ACCESS_TTL

from paysuite_core.launcher import RunningStub, start_stub, stop_stub


@pytest.fixture(scope="module")
def module_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    """One conformant stub for a whole module (the full-suite runs share it)."""
    stub = start_stub(
        tmp_path_factory.mktemp("stub"), extra_args=STUB_ACCESS_TTL, startup_timeout_s=60
    )
    yield stub
    stop_stub(stub)
