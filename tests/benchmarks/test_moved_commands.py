"""The benchmarks left the installed package: their old subcommands point at the new command."""

from __future__ import annotations

import pytest

from paysuite.cli import main


@pytest.mark.parametrize(
    ("old", "new"),
    [("bench", "python -m benchmarks stub"), ("proxy-bench", "python -m benchmarks proxy")],
)
def test_an_old_bench_command_names_its_new_one(
    old: str, new: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([old, "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"`{new}`" in err and "Traceback" not in err
