"""``paysuite webhooks trigger`` and ``resend`` toward the stub behind an HTTPS front
(tests/tlsfront.py): with ``--ca-bundle`` (and the client certificate) they pass, without it one
line naming the host, the cause and the option, exit 2; ``--insecure`` is said."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tlsfront import TLSFront
from webhookstub import free_port, hooked_stub

from paysuite_core.launcher import RunningStub, stop_stub

COMMAND = [sys.executable, "-m", "paysuite", "webhooks"]
INSECURE = "INSECURE: TLS certificates not verified (--insecure)"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    """A stub delivering to a port nobody listens on: the deliveries are logged, retried."""
    running = hooked_stub(tmp_path_factory.mktemp("stub"), free_port())
    try:
        yield running
    finally:
        stop_stub(running)


@pytest.fixture
def front(request: pytest.FixtureRequest, stub: RunningStub, tmp_path: Path) -> Iterator[TLSFront]:
    port = int(stub.root_url.rsplit(":", 1)[1])
    with TLSFront(port, request.param, tmp_path / "tls") as running:
        yield running


def _config(stub: RunningStub, front: TLSFront, directory: Path) -> str:
    """The stub's credentials with every URL of it (base URL, the sandbox customer) the front's."""
    text = stub.credentials_path.read_text(encoding="utf-8").replace(stub.root_url, front.origin)
    path = directory / "target.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60)


def _processed_event(stub: RunningStub, ref: str) -> str:
    """The event_id of ``ref``'s transaction:processed, from the stub's delivery log."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        rows = httpx.get(
            f"{stub.root_url}/_sandbox/webhooks/deliveries", params={"ref": ref}, timeout=5
        ).json()["deliveries"]
        for row in rows:
            if row["event_kind"] == "transaction:processed":
                return str(row["event_id"])
        time.sleep(0.1)
    raise AssertionError(f"no transaction:processed delivery of {ref}")


def _trigger_then_resend(
    stub: RunningStub, config: str, *flags: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    trigger = _run("trigger", "--config", config, *flags)
    assert trigger.returncode == 0, trigger.stdout + trigger.stderr
    ref = trigger.stdout.split()[2]
    assert f"confirmed {ref}: status success" in trigger.stdout
    resend = _run("resend", _processed_event(stub, ref), "--config", config, *flags)
    assert resend.returncode == 0, resend.stdout + resend.stderr
    assert "resending transaction:processed" in resend.stdout
    return trigger, resend


@pytest.mark.parametrize("front", ["private-ca", "mtls"], indirect=True)
def test_trigger_and_resend_pass_over_tls_with_the_options(
    front: TLSFront, stub: RunningStub, tmp_path: Path
) -> None:
    trigger, resend = _trigger_then_resend(stub, _config(stub, front, tmp_path), *front.flags())
    assert INSECURE not in trigger.stderr + resend.stderr


@pytest.mark.parametrize(
    ("front", "given", "line"),
    [
        ("private-ca", False, "its certificate comes from a CA that is not trusted"),
        ("mtls", True, "the server requires a client certificate: give it with --client-cert"),
        ("wrong-host", True, "its certificate is not for this"),
    ],
    indirect=["front"],
)
def test_without_the_options_each_says_why_in_one_line(
    front: TLSFront, given: bool, line: str, stub: RunningStub, tmp_path: Path
) -> None:
    config = _config(stub, front, tmp_path)
    flags = ["--ca-bundle", str(front.ca_pem)] if given else []
    for prog, args in (("trigger", ["--config", config]), ("resend", ["e1", "--config", config])):
        done = _run(prog, *args, *flags)
        assert done.returncode == 2, done.stdout + done.stderr
        said = done.stderr.strip()
        assert said.startswith(f"paysuite webhooks {prog}: TLS: 127.0.0.1:{front.port}: "), said
        assert line in said and len(said.splitlines()) == 1, said


@pytest.mark.parametrize("front", ["wrong-host"], indirect=True)
def test_insecure_passes_a_wrong_host_and_says_so(
    front: TLSFront, stub: RunningStub, tmp_path: Path
) -> None:
    trigger, resend = _trigger_then_resend(stub, _config(stub, front, tmp_path), "--insecure")
    for prog, done in (("trigger", trigger), ("resend", resend)):
        assert f"paysuite webhooks {prog}: {INSECURE}" in done.stderr
