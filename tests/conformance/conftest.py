"""Fixtures of the conformance self-tests: stubs with faults or variants, one shared stub."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformkit import STUB_ACCESS_TTL

from paysuite_core.launcher import RunningStub, start_stub, stop_stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings


@pytest.fixture(scope="module")
def module_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    """One conformant stub for a whole module (the full-suite runs share it)."""
    stub = start_stub(
        tmp_path_factory.mktemp("stub"), extra_args=STUB_ACCESS_TTL, startup_timeout_s=60
    )
    yield stub
    stop_stub(stub)


@pytest.fixture
def inproc_stub(tmp_path: Path) -> Iterator[tuple[InProcessStub, Path]]:
    """The stub's app served in this process, and the credentials file the stub writes for it."""
    instance = InProcessStub(make_settings(), background=False)
    config = instance.write_credentials(tmp_path / "target.yaml")
    yield instance, config
    instance.close()
