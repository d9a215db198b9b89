"""The README's Quickstart is a contract: CI runs exactly its test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|bash|console)?\n(.+?)\n```", section, flags=re.S)


def test_quickstart_has_exactly_two_commands() -> None:
    commands = quickstart_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands), "each command is one line"
    main_job, tests = commands
    assert "paysuite demo" in main_job
    assert tests.endswith("pytest")


def test_ci_runs_the_readme_test_command() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert quickstart_commands()[1] in ci_lines


def test_ci_also_runs_the_second_tier() -> None:
    """The README's test command runs the first tier (``-m 'not slow'`` in addopts); the slow
    ones are not dropped, CI runs them after it."""
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert any(line.startswith(".venv/bin/pytest -m slow") for line in ci_lines)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "-m 'not slow'" in pyproject
