"""``paysuite stub`` names its switches: ``--help`` lists every variant and fault, one line each,
and ``--list-faults`` / ``--list-variants`` print each with its whole description."""

from __future__ import annotations

import pytest

from paysuite.cli import build_parser
from stub_server.cli import HELP_WIDTH
from stub_server.fault_catalog import FAULTS, VARIANTS


def _exit_output(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What ``paysuite ARGV`` prints before it exits 0 (without starting anything)."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


@pytest.mark.parametrize(
    ("option", "registry"), [("--list-faults", FAULTS), ("--list-variants", VARIANTS)]
)
def test_list_prints_one_switch_a_line_with_its_description(
    option: str, registry: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _exit_output(["stub", option], capsys).splitlines()
    assert [line.split()[0] for line in lines] == list(registry)
    for line, (name, switch) in zip(lines, registry.items(), strict=True):
        assert line.startswith(name + "  ")
        assert line[len(name) :].strip() == switch.description  # whole, on its one line


def test_help_lists_every_variant_and_fault_one_line_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _exit_output(["stub", "--help"], capsys)
    variants = text[text.index("variants (--variant NAME") :]
    faults = variants[variants.index("faults (--fault NAME") :]
    variant_lines = variants[: variants.index("faults (")].splitlines()[1:-1]
    fault_lines = faults.splitlines()[1 : 1 + len(FAULTS)]
    assert [line.split()[0] for line in variant_lines] == list(VARIANTS)
    assert [line.split()[0] for line in fault_lines] == list(FAULTS)
    for line in variant_lines + fault_lines:
        assert len(line) <= HELP_WIDTH, line
    assert "--list-faults" in text and "--list-variants" in text


def test_an_unknown_name_points_at_the_list() -> None:
    from stub_server.fault_catalog import UnknownSwitchError, check_names

    with pytest.raises(UnknownSwitchError, match="--list-faults describes each"):
        check_names(["no-such-fault"], FAULTS, "fault")
