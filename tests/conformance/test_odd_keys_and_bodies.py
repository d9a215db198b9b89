"""IDEM-016, IDEM-017 (a non-ASCII Idempotency-Key is a key) and ERR-006 (an unknown field
holding a 4301-digit integer is ignored, RC-30): each fails on an implementation nobody on the
team wrote, and passes on the stub.

The independent implementation (tests/foreign) with its ``non-ascii-key-refused`` defect
refuses ``clé-...`` in both channels; its JSON parser, Python's, gives up on integers of over
4300 digits (its own choice, which the reference profile names).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "foreign"))
from foreignkit import start_foreign

CHECKS = "IDEM-016,IDEM-017,ERR-006"


def test_the_stub_passes_them(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = fast_config(make_stub(), tmp_path)
    outcome = conform(
        capsys, tmp_path / "r", config=config, profile="reference", strict=True, only=CHECKS
    )
    assert outcome.ids("passed") == set(CHECKS.split(",")), outcome.report["checks"]
    assert outcome.status == 0


def test_an_implementation_refusing_them_fails_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start_foreign(
        "independent", tmp_path, "--defect", "non-ascii-key-refused", "--access-ttl", "2"
    )
    try:
        outcome = conform(
            capsys,
            tmp_path / "r",
            config=server.config_path,
            profile="reference",
            strict=True,
            only=CHECKS,
        )
    finally:
        server.stop()
    checks = {c["id"]: c for c in outcome.report["checks"]}
    assert outcome.ids("failed") == set(CHECKS.split(",")), outcome.report["checks"]
    assert "answered 400" in checks["IDEM-016"]["message"], checks["IDEM-016"]
    assert "4301-digit integer answered 400" in checks["ERR-006"]["message"], checks["ERR-006"]
    assert outcome.status == 1  # SHOULD failures gate under --strict
