"""The ``paysuite`` front door lists every part and fails cleanly on bad usage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and subcommand of ``paysuite``, as its words (``("stub", "apps")``)."""
    import argparse

    from paysuite.cli import build_parser

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = [path] if path else []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += walk(sub, (*path, name))
        return found

    return walk(build_parser(), ())


def test_every_command_is_walked() -> None:
    paths = _command_paths()
    assert {("conform",), ("load",), ("replay",), ("webhooks", "resend")} <= set(paths)
    assert ("stub", "webhooks", "rotate") in paths and len(paths) >= 20


@pytest.mark.parametrize("path", _command_paths(), ids=" ".join)
def test_a_bad_flag_is_one_line_and_exit_2(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every subcommand's parser is the convention's (``paysuite_core.cli_flags.Parser``): an
    unknown flag is one line under the command's name, exit status 2, no usage dump."""
    with pytest.raises(SystemExit) as exited:
        main([*path, "--no-such-flag"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"paysuite {' '.join(path)}: "), err
    assert "--no-such-flag" in err or "required" in err, err
    assert "usage" not in err and "Traceback" not in err, err


def test_a_malformed_value_and_a_command_usage_error_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["load", "--users", "many"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == "paysuite load: argument --users: invalid int value: 'many'\n"
    # raised by the command as it runs: printed once, by the dispatcher, under its name
    assert main(["webhooks", "resend", "evt_1"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "paysuite webhooks resend: give --config (the stub's credentials file) or --stub URL\n"
    )


@pytest.mark.parametrize(
    ("path", "names"),
    [
        (("stub", "apps"), "{create}"),
        (("stub", "webhooks"), "{add,list,rotate}"),
        (("webhooks",), "COMMAND"),
    ],
)
def test_a_command_of_subcommands_needs_one(
    path: tuple[str, ...], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cli_flags.add_group``: a missing subcommand is one line naming the choices, exit 2."""
    with pytest.raises(SystemExit) as exited:
        main(list(path))
    assert exited.value.code == 2
    said = f"paysuite {' '.join(path)}: the following arguments are required: {names}\n"
    assert capsys.readouterr().err == said


def test_a_command_that_ran_and_failed_is_its_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cli_flags.Failure``: printed as raised (no second prefix), exit status 1."""
    db = tmp_path / "none.db"
    assert main(["stub", "webhooks", "list", "--db", str(db)]) == 1
    assert capsys.readouterr().err == (
        f"paysuite stub webhooks list: no database at {db} (start the stub with --db {db} first)\n"
    )
    assert (
        main(["stub", "apps", "create", "--db", str(db), "--merchant", "M", "--privilege", "read"])
        == 1
    )
    assert "or add --create-db to make a new one)\n" in capsys.readouterr().err
    assert not db.exists()
