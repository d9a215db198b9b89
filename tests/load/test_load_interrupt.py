"""Ctrl-C during ``paysuite load`` ends as a plain Locust run does: the load stops, the
reconciliation runs against a target that is still there, the reports are written, and paysuite
exits with the verdict's status only then.

A terminal's Ctrl-C is SIGINT to the whole foreground process group: here ``paysuite load`` is
started in a process group of its own and the group gets the SIGINT, as from a terminal. A
SIGTERM to paysuite alone (a cancelled CI job) ends the run the same way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from paysuite_core.launcher import start_stub, stop_stub

pytestmark = pytest.mark.slow


def _wait_for_line(log: Path, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in the output within {timeout_s:g} s:\n{log.read_text()}")


def _alive(procs: list[psutil.Process]) -> list[str]:
    left = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(" ".join(proc.cmdline()))
        except psutil.NoSuchProcess:
            pass
    return left


def _ends(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(
    ("how", "extra"),
    [
        ("ctrl-c", []),  # the terminal's SIGINT to the whole process group
        ("sigterm", []),  # SIGTERM to paysuite alone (a cancelled CI job)
        # started as a script's background job (SIGINT ignored, inherited): the SIGINT paysuite
        # passes to Locust must still stop it
        ("sigterm-background", []),
        # Locust's workers in sessions of their own: the master stops them after their last
        # statistics, so every acknowledged create is in the statistics too
        ("ctrl-c", ["--workers", "2"]),
    ],
)
def test_ctrl_c_waits_for_the_verdict_and_keeps_the_bundled_stub_for_it(
    tmp_path: Path, how: str, extra: list[str]
) -> None:
    report_dir = tmp_path / "report"
    log = tmp_path / "paysuite.log"
    with log.open("wb") as out:
        paysuite = subprocess.Popen(
            [sys.executable, "-m", "paysuite", "load", "--report-dir", str(report_dir),
             "--duration", "30", *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the SIGINT below is a terminal's
            # as a terminal starts it (Ctrl-C not ignored, whatever this worker inherited), or
            # as a script's background job
            preexec_fn=lambda: signal.signal(
                signal.SIGINT, signal.SIG_IGN if how == "sigterm-background" else signal.SIG_DFL
            ),
        )  # fmt: skip
    try:
        _wait_for_line(log, "All users spawned", 45)
        time.sleep(3)  # some acknowledged creates to reconcile
        started = psutil.Process(paysuite.pid).children(recursive=True)
        assert any("stub_server" in " ".join(p.cmdline()) for p in started), started
        if how == "ctrl-c":
            os.killpg(paysuite.pid, signal.SIGINT)
        else:
            os.kill(paysuite.pid, signal.SIGTERM)
        code = paysuite.wait(timeout=90)
        written = (report_dir / "load.json").is_file()  # before anything else can write it
    finally:
        if paysuite.poll() is None:
            os.killpg(paysuite.pid, signal.SIGKILL)
            paysuite.wait(10)
    output = log.read_text(errors="replace")
    assert written, f"paysuite exited ({code}) before Locust wrote load.json:\n{output[-3000:]}"
    assert "paysuite: interrupted: waiting" in output
    summary = json.loads((report_dir / "load.json").read_text())
    assert code == summary["exit_code"], output[-3000:]
    # nothing failed in what ran, but a run cut short is not a pass
    assert code == 130 and "paysuite: result: INTERRUPTED (exit 130)" in output, output[-3000:]
    assert summary["stop_reason"].startswith("interrupted"), summary["stop_reason"]
    recon = summary["reconciliation"]
    assert recon["acknowledged"] > 0
    assert recon["checked"] == recon["found"] == recon["unique_refs"], recon
    assert "could not be checked" not in " ".join(recon["reasons"]), recon["reasons"]
    assert recon["passed"] is True, recon["reasons"]
    ops = summary["operations"]
    counted = sum(ops.get(op, {}).get("requests", 0) for op in ("cashin", "cashout"))
    assert counted == recon["acknowledged"], (counted, recon["acknowledged"])
    time.sleep(0.5)
    assert not _alive(started), "left running after paysuite exited"


def test_a_stub_in_its_own_session_ends_with_the_process_that_started_it(
    tmp_path: Path,
) -> None:
    """Out of the terminal's process group, the stub must still not outlive its starter: here
    the starter dies without ``stop_stub`` (as under SIGKILL)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    starter = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from paysuite_core.launcher import start_stub
        stub = start_stub(Path({str(tmp_path / "stub")!r}), own_session=True)
        print(stub.process.pid, os.getsid(stub.process.pid), os.getsid(0), flush=True)
        os._exit(0)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", starter], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    pid, stub_sid, starter_sid = (int(n) for n in result.stdout.split())
    assert stub_sid != starter_sid
    assert _ends(pid, 15), "the stub outlived the process that started it"


def test_a_stub_in_its_own_session_is_still_stopped_by_stop_stub(tmp_path: Path) -> None:
    stub = start_stub(tmp_path, own_session=True)
    try:
        assert os.getsid(stub.process.pid) != os.getsid(0)
    finally:
        code = stop_stub(stub)
    assert stub.process.poll() is not None, code
