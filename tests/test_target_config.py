"""The target configuration is read the same way by the stub, the suite and the load profiles."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from paysuite_core.target_config import (
    RWANDA_MOBILE_PATTERN,
    TargetConfigError,
    load_target_config,
    parse_target_config,
    write_target_config,
)

MINIMAL = {
    "base_url": "http://127.0.0.1:8080/api/",
    "applications": [
        {"client_id": "a", "client_secret": "s", "privilege": "read-write", "merchant": "A"},
        {"client_id": "b", "client_secret": "t", "privilege": "cashin", "merchant": "B"},
    ],
}


def test_minimal_config_gets_documented_defaults() -> None:
    config = parse_target_config(MINIMAL, env={})
    assert config.base_url == "http://127.0.0.1:8080/api"  # trailing slash dropped
    assert config.access_token_ttl_s == 900
    assert config.max_wait_s == 30
    assert config.customer.driver == "none" and not config.customer.can_resolve
    assert config.effective_number_pattern == RWANDA_MOBILE_PATTERN
    assert (config.amount.min, config.amount.max) == (100, 100_000)
    assert config.pending_timeout_s is None  # no time-out declared: LIFE-008 not applicable
    assert config.merchants() == ["A", "B"]
    assert [a.client_id for a in config.applications_with("cashin")] == ["b"]
    assert config.applications[0].can_cashout() and not config.applications[1].can_cashout()


def test_environment_references_fill_any_value() -> None:
    raw = {
        **MINIMAL,
        "base_url": "${TARGET:-http://127.0.0.1:9/api}",
        "max_wait_s": "${WAIT}",
        "applications": [{"client_id": "a", "client_secret": "${SECRET}"}],
    }
    config = parse_target_config(raw, env={"SECRET": "hunter2", "WAIT": "12"})
    assert config.applications[0].client_secret == "hunter2"
    assert config.max_wait_s == 12
    assert config.base_url == "http://127.0.0.1:9/api"


def test_unset_environment_reference_names_the_variable_and_key() -> None:
    raw = {**MINIMAL, "applications": [{"client_id": "a", "client_secret": "${NOPE}"}]}
    with pytest.raises(TargetConfigError, match=r"applications\[0\]\.client_secret.*NOPE"):
        parse_target_config(raw, env={})


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"base_url": "ftp://x"}, r"base_url: expected an http\(s\) URL"),
        ({"applications": []}, r"applications: expected a list"),
        (
            {"applications": [{"client_id": "a", "client_secret": "s", "privilege": "admin"}]},
            r"applications\[0\]\.privilege: 'admin' is not one of",
        ),
        ({"customer": {"driver": "sandbox"}}, r"customer\.confirm: required by the sandbox"),
        ({"customer": {"driver": "carrier-pigeon"}}, r"customer\.driver"),
        ({"amount": {"min": 500, "max": 100}}, r"amount: min 500 is greater than max 100"),
        ({"number_pattern": "(unclosed"}, r"number_pattern: not a valid regex"),
        ({"max_wait_s": "soon"}, r"max_wait_s: expected a number"),
        ({"max_wait_s": "${X:-nan}"}, r"max_wait_s: expected a number, got nan"),
        ({"pending_timeout_s": 0}, r"^pending_timeout_s: "),
        ({"pending_timeout_s": "soon"}, r"^pending_timeout_s: expected a number"),
        (
            {"customer": {"driver": "magic-numbers", "cancel_number": "0780000000"}},
            r"^customer\.confirm_number: required by the magic-numbers driver$",
        ),
        ({"refresh_rotation": "yes"}, r"^refresh_rotation: expected true or false, got 'yes'$"),
        ({"amout": {"min": 1}}, r"^amout: unknown key \(known: .*amount"),
        ({"amount": {"minimum": 1}}, r"amount\.minimum: unknown key"),
        ({"customer": {"driver": "none", "timeout": 5}}, r"customer\.timeout: unknown key"),
        (
            {"applications": [{"client_id": "a", "client_secret": "s", "role": "x"}]},
            r"applications\[0\]\.role: unknown key",
        ),
    ],
)
def test_invalid_values_are_reported_by_key(patch: dict, message: str) -> None:
    with pytest.raises(TargetConfigError, match=message):
        parse_target_config({**MINIMAL, **patch}, env={})


def test_sandbox_driver_parses_method_and_url_template() -> None:
    raw = {
        **MINIMAL,
        "customer": {
            "driver": "sandbox",
            "confirm": "POST http://127.0.0.1:8080/_sandbox/transactions/{ref}/confirm",
            "cancel": "http://127.0.0.1:8080/_sandbox/transactions/{ref}/cancel",
        },
    }
    customer = parse_target_config(raw, env={}).customer
    assert customer.confirm is not None and customer.cancel is not None
    assert customer.confirm.method == "POST"
    assert customer.confirm.url("r1") == "http://127.0.0.1:8080/_sandbox/transactions/r1/confirm"
    assert customer.cancel.method == "POST"  # a bare URL defaults to POST


def test_base_url_override_wins_over_the_file(tmp_path: Path) -> None:
    path = write_target_config(parse_target_config(MINIMAL, env={}), tmp_path / "t.yaml")
    config = load_target_config(path, base_url="http://[::1]:9000/api")
    assert config.base_url == "http://[::1]:9000/api"


def test_written_file_is_private_and_round_trips(tmp_path: Path) -> None:
    raw = {
        **MINIMAL,
        "customer": {
            "driver": "magic-numbers",
            "confirm_number": "0780000001",
            "cancel_number": "0780000000",
            "timeout_s": 5,
        },
        "numbers": ["0781234567"],
        "amount": {"min": 100, "max": 5000},
        "pending_timeout_s": 3,
    }
    original = parse_target_config(raw, env={})
    path = write_target_config(original, tmp_path / "creds" / "c.yaml", header="secret stuff")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text().startswith("# secret stuff\n")
    assert load_target_config(path, env={}) == original


def test_missing_and_unparsable_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(TargetConfigError, match="cannot read"):
        load_target_config(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("applications: [unclosed\n")
    with pytest.raises(TargetConfigError, match="not valid YAML"):
        load_target_config(bad)


def test_webhooks_section_defaults_url_from_listen_and_reads_the_secret_from_env() -> None:
    raw = {**MINIMAL, "webhooks": {"listen": "127.0.0.1:9911", "secret": "${HOOK}"}}
    hooks = parse_target_config(raw, env={"HOOK": "whsec_x"}).webhooks
    assert hooks is not None
    assert (hooks.listen_host, hooks.listen_port, hooks.url) == (
        "127.0.0.1",
        9911,
        "http://127.0.0.1:9911/",
    )
    assert (hooks.secret, hooks.mode, hooks.tolerance_s) == ("whsec_x", "development", 300)
    assert parse_target_config(MINIMAL, env={}).webhooks is None


def test_webhooks_listen_defaults_from_url_and_the_section_round_trips(tmp_path: Path) -> None:
    raw = {
        **MINIMAL,
        "webhooks": {"url": "http://[::1]:9912/hooks", "secret": "s", "mode": "production"},
    }
    config = parse_target_config(raw, env={})
    assert config.webhooks is not None
    assert (config.webhooks.listen, config.webhooks.url) == (
        "[::1]:9912",
        "http://[::1]:9912/hooks",
    )
    path = write_target_config(config, tmp_path / "t.yaml")
    assert load_target_config(path, env={}) == config


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"secret": "s"}, r"webhooks\.listen: required"),
        ({"listen": "127.0.0.1:9911"}, r"webhooks\.secret: required"),
        (
            {"listen": "10.0.0.1:9911", "secret": "s"},
            r"webhooks\.listen: 10\.0\.0\.1 is not a loopback",
        ),
        ({"listen": "127.0.0.1", "secret": "s"}, r"webhooks\.listen: expected HOST:PORT"),
        ({"url": "http://127.0.0.1/", "secret": "s"}, r"webhooks\.url: has no port"),
        ({"listen": "127.0.0.1:1", "secret": "s", "tolerance": 5}, r"webhooks\.tolerance: unknown"),
    ],
)
def test_webhooks_section_errors_name_the_key(section: dict, message: str) -> None:
    with pytest.raises(TargetConfigError, match=message):
        parse_target_config({**MINIMAL, "webhooks": section}, env={})
