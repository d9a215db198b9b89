"""Hardening, in process: the signing key out of the database, private files, authorize limits,
the bounded hashing queue, no existence oracle, slow bodies, ambiguous idempotency keys."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jwt
import pytest
from store_checks import count_transactions
from stubkit import InProcessStub, make_settings, new_number, refresh_url

from paysuite_core.tokens import AUTHORIZE_PATH
from stub_server import signing_key
from stub_server.ratelimit import Bucket, KeyedLimiter

AUTHORIZE = AUTHORIZE_PATH


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- secrets -----------------------------------------------------------------------------------
def test_database_files_and_key_file_are_private(inproc, tmp_path: Path) -> None:
    db = tmp_path / "stub.db"
    server = inproc(db=str(db))
    assert server.api.create().status_code == 200  # a write: the WAL and SHM exist now
    for suffix in ("", "-wal", "-shm"):
        assert _mode(Path(f"{db}{suffix}")) == 0o600, suffix
    key_file = Path(f"{db}.jwt-key")
    assert _mode(key_file) == 0o600
    key = key_file.read_text().strip()
    assert jwt.decode(server.api.token(), key, algorithms=["HS256"])["sub"] == "access"
    server.close()
    raw = b"".join(Path(f"{db}{s}").read_bytes() for s in ("", "-wal") if Path(f"{db}{s}").exists())
    assert key.encode() not in raw  # a copied database cannot mint tokens


def test_an_existing_database_is_tightened(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    sqlite3.connect(db).close()  # a database file made by hand (or copied), mode 0644
    os.chmod(db, 0o644)
    server = InProcessStub(make_settings(db=str(db)))
    try:
        assert _mode(db) == 0o600
    finally:
        server.close()


def test_a_configured_or_environment_key_wins(tmp_path: Path, monkeypatch) -> None:
    assert signing_key.resolve("from-config", str(tmp_path / "a.db")) == "from-config"
    monkeypatch.setenv(signing_key.ENV_VAR, "from-env")
    assert signing_key.resolve(None, str(tmp_path / "a.db")) == "from-env"
    assert not (tmp_path / "a.db.jwt-key").exists()


def test_rotation_refuses_old_tokens(tmp_path: Path) -> None:
    db = tmp_path / "rot.db"
    server = InProcessStub(make_settings(db=str(db)))
    app = server.applications[0]
    try:
        old = server.api.pair()
    finally:
        server.close()
    result = subprocess.run(
        [sys.executable, "-m", "paysuite", "stub", "keys", "rotate", "--db", str(db)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert str(db) + ".jwt-key" in result.stdout and _mode(Path(f"{db}.jwt-key")) == 0o600
    again = InProcessStub(make_settings(db=str(db)), apps=())
    try:
        http = again.api.http
        found = http.get(
            "/events/transactions", headers={"Authorization": f"Bearer {old['access']}"}
        )
        assert found.status_code == 401 and found.json()["code"] == "invalid_token"
        assert http.get(refresh_url(old["refresh"])).status_code == 401
        fresh = http.post(
            AUTHORIZE, json={"client_id": app.client_id, "client_secret": app.client_secret}
        )
        assert fresh.status_code == 200
    finally:
        again.close()


# -- authorize limits ---------------------------------------------------------------------------
def test_limiter_refills_and_forgets_the_oldest() -> None:
    now = [0.0]
    limiter = KeyedLimiter(Bucket(2, 1.0), max_keys=3, clock=lambda: now[0])
    limiter.take("a")
    limiter.take("a")
    assert limiter.wait_s("a") == pytest.approx(1.0)
    now[0] = 0.5
    assert limiter.wait_s("a") == pytest.approx(0.5)
    now[0] = 1.0
    assert limiter.wait_s("a") == 0
    for key in ("b", "c", "d"):
        limiter.take(key)
    assert "a" not in limiter._state and len(limiter._state) == 3


def _attempt(http: httpx.Client, client_id: str, secret: str = "wrong") -> httpx.Response:
    return http.post(AUTHORIZE, json={"client_id": client_id, "client_secret": secret})


def test_wrong_secrets_are_limited_per_client_id(inproc) -> None:
    # One attempt back every 10 s: four slow hashes on a loaded machine stay inside one refill.
    limits = {"per_client": {"burst": 3, "per_s": 0.1}, "per_peer": {"burst": 100, "per_s": 1}}
    server = inproc(authorize_limits=limits)
    app, other = server.applications
    http = server.api.http
    assert [_attempt(http, app.client_id).status_code for _ in range(3)] == [401] * 3
    limited = _attempt(http, app.client_id)
    assert limited.status_code == 429
    assert limited.json()["code"] == "too_many_attempts" and limited.json()["status"] == 429
    assert 1 <= int(limited.headers["Retry-After"]) <= 10
    # the right secret is limited too (it has never been verified): no guessing loophole
    assert _attempt(http, app.client_id, app.client_secret).status_code == 429
    assert _attempt(http, other.client_id, other.client_secret).status_code == 200
    # an unknown client_id gets exactly the same treatment (no existence oracle)
    statuses = [_attempt(http, "no-such-client").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]


def test_wrong_secrets_are_limited_per_peer_but_verified_pairs_pass(inproc) -> None:
    limits = {"per_client": {"burst": 100, "per_s": 1}, "per_peer": {"burst": 4, "per_s": 0.5}}
    server = inproc(authorize_limits=limits)
    app = server.applications[0]
    http = server.api.http
    assert _attempt(http, app.client_id, app.client_secret).status_code == 200  # verified once
    statuses = [_attempt(http, f"guess-{i}").status_code for i in range(4)]
    assert statuses == [401, 401, 401, 429]
    # the verified pair costs no hash and is never limited
    assert _attempt(http, app.client_id, app.client_secret).status_code == 200


def test_a_full_hashing_queue_answers_503_at_once(inproc) -> None:
    limits = {"hash_workers": 1, "hash_queue": 0, "per_peer": {"burst": 100, "per_s": 1}}
    server = inproc(authorize_limits=limits)

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.post(AUTHORIZE, json={"client_id": f"c{i}", "client_secret": "x"})
                    for i in range(6)
                )
            )

    responses = asyncio.run(burst())
    statuses = sorted(r.status_code for r in responses)
    assert statuses.count(401) >= 1 and statuses.count(503) >= 1, statuses
    busy = next(r for r in responses if r.status_code == 503)
    assert busy.json()["code"] == "busy" and busy.headers["Retry-After"] == "1"


def test_known_and_unknown_client_ids_cost_the_same(inproc) -> None:
    server = inproc()
    app = server.applications[0]
    http = server.api.http

    def timed(client_id: str) -> float:
        started = time.perf_counter()
        assert _attempt(http, client_id).status_code == 401
        return time.perf_counter() - started

    known = statistics.median(timed(app.client_id) for _ in range(5))
    unknown = statistics.median(timed("no-such-client") for _ in range(5))
    assert unknown > 0.5 * known and known > 0.5 * unknown, (known, unknown)


# -- bodies and keys ----------------------------------------------------------------------------
def test_a_slow_body_gets_408(inproc) -> None:
    server = inproc(body_timeout_s=0.5)
    headers = server.api.headers(**{"Content-Type": "application/json"})

    def trickle():
        yield b'{"amount": 100, '
        time.sleep(1.5)
        yield b'"number": "0781234567"}'

    response = httpx.post(
        f"{server.base_url}/transactions/cashin", content=trickle(), headers=headers, timeout=10
    )
    assert response.status_code == 408
    assert response.json()["code"] == "request_timeout"


@pytest.mark.parametrize(
    ("headers", "query", "code", "fragment"),
    [
        ([("Idempotency-Key", "a"), ("Idempotency-Key", "b")], "", "ambiguous", "2 times"),
        ([("Idempotency-Key", "a"), ("Idempotency-Key", "a")], "", "ambiguous", "header"),
        ([], "?Idempotency-Key=a&Idempotency-Key=b", "ambiguous", "query parameter"),
        ([], "?Idempotency-Key=a%00b", "invalid", "U+0000"),
        ([], "?Idempotency-Key=a%0Ab", "invalid", "U+000A"),
        ([("Idempotency-Key", "a\tb")], "", "invalid", "U+0009"),
        ([], "?Idempotency-Key=a%C2%85", "invalid", "U+0085"),
    ],
)
def test_ambiguous_or_control_keys_are_400(
    inproc, headers: list[tuple[str, str]], query: str, code: str, fragment: str
) -> None:
    server = inproc()
    all_headers = [*server.api.headers().items(), *headers]
    body = {"amount": 100, "number": new_number()}
    response = server.api.http.post(f"/transactions/cashin{query}", json=body, headers=all_headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == f"{code}_idempotency_key"
    assert fragment in response.json()["message"]
    assert server.call(count_transactions, server.stub.store) == 0
