"""A rotation's overlap is bounded (``--overlap`` from 0 to 7d), and a previous secret whose
overlap has ended is removed from the secrets file: the file holds no key that still signs
nothing but could forge a delivery for a receiver that never switched."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stub_server import timefmt
from stub_server.store import Store, WebhookEndpoint
from stub_server.store.webhook_secrets import (
    MAX_OVERLAP_S,
    EndpointSecrets,
    SecretsFile,
    check_overlap,
    secrets_path,
)


def _db_with_endpoint(tmp_path: Path) -> Path:
    db = tmp_path / "stub.db"
    store = Store(str(db))
    store.put_webhook_endpoint(
        WebhookEndpoint("development", "http://127.0.0.1:9/", "whsec_old"), timefmt.now_us()
    )
    store.close()
    return db


def _webhooks(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "paysuite", "stub", "webhooks", *args, "--db", str(db)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _file_text(db: Path) -> str:
    path = secrets_path(str(db))
    assert path is not None
    return path.read_text(encoding="utf-8")


def test_the_overlap_is_bounded_and_the_bound_is_said(tmp_path: Path) -> None:
    db = _db_with_endpoint(tmp_path)
    for too_long in ("99999d", "8d", "7d1s"):
        refused = _webhooks(db, "rotate", "--overlap", too_long)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"--overlap {too_long}: " in refused.stderr and "to 7d (a week" in refused.stderr
    assert "whsec_old" in _file_text(db) and '"previous"' not in _file_text(db)  # untouched
    week = _webhooks(db, "rotate", "--overlap", "7d")
    assert week.returncode == 0, week.stderr
    assert check_overlap(0) == 0 and check_overlap(MAX_OVERLAP_S) == MAX_OVERLAP_S
    with pytest.raises(ValueError, match="7d"):
        check_overlap(MAX_OVERLAP_S + 1)


def test_an_expired_previous_secret_leaves_the_file(tmp_path: Path) -> None:
    db = _db_with_endpoint(tmp_path)
    rotated = _webhooks(db, "rotate", "--overlap", "1s")
    assert rotated.returncode == 0, rotated.stderr
    assert "whsec_old" in _file_text(db)  # during the overlap it still signs
    time.sleep(1.2)
    listed = _webhooks(db, "list")  # any reader of the secrets prunes: the stub, each delivery
    assert listed.returncode == 0, listed.stderr
    entry = json.loads(_file_text(db))["development"]
    assert set(entry) == {"secret"} and "whsec_old" not in _file_text(db)


def test_a_write_prunes_every_mode_and_keeps_what_another_process_wrote(tmp_path: Path) -> None:
    db = str(tmp_path / "stub.db")
    now = timefmt.now_us()
    ours, theirs = SecretsFile(db), SecretsFile(db)
    ours.put("development", EndpointSecrets("whsec_a", "whsec_gone", now - 1))
    assert ours.get("development") == EndpointSecrets("whsec_a")  # ended: not even written
    theirs.put("production", EndpointSecrets("whsec_b", "whsec_still", now + 60_000_000))
    ours.put("staging", EndpointSecrets("whsec_c"))  # reads the file again under the lock
    on_disk = json.loads(_file_text(Path(db)))
    assert sorted(on_disk) == ["development", "production", "staging"]
    assert on_disk["production"]["previous"] == "whsec_still"  # its overlap runs on
    later = now + 120_000_000
    assert theirs.all(later)["production"] == EndpointSecrets("whsec_b")
    assert "whsec_still" not in _file_text(Path(db))
