"""Helpers of the conformance self-tests: the suite run in-process, configs with short waits."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cli import run as conform_run
from conformance.preflight import BUNDLED_STUB_ACCESS_TTL_S, BUNDLED_STUB_PENDING_TIMEOUT_S
from paysuite_core.cli_flags import run_command
from paysuite_core.launcher import RunningStub

#: The bundled stub's access lifetime, long enough for a busy machine: AUTH-008 (expiry) runs on
#: the short-lived pairs its credentials file declares (``short_lived_pair``).
STUB_ACCESS_TTL = ("--access-ttl", str(BUNDLED_STUB_ACCESS_TTL_S))
#: The bundled stub's short pending time-out, declared in the credentials file, so that
#: LIFE-008 (RC-18) runs.
STUB_PENDING_TIMEOUT = ("--pending-timeout", str(BUNDLED_STUB_PENDING_TIMEOUT_S))


@dataclass
class Outcome:
    """What one ``paysuite conform`` run produced."""

    status: int
    report_dir: Path
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        return json.loads((self.report_dir / "conformance.json").read_text(encoding="utf-8"))

    def ids(self, outcome: str) -> set[str]:
        return {c["id"] for c in self.report["checks"] if c["outcome"] == outcome}

    def check(self, check_id: str) -> dict[str, Any]:
        """The report's entry for ``check_id``: there is exactly one."""
        (entry,) = [c for c in self.report["checks"] if c["id"] == check_id]
        return dict(entry)


def conform(
    capsys: pytest.CaptureFixture[str],
    report_dir: Path,
    *,
    config: Path | None = None,
    target: str | None = None,
    profile: str = "seed",
    strict: bool = False,
    only: str | None = None,
    seed: int | None = None,
    min_coverage: str | None = None,
    max_throttle_wait: str | None = None,
    concurrency: str | None = None,
    history_budget: str | None = "0",
) -> Outcome:
    """Run ``paysuite conform`` in this process (a nested pytest session) and collect it.

    The history phase is off unless asked for (``history_budget``): it would add its budget to
    every run, and tests/conformance/test_history_*.py judge it on its own."""
    args = argparse.Namespace(
        target=target,
        config=str(config) if config else None,
        profile=profile,
        strict=strict,
        report_dir=str(report_dir),
        only=only,
        list=False,
        seed=seed,
        min_coverage=min_coverage,
        reveal_secrets=False,
        max_throttle_wait=max_throttle_wait,
        concurrency=concurrency,
        history_budget=history_budget,
        func=conform_run,
        prog="paysuite conform",
    )
    capsys.readouterr()
    status = run_command(args)  # as the dispatcher runs it: a usage error is one line, 2
    captured = capsys.readouterr()
    return Outcome(status, report_dir, captured.out, captured.err)


def fast_config(stub: RunningStub, directory: Path, **overrides: Any) -> Path:
    """The stub's credentials file with short customer waits (faults can leave things pending)."""
    data = yaml.safe_load(stub.credentials_path.read_text(encoding="utf-8"))
    data["customer"]["timeout_s"] = 2
    data.update(overrides)
    path = directory / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
