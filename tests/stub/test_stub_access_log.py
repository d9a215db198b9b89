"""The stub's command line around the store and the log: ``--access-log clf|json`` (off by
default), no silent creation of a database's folder, and ``apps create`` only on an existing
database unless ``--create-db``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from paysuite_core.launcher import running_stub
from stub_server.settings import SettingsError, settings_from_mapping

pytestmark = pytest.mark.slow

CLF_LINE = re.compile(
    r"^127\.0\.0\.1 - - \[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "
    r'"GET /healthz\?probe=1 HTTP/1\.1" 200 \d+$'
)


def _stub(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stub_server", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_json_access_log_to_a_file(tmp_path: Path) -> None:
    log = tmp_path / "access.jsonl"
    with running_stub(
        tmp_path / "s", extra_args=["--access-log", "json", "--access-log-file", str(log)]
    ) as stub:
        httpx.get(f"{stub.base_url}/transactions/find/nope", headers={"User-Agent": "t/1"})
        httpx.get(f"{stub.root_url}/healthz")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    find = next(line for line in lines if line["path"] == "/api/transactions/find/nope")
    assert find["method"] == "GET" and find["status"] == 401 and find["version"] == "HTTP/1.1"
    assert find["remote"] == "127.0.0.1" and find["user_agent"] == "t/1"
    assert find["bytes"] > 0 and find["duration_ms"] >= 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", find["time"])
    assert log.stat().st_mode & 0o777 == 0o600


def test_clf_access_log_to_stderr_and_off_by_default(tmp_path: Path) -> None:
    with running_stub(tmp_path / "on", extra_args=["--access-log", "clf"]) as stub:
        httpx.get(f"{stub.root_url}/healthz?probe=1")
    logged = (tmp_path / "on" / "stub.stderr.log").read_text().splitlines()
    assert any(CLF_LINE.match(line) for line in logged), logged
    with running_stub(tmp_path / "off") as stub:
        httpx.get(f"{stub.root_url}/healthz?probe=1")
    assert "/healthz" not in (tmp_path / "off" / "stub.stderr.log").read_text()


def test_access_log_setting_values() -> None:
    assert settings_from_mapping({"access_log": "json"}).access_log == "json"
    assert settings_from_mapping({"access_log": "none"}).access_log is None
    with pytest.raises(SettingsError, match="access_log"):
        settings_from_mapping({"access_log": "combined"})


def test_missing_database_folder_is_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    result = _stub("--port", "0", "--db", str(missing / "x.db"))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "does not exist" in result.stderr and str(missing) in result.stderr
    assert not missing.exists()
    assert "listening" not in result.stdout


def test_missing_access_log_folder_is_exit_1(tmp_path: Path) -> None:
    result = _stub(
        "--port", "0", "--db", ":memory:", "--access-log", "clf",
        "--access-log-file", str(tmp_path / "nope" / "access.log"),
    )  # fmt: skip
    assert result.returncode == 1
    assert "does not exist" in result.stderr and "access log" in result.stderr
    assert not (tmp_path / "nope").exists()


def test_apps_create_needs_an_existing_database(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    base = ("apps", "create", "--merchant", "M1", "--privilege", "cashin", "--db")
    result = _stub(*base, str(typo))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "no database at" in result.stderr and "--create-db" in result.stderr
    assert not typo.exists() and result.stdout == ""
    created = _stub(*base, str(typo), "--create-db")
    assert created.returncode == 0, created.stderr
    assert "client_secret:" in created.stdout
    again = _stub(*base, str(typo))  # now it exists: no flag needed
    assert again.returncode == 0, again.stderr
    nested = _stub(*base, str(tmp_path / "no" / "x.db"), "--create-db")
    assert nested.returncode == 1 and "does not exist" in nested.stderr
    assert not (tmp_path / "no").exists()
