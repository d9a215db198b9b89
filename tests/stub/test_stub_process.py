"""The stub as a process: launcher, credentials file, apps create, SIGKILL durability, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from stubkit import Api, new_number

from paysuite_core.launcher import StubStartError, running_stub, start_stub, stop_stub
from paysuite_core.target_config import RWANDA_MOBILE_PATTERN, load_target_config
from paysuite_core.tokens import AUTHORIZE_PATH

pytestmark = pytest.mark.slow


def _db_bytes(db: Path) -> bytes:
    """The database and its WAL, whichever exist."""
    files = [db, db.with_name(db.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def test_credentials_file(stub) -> None:
    mode = stat.S_IMODE(os.stat(stub.credentials_path).st_mode)
    assert mode == 0o600
    config = load_target_config(stub.credentials_path)
    assert config.base_url == stub.base_url
    assert {(a.merchant, a.privilege) for a in config.applications} == {
        ("DEMO01", "read"),
        ("DEMO01", "read-write"),
        ("DEMO01", "cashin"),
        ("DEMO01", "cashout"),
        ("DEMO02", "read-write"),
    }
    assert config.customer.driver == "sandbox"
    assert config.customer.confirm is not None and config.customer.cancel is not None
    assert config.customer.confirm.url("R") == f"{stub.root_url}/_sandbox/transactions/R/confirm"
    assert config.customer.cancel.url("R") == f"{stub.root_url}/_sandbox/transactions/R/cancel"
    assert config.access_token_ttl_s == 900 and config.max_wait_s == 30
    assert config.pending_timeout_s == 600  # RC-18, declared for LIFE-008
    assert config.amount.min == 100 and config.amount.max == 10_000_000
    assert config.effective_number_pattern == RWANDA_MOBILE_PATTERN
    raw = _db_bytes(stub.db_path)
    for app in config.applications:  # the database holds hashes, never the secret
        assert app.client_secret.encode() not in raw


async def _concurrent_creations(api: Api, n: int) -> list[str]:
    """``n`` simultaneous cashins; the refs of those answered 200."""
    headers = api.headers()
    limits = httpx.Limits(max_connections=n)
    async with httpx.AsyncClient(base_url=api.base_url, timeout=30, limits=limits) as client:
        responses = await asyncio.gather(
            *(
                client.post("/transactions/cashin", json={"amount": 100, "number": new_number()},
                            headers=headers)
                for _ in range(n)
            )
        )  # fmt: skip
    refs = [r.json()["ref"] for r in responses if r.status_code == 200]
    assert len(refs) == n
    return refs


def _free_port_other_than(taken: int) -> int:
    """A loopback port free now and not ``taken`` (the OS may hand a just-freed port back)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != taken:
            return port


def test_sigkill_durability_and_restart(tmp_path: Path) -> None:
    """Every acknowledged create survives kill -9; the restart keeps the secrets usable."""
    first = start_stub(tmp_path, extra_args=["--access-ttl", "60"])
    config = first.config()
    api = Api(first.base_url, first.root_url, config.applications)
    created = []
    try:
        for i in range(25):
            response = api.create("cashin" if i % 2 else "cashout", key=f"k{i}")
            assert response.status_code == 200
            created.append(response.json()["ref"])
        confirmed = created[0]
        assert api.sandbox(confirmed, "confirm").status_code == 200
        token = api.token()
        # concurrent creations share group commits: each one acknowledged must survive too
        created += asyncio.run(_concurrent_creations(api, 40))
    finally:
        status = stop_stub(first, kill=True)
        api.close()
    assert status == -9
    # another port than the first run's, so that the credentials file can only name it if the
    # restart rewrote the file rather than kept the old one
    port = _free_port_other_than(urlsplit(first.root_url).port or 0)
    second = start_stub(tmp_path, extra_args=["--port", str(port)])
    try:
        assert second.root_url != first.root_url
        config2 = second.config()
        assert [a.client_secret for a in config2.applications] == [
            a.client_secret for a in config.applications
        ]
        assert config2.base_url == second.base_url
        assert config2.access_token_ttl_s == 900  # rewritten with the new settings
        api2 = Api(second.base_url, second.root_url, config2.applications)
        # tokens survive too: the signing key is persisted
        headers = {"Authorization": f"Bearer {token}"}
        for ref in created:
            found = api2.http.get(f"/transactions/find/{ref}", headers=headers)
            assert found.status_code == 200, found.text
            events = api2.events(ref=ref).json()
            kinds = sorted(e["event_kind"] for e in events["transactions"])
            expected = ["transaction:created"]
            if ref == confirmed:
                expected.append("transaction:processed")
            assert kinds == expected
        assert api2.create(key="k3").status_code == 409  # the keys survived as well
        api2.close()
    finally:
        assert stop_stub(second) == 0


def test_sigterm_finishes_in_flight_requests(tmp_path: Path) -> None:
    stub = start_stub(tmp_path)
    api = Api(stub.base_url, stub.root_url, stub.config().applications)
    headers = api.headers(**{"Content-Type": "application/json", "Idempotency-Key": "inflight"})
    first_half_sent, release = threading.Event(), threading.Event()
    result: dict = {}

    def body():
        yield b'{"amount": 100, '
        first_half_sent.set()
        release.wait(10)
        yield b'"number": "0781234567"}'

    def send() -> None:
        try:
            result["response"] = httpx.post(
                f"{stub.base_url}/transactions/cashin", content=body(), headers=headers, timeout=20
            )
        except Exception as exc:  # reported by the assertion below
            result["error"] = exc

    sender = threading.Thread(target=send)
    sender.start()
    assert first_half_sent.wait(10)
    time.sleep(0.3)
    stub.process.send_signal(15)
    time.sleep(0.3)
    release.set()
    sender.join(20)
    assert "error" not in result, result
    assert result["response"].status_code == 200, result["response"].text
    assert stub.process.wait(15) == 0
    api.close()
    ref = result["response"].json()["ref"]
    with running_stub(tmp_path) as again:
        api2 = Api(again.base_url, again.root_url, again.config().applications)
        assert api2.find(ref).status_code == 200
        api2.close()


def test_apps_create(tmp_path: Path) -> None:
    db = tmp_path / "apps.db"  # a new database, asked for explicitly
    result = subprocess.run(
        [sys.executable, "-m", "paysuite", "stub", "apps", "create", "--merchant", "SHOP9",
         "--privilege", "cashout", "--db", str(db), "--create-db"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = yaml.safe_load(result.stdout)
    assert printed["privilege"] == "cashout" and printed["merchant"] == "SHOP9"
    secret = printed["client_secret"]
    assert secret.encode() not in _db_bytes(db)
    with running_stub(tmp_path / "run", extra_args=["--db", str(db)]) as stub:
        http = httpx.Client(base_url=stub.base_url)
        pair = http.post(
            AUTHORIZE_PATH,
            json={"client_id": printed["client_id"], "client_secret": secret},
        )
        assert pair.status_code == 200
        headers = {"Authorization": f"Bearer {pair.json()['access']}"}
        body = {"amount": 100, "number": new_number()}
        created = http.post("/transactions/cashout", json=body, headers=headers)
        assert created.status_code == 200
        assert created.json()["kind"] == "CASHOUT"
        assert (
            http.get(f"/transactions/find/{created.json()['ref']}", headers=headers).json()[
                "merchant"
            ]
            == "SHOP9"
        )
        assert http.post("/transactions/cashin", json=body, headers=headers).status_code == 403
        http.close()


def test_bad_privilege_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stub_server", "apps", "create", "--merchant", "X",
         "--privilege", "admin", "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "read-write" in result.stderr


def test_unknown_fault_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stub_server", "--port", "0", "--db", ":memory:",
         "--fault", "no-such-fault"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "no-such-fault" in result.stderr and "idempotency-racy" in result.stderr
    with pytest.raises(StubStartError, match="no-such-fault"):
        start_stub(tmp_path, variants=["no-such-variant", "no-such-fault"], startup_timeout_s=10)


def test_memory_db_config_file_and_no_sandbox(tmp_path: Path) -> None:
    """``:memory:`` without --credentials writes to a temp dir; the config file applies."""
    config = tmp_path / "stub.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "access_ttl_s": 120,
                "amount": {"min": 500, "max": 9000},
                "number_pattern": r"^07\d{8}$",
                "sandbox": False,
            }
        )
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "paysuite", "stub", "--port", "0", "--db", ":memory:",
         "--config", str(config), "--access-ttl", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        listening = process.stdout.readline().strip()
        credentials = process.stdout.readline().strip()
        assert listening.startswith("paysuite stub listening on http://127.0.0.1:")
        root = listening.rsplit(" ", 1)[1]
        path = Path(credentials.removeprefix("credentials: "))
        assert path.is_absolute() and path.parent != Path.cwd()
        target = load_target_config(path)
        assert target.customer.driver == "none"
        assert target.access_token_ttl_s == 60  # the flag wins over the file
        assert (target.amount.min, target.amount.max) == (500, 9000)
        assert target.number_pattern == r"^07\d{8}$"
        api = Api(target.base_url, root, target.applications)
        assert api.create(amount=400).status_code == 400
        assert api.create(amount=600, number="0770000001").status_code == 200
        assert api.pair()["expires"] - time.time() <= 61
        assert httpx.post(f"{root}/_sandbox/transactions/{uuid.uuid4()}/confirm").status_code == 404
        api.close()
    finally:
        process.terminate()
        assert process.wait(15) == 0
        path.unlink(missing_ok=True)
        path.parent.rmdir()


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("amount: {min: 10, max: 5}\nportt: 3\n")
    result = subprocess.run(
        [sys.executable, "-m", "stub_server", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "portt" in result.stderr


def test_foreign_credentials_file_is_replaced(tmp_path: Path) -> None:
    """A credentials file naming none of the database's applications gets fresh ones."""
    with running_stub(tmp_path / "a") as first:
        foreign = first.config()
        text = first.credentials_path.read_text()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "credentials.yaml").write_text(text)
    with running_stub(tmp_path / "b") as second:
        fresh = second.config()
        assert {a.client_id for a in fresh.applications}.isdisjoint(
            a.client_id for a in foreign.applications
        )
        api = Api(second.base_url, second.root_url, fresh.applications)
        assert api.create().status_code == 200
        api.close()
