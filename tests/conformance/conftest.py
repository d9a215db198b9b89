"""Fixtures of the conformance self-tests: stubs with faults or variants, one shared stub."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conformkit import STUB_ACCESS_TTL

from paysuite_core.launcher import RunningStub, start_stub, stop_stub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings  # noqa: E402


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
    """The stub's app served in this process, and a target configuration naming it."""
    instance = InProcessStub(make_settings(), background=False)
    config = tmp_path / "target.yaml"
    apps = [
        {
            "client_id": app.client_id,
            "client_secret": app.client_secret,
            "privilege": app.privilege,
            "merchant": app.merchant,
        }
        for app in instance.applications
    ]
    config.write_text(
        yaml.safe_dump({"base_url": instance.base_url, "applications": apps}), encoding="utf-8"
    )
    yield instance, config
    instance.close()
