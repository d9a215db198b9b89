"""The customer drivers, generically: a shell command, magic numbers, and none at all."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
import yaml
from conformkit import conform, fast_config

pytestmark = pytest.mark.slow

LIFECYCLE = "LIFE,EVT-006,FMT-005"
#: A customer that answers through the sandbox, but driven as an opaque shell command.
POST = (
    "import sys, urllib.request; "
    "urllib.request.urlopen(urllib.request.Request(sys.argv[1], method='POST'))"
)


def _rewrite(config: Path, customer: dict) -> None:
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["customer"] = customer
    config.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_command_driver(make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stub = make_stub()
    config = fast_config(stub, tmp_path)
    url = f"{stub.root_url}/_sandbox/transactions/{{ref}}/{{outcome}}"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(POST)} {url}"
    _rewrite(config, {"driver": "command", "command": command, "timeout_s": 10})
    outcome = conform(capsys, tmp_path / "r", config=config, only=LIFECYCLE, strict=True)
    assert outcome.status == 0, outcome.report["checks"]
    assert outcome.ids("passed") >= {"LIFE-002", "LIFE-003", "LIFE-004", "EVT-006"}


def test_magic_numbers_driver(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from paysuite_core.launcher import start_stub, stop_stub

    rules = {
        "default": {"outcome": "none"},
        "rules": [
            {"number_suffix": "1111", "outcome": "success", "delay_s": 0.3},
            {"number_suffix": "0000", "outcome": "failed", "delay_s": 0.3},
        ],
    }
    stub = start_stub(tmp_path / "magic", stub_config={"auto_resolve": rules}, startup_timeout_s=60)
    try:
        config = fast_config(stub, tmp_path)
        _rewrite(
            config,
            {"driver": "magic-numbers", "confirm_number": "0781111111",
             "cancel_number": "0780000000", "timeout_s": 10},
        )  # fmt: skip
        outcome = conform(capsys, tmp_path / "r", config=config, only=LIFECYCLE, strict=True)
    finally:
        stop_stub(stub)
    assert outcome.status == 0, outcome.report["checks"]
    assert outcome.ids("passed") >= {"LIFE-002", "LIFE-003", "LIFE-004"}


def test_no_driver_skips_with_the_reason(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub()
    config = fast_config(stub, tmp_path)
    _rewrite(config, {"driver": "none"})
    outcome = conform(capsys, tmp_path / "r", config=config, only="LIFE", min_coverage="0")
    assert outcome.status == 0
    # LIFE-007 (pending while nobody acts) needs no driver: it is the one rule that holds so.
    assert outcome.ids("passed") == {"LIFE-001", "LIFE-006", "LIFE-007"}
    # The default gate counts what the configuration cannot serve apart: without a driver the
    # lifecycle checks that need one are not applicable, not missing coverage.
    gated = conform(capsys, tmp_path / "gated", config=config, only="LIFE")
    coverage = gated.report["coverage"]
    assert gated.status == 0, gated.report["reason"]
    assert (coverage["run"], coverage["total"], coverage["applicable"]) == (3, 6, 3)
    not_applicable = {item["id"] for item in coverage["not_applicable"]}
    assert not_applicable == {"LIFE-002", "LIFE-003", "LIFE-004"}
    skipped = [c for c in outcome.report["checks"] if c["outcome"] == "skipped"]
    reference_only = {"LIFE-005", "LIFE-008"}  # skipped as outside the seed profile
    assert {c["id"] for c in skipped} == {"LIFE-002", "LIFE-003", "LIFE-004", *reference_only}
    driverless = [c for c in skipped if c["id"] not in reference_only]
    assert all("customer.driver is none" in c["message"] for c in driverless)
    assert all(c["not_applicable"] == (c["id"] not in reference_only) for c in skipped)


def test_a_driver_that_fails_is_an_error_not_a_lifecycle_failure(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sandbox confirm that answers 404 says nothing about the lifecycle: could not check."""
    stub = make_stub()
    config = fast_config(stub, tmp_path)
    missing = f"{stub.root_url}/no-such-sandbox/{{ref}}"
    _rewrite(config, {"driver": "sandbox", "confirm": f"POST {missing}/confirm",
                      "cancel": f"POST {missing}/cancel", "timeout_s": 4})  # fmt: skip
    outcome = conform(capsys, tmp_path / "r", config=config, only="LIFE-002,LIFE-003,LIFE-004")
    assert not outcome.ids("failed"), outcome.report["checks"]
    assert outcome.ids("error") == {"LIFE-002", "LIFE-003", "LIFE-004"}
    for check in outcome.report["checks"]:
        assert check["message"].startswith("could not check: the customer driver's"), check
        assert "answered 404" in check["message"]
        assert check["evidence"] and "/no-such-sandbox/" in check["evidence"][0]["request"]["url"]
    assert outcome.status == 2 and outcome.report["verdict"] == "error"
