"""The YAML config covers every setting, and each one takes effect."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import jwt
import pytest
import yaml
from stubkit import InProcessStub, make_settings

from stub_server.secrets_hash import hash_secret, verify_secret
from stub_server.settings import KNOWN_KEYS, SettingsError, StubSettings, load_settings_file

EVERY_SETTING = {
    "host": "::1",
    "port": 0,
    "db": "x.db",
    "credentials": "creds.yaml",
    "jwt_key": "k" * 40,
    "access_ttl_s": 30,
    "refresh_ttl_s": 60,
    "amount": {"min": 10, "max": 500},
    "number_pattern": r"^\d{4}$",
    "fee_rate": 0.5,
    "utc_offset": "+03:00",
    "pending_timeout_s": 7,
    "sandbox": False,
    "max_body_bytes": 1024,
    "auto_resolve": {
        "default": {"outcome": "success", "delay_s": 2},
        "rules": [{"number_suffix": "0000", "outcome": "failed", "delay_s": 1}],
    },
    "faults": ["wrong-kind"],
    "drop_rate": 0.5,
    "variants": ["created-201"],
    "strict_auth": True,
    "idle_timeout_s": 3,
    "body_timeout_s": 4,
    "listen_backlog": 64,
    "authorize_limits": {
        "per_client": {"burst": 3, "per_s": 0.5},
        "per_peer": {"burst": 7, "per_s": 1},
        "hash_workers": 2,
        "hash_queue": 5,
    },
    "access_log": "json",
    "access_log_file": "access.jsonl",
    "webhooks": {"development": "http://127.0.0.1:9911/", "production": "http://[::1]:9912/p"},
    "webhook_retry": {"base_s": 0.5, "cap_s": 8, "max_attempts": 3, "timeout_s": 2},
    "webhook_signatures": ["live"],
    "latency_s": 0.08,
}


def test_the_config_file_sets_every_setting(tmp_path: Path) -> None:
    assert set(EVERY_SETTING) == KNOWN_KEYS  # a new setting must be added here too
    path = tmp_path / "stub.yaml"
    path.write_text(yaml.safe_dump(EVERY_SETTING))
    s = load_settings_file(path)
    default = StubSettings()
    assert (s.host, s.port, s.db, s.credentials, s.jwt_key) == (
        "::1", 0, "x.db", "creds.yaml", "k" * 40,
    )  # fmt: skip
    assert (s.access_ttl_s, s.refresh_ttl_s, s.pending_timeout_s) == (30, 60, 7)
    assert (s.amount_min, s.amount_max, s.fee_rate, s.utc_offset) == (10, 500, 0.5, "+03:00")
    assert s.number_pattern == r"^\d{4}$" and s.sandbox is False and s.max_body_bytes == 1024
    assert s.auto_resolve.for_number("1230000") == ("failed", 1)
    assert s.auto_resolve.for_number("1231111") == ("success", 2)
    assert s.faults == {"wrong-kind"} and s.variants == {"created-201"} and s.drop_rate == 0.5
    assert s.strict_auth is True
    assert (s.idle_timeout_s, s.body_timeout_s, s.listen_backlog) == (3, 4, 64)
    assert s.latency_s == 0.08
    limits = s.authorize_limits
    assert (limits.per_client.burst, limits.per_client.per_s) == (3, 0.5)
    assert (limits.per_peer.burst, limits.per_peer.per_s) == (7, 1)
    assert (limits.hash_workers, limits.hash_queue) == (2, 5)
    assert (s.access_log, s.access_log_file) == ("json", "access.jsonl")
    assert s.webhooks == (
        ("development", "http://127.0.0.1:9911/"), ("production", "http://[::1]:9912/p"),
    )  # fmt: skip
    retry = s.webhook_retry
    assert s.webhook_signatures == ("live",)
    assert (retry.base_s, retry.cap_s, retry.max_attempts, retry.timeout_s) == (0.5, 8, 3, 2)
    assert [retry.delay_s(n) for n in (1, 2, 3, 4, 5, 6)] == [0.5, 1, 2, 4, 8, 8]
    for name in ("host", "port", "db", "access_ttl_s", "fee_rate", "sandbox", "max_body_bytes",
                 "strict_auth"):  # fmt: skip
        assert getattr(s, name) != getattr(default, name), name


@pytest.mark.parametrize(
    ("config", "names"),
    [
        ({"fee_rate": "high"}, "fee_rate"),
        ({"port": 8080.0}, "port: expected an integer, got 8080.0"),
        ({"pending_timeout_s": float("inf")}, "pending_timeout_s: expected a number, got inf"),
        ({"utc_offset": "Z"}, "utc_offset"),
        ({"max_body_bytes": 0}, "max_body_bytes"),
        ({"auto_resolve": {"rules": [{"outcome": "success"}]}}, "auto_resolve.rules[0]"),
        ({"number_pattern": "("}, "number_pattern"),
        ({"faults": ["nope"]}, "nope"),
        ({"strict_auth": "yes"}, "strict_auth"),
        ({"idle_timeout_s": 0}, "idle_timeout_s"),
        ({"listen_backlog": 0}, "listen_backlog"),
        ({"authorize_limits": {"per_peer": {"burst": 0}}}, "authorize_limits.per_peer.burst"),
        ({"authorize_limits": {"per_host": {}}}, "per_host"),
        # a bucket that never refills has no Retry-After to give (a 500 before this was refused)
        ({"authorize_limits": {"per_client": {"per_s": 0}}}, "authorize_limits.per_client.per_s"),
        ({"webhooks": ["http://127.0.0.1/"]}, "webhooks"),
        ({"webhooks": {"development": "http://203.0.113.9/"}}, "webhooks.development"),
        ({"webhook_retry": {"base_s": 0}}, "webhook_retry.base_s"),
        ({"webhook_retry": {"max_attempts": 0}}, "webhook_retry.max_attempts"),
        ({"webhook_retry": {"base_s": 9, "cap_s": 1}}, "cap_s"),
        ({"webhook_retry": {"jitter": 1}}, "jitter"),
        ({"webhook_signatures": ["hex"]}, "webhook_signatures"),
        ({"webhook_signatures": []}, "webhook_signatures"),
    ],
)
def test_bad_values_name_the_key(config: dict, names: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(names)):
        make_settings(**config)


def test_fee_rate_body_limit_and_jwt_key_take_effect(inproc) -> None:
    server = inproc(fee_rate=0.1, max_body_bytes=200, jwt_key="configured-key-" * 3)
    api = server.api
    ref = api.create(amount=1234).json()["ref"]
    assert api.find(ref).json()["fee"] == 123.4
    token = api.token()
    assert jwt.decode(token, "configured-key-" * 3, algorithms=["HS256"])["sub"] == "access"
    headers = {**api.headers(), "Content-Type": "application/json"}
    body = b'{"amount": 100, "number": "0781234567", "pad": "'
    exact = body + b"x" * (200 - len(body) - 2) + b'"}'
    assert len(exact) == 200
    assert api.http.post("/transactions/cashin", content=exact, headers=headers).status_code == 200
    over = api.http.post("/transactions/cashin", content=exact + b" ", headers=headers)
    assert over.status_code == 413 and over.json()["code"] == "payload_too_large"


def test_secrets_are_salted_scrypt_hashes(tmp_path: Path) -> None:
    first, second = hash_secret("s3cret", n=2**10), hash_secret("s3cret", n=2**10)
    assert first != second  # a fresh salt each time
    assert first.startswith("scrypt$") and "s3cret" not in first
    assert verify_secret("s3cret", first) and verify_secret("s3cret", second)
    assert not verify_secret("s3cret ", first) and not verify_secret("\ud800", first)
    server = InProcessStub(make_settings(db=str(tmp_path / "h.db")))
    try:
        app = server.applications[0]
        stored = server.call(lambda: server.stub.store.app(app.client_id).secret_hash)
        scheme, n, r, p, salt, digest = stored.split("$")
        assert scheme == "scrypt" and len(bytes.fromhex(salt)) == 16 and int(n) >= 2**14
        assert verify_secret(app.client_secret, stored)
    finally:
        server.close()
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        dump = "\n".join(db.iterdump())
    assert app.client_secret not in dump


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    import argparse

    from stub_server.cli import register, settings_from_args

    path = tmp_path / "stub.yaml"
    path.write_text(yaml.safe_dump({"port": 9999, "access_ttl_s": 5, "faults": ["wrong-kind"]}))
    parser = register(argparse.ArgumentParser().add_subparsers())
    args = parser.parse_args(
        ["--config", str(path), "--host", "::1", "--port", "0", "--db", ":memory:",
         "--credentials", "c.yaml", "--access-ttl", "1", "--refresh-ttl", "2",
         "--pending-timeout", "3", "--no-sandbox", "--fault", "refs-reused",
         "--variant", "no-rotation", "--strict-auth"]
    )  # fmt: skip
    s = settings_from_args(args)
    assert (s.host, s.port, s.db, s.credentials) == ("::1", 0, ":memory:", "c.yaml")
    assert (s.access_ttl_s, s.refresh_ttl_s, s.pending_timeout_s) == (1, 2, 3)
    assert s.sandbox is False and s.strict_auth is True
    assert s.faults == {"wrong-kind", "refs-reused"} and s.variants == {"no-rotation"}
    defaults = settings_from_args(parser.parse_args([]))
    assert defaults.sandbox is True and defaults.port == 8080
    assert defaults.strict_auth is False
