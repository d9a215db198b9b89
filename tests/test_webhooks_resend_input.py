"""``paysuite webhooks resend`` takes EVENT_ID as an id and the stub's answer as untrusted: a
path in the id is refused before anything is sent, and an answer that is not the stub's list of
deliveries (not JSON, endless) is one line and exit status 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hostile import hostile_server
from webhookstub import cashin, free_port, hooked_stub

from paysuite_core import tokens
from paysuite_core.launcher import stop_stub
from paysuite_core.url_paths import NotAnId, id_segment, segment

RESEND = [sys.executable, "-m", "paysuite", "webhooks", "resend"]


def _resend(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RESEND, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "value",
    ["../../transactions/x/cancel?", "a/b", "a\tb", "..", "", "a b", "a?b", "x" * 129, "é"],
)
def test_a_value_that_is_not_an_id_is_refused(value: str) -> None:
    with pytest.raises(NotAnId, match="is not an id"):
        id_segment(value, "EVENT_ID")


def test_an_id_is_one_segment_and_any_value_is_encoded_as_one() -> None:
    uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert id_segment(uuid) == uuid and id_segment("evt_123") == "evt_123"
    assert segment("../x?y#z\t") == "..%2Fx%3Fy%23z%09"
    assert segment("..") == "%2E%2E" and segment(".") == "%2E"


@pytest.mark.slow
def test_a_path_in_event_id_is_refused_and_the_transaction_stays_pending(tmp_path: Path) -> None:
    stub = hooked_stub(tmp_path / "stub", free_port())
    try:
        ref = cashin(stub, confirm=False)
        run = _resend(f"../../transactions/{ref}/cancel?", "--stub", stub.root_url)
        assert run.returncode == 2, run.stdout + run.stderr
        assert run.stderr.count("\n") == 1 and "is not an id" in run.stderr, run.stderr
        app = next(a for a in stub.config().applications if a.privilege == "read-write")
        with httpx.Client(base_url=stub.base_url, timeout=15) as http:
            pair = tokens.authorize(tokens.httpx_send(http, stub.base_url), app)
            assert pair is not None
            headers = {"Authorization": f"Bearer {pair.json()['access']}"}
            found = http.get(f"/transactions/find/{ref}", headers=headers)
        assert found.status_code == 200 and found.json()["status"] == "pending", found.text
    finally:
        stop_stub(stub)


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("invalid-json", "is not the stub's list of deliveries"),
        ("deep-json", "is not the stub's list of deliveries"),
        ("endless-chunked", "over the 1048576-byte limit"),
        ("gzip-bomb", "over the 1048576-byte limit"),
        ("endless-headers", "a head of more than 100 KiB"),
        ("half-sent", "no answer"),
    ],
)
def test_an_answer_that_is_not_the_stubs_is_one_line(behaviour: str, said: str) -> None:
    with hostile_server(behaviour) as server:
        run = _resend("0f8fad5b-d9cb-469f-a165-70867728950e", "--stub", server.root_url)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    assert said in run.stderr, run.stderr
