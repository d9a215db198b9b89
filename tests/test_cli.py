"""The ``paysuite`` front door lists every part and fails cleanly on bad usage."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paysuite.cli import main


def run_paysuite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paysuite", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_help_lists_every_subcommand() -> None:
    result = run_paysuite("--help")
    assert result.returncode == 0
    for command in ("stub", "conform", "load", "demo", "proxy"):
        assert command in result.stdout


def test_no_subcommand_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: paysuite" in capsys.readouterr().out


def test_unknown_subcommand_is_a_usage_error() -> None:
    result = run_paysuite("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
    assert "Traceback" not in result.stderr
