"""The battery: every paysuite command against every hostile mode, each run's whole process tree
under 300 MB, none exiting 0, none ending in a traceback, each writing its reports.

The modes are ``tests/hostile.py``'s (endless headers, a chunked gzip bomb, deep JSON, an endless
body, a half-sent body) and, for the replay, a HAR file too big to read (by its size, by its
entry count). Each command meets them where it reads a target: conform and the clients matrix
past their pre-flight (``api-then-``), load and trigger past authorize (``auth-then-``), the
proxy as the upstream of a request sent through it, the replay as the target of a recording,
``webhooks listen`` as the handler it forwards a delivery to and the target whose events list
it reads at the end, ``webhooks resend`` as the stub.

``python tests/test_hostile_battery.py`` runs the battery one case after another and prints the
table (command, mode, exit status, wall seconds, peak MB of the process tree).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script, too
from hostile import hostile_server, run_bounded, write_config

from paysuite_core.webhooks.signature import EVENT_ID_HEADER, SIGNATURE_HEADER, sign

#: The whole process tree of any command, whatever the target sends.
MAX_MB = 300
#: A run still going after this is killed (and fails its case).
BUDGET_S = 75
MODES = ("endless-headers", "gzip-bomb", "deep-json", "endless-chunked", "half-sent")
COMMANDS = ("conform", "load", "clients", "proxy", "replay", "listen", "resend", "trigger")
HAR_MODES = ("huge-har-size", "huge-har-entries")
#: Where each command first meets the hostile behaviour (tests/hostile.py's prefixes).
PREFIX = {"conform": "api-then-", "clients": "api-then-", "load": "auth-then-",
          "trigger": "auth-then-"}  # fmt: skip
#: The reports each command writes in its --report-dir (resend and trigger write none).
REPORTS = {
    "conform": ("conformance.json", "junit.xml", "report.html"),
    "clients": ("clients.json", "clients.html"),
    "load": ("load.json",),
    "proxy": ("conformance.json", "report.html"),
    "replay": ("conformance.json", "report.html"),
    "listen": ("conformance.json", "junit.xml", "report.html"),
}
LIMITS = ("--total-timeout", "3", "--read-timeout", "1.5", "--max-response-bytes", "1000000")
SECRET = "whsec_battery"
EVENT = "0f8fad5b-d9cb-469f-a165-70867728950e"
PAYSUITE = [sys.executable, "-m", "paysuite"]


@dataclass
class Row:
    command: str
    mode: str
    exit: int | None
    seconds: float
    peak_mb: float
    reports: tuple[str, ...]  # the expected reports that are missing
    output: str

    def line(self) -> str:
        missing = f"missing {', '.join(self.reports)}" if self.reports else "written"
        written = missing if self.command in REPORTS else "(none: writes no reports)"
        if self.mode in HAR_MODES:
            written = "(none: the file is refused before a run, exit 2)"
        return (
            f"| {self.command} | {self.mode} | {self.exit} | {self.seconds:.1f} | "
            f"{self.peak_mb:.0f} | {written} |"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _when_open(port: int, then: Callable[[], object]) -> Callable[[], object]:
    def action() -> object:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        return then()

    return action


def _through_proxy(port: int) -> Callable[[], object]:
    def send() -> None:
        for _ in range(2):
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/events/transactions", timeout=6)
            except httpx.HTTPError:
                pass

    return _when_open(port, send)


def _delivery(port: int) -> Callable[[], object]:
    body = json.dumps(
        {"event_id": EVENT, "event_kind": "transaction:created",
         "data": {"ref": "ref-1", "kind": "CASHIN", "amount": 100, "status": "pending"}}
    ).encode()  # fmt: skip
    headers = {SIGNATURE_HEADER: sign(SECRET, body), EVENT_ID_HEADER: EVENT,
               "Content-Type": "application/json"}  # fmt: skip

    def send() -> None:
        try:
            httpx.post(f"http://127.0.0.1:{port}/", content=body, headers=headers, timeout=8)
        except httpx.HTTPError:
            pass

    return _when_open(port, send)


def _har(path: Path, target: str, entries: int) -> Path:
    """A recording of ``entries`` GETs of the events list, each as small as a HAR entry paysuite
    reads may be (150,001 of them fit in the 32 MiB a HAR file may have)."""
    entry = {
        "startedDateTime": "2026-11-27T10:00:00.000Z",
        "request": {"method": "GET", "url": f"{target}/events/transactions"},
        "response": {"status": 200},
    }
    har = {"log": {"version": "1.2", "entries": [entry] * entries}}
    path.write_text(json.dumps(har, separators=(",", ":")), encoding="utf-8")
    return path


def _command(command: str, mode: str, server_root: str, config: Path, work: Path):  # type: ignore[no-untyped-def]
    """The command line and what a client does meanwhile."""
    report = str(work / "report")
    if command == "conform":
        return [*PAYSUITE, "conform", "--config", str(config), "--report-dir", report,
                "--only", "IDEM-005,TXN-001,FIND-001", *LIMITS], None  # fmt: skip
    if command == "clients":
        from paysuite.clients import cache

        return [*PAYSUITE, "clients", "--config", str(config), "--report-dir", report,
                "--sdk", "paypack-py", "--cache-dir", str(cache.default_cache_dir()),
                *LIMITS], None  # fmt: skip
    if command == "load":
        return [*PAYSUITE, "load", "--config", str(config), "--report-dir", report, "--quiet",
                "--users", "4", "--duration", "3", "--reconcile-timeout", "5",
                "--total-timeout", "1.5", "--read-timeout", "1",
                "--max-response-bytes", "1000000"], None  # fmt: skip
    if command == "proxy":
        port = _free_port()
        return [*PAYSUITE, "proxy", "--target", server_root, "--listen", f"127.0.0.1:{port}",
                "--report-dir", report, "--duration", "6",
                "--upstream-timeout", "3"], _through_proxy(port)  # fmt: skip
    if command == "replay":
        entries = 150_001 if mode == "huge-har-entries" else 3
        har = _har(work / "session.har", f"{server_root}/api", entries)
        if mode == "huge-har-size":
            os.truncate(har, 400 << 20)  # sparse: its size is what is refused, before a read
        return [*PAYSUITE, "replay", str(har), "--target", f"{server_root}/api",
                "--report-dir", report], None  # fmt: skip
    if command == "listen":
        port = _free_port()
        line = [*PAYSUITE, "webhooks", "listen", "--port", str(port), "--secret", SECRET,
                "--config", str(config), "--forward-to", f"{server_root}/hooks",
                "--forward-timeout", "3",
                "--duration", "5", "--settle", "0", "--report-dir", report]  # fmt: skip
        return line, _delivery(port)
    if command == "resend":
        return [*PAYSUITE, "webhooks", "resend", EVENT, "--stub", server_root], None
    if command == "trigger":
        return [
            *PAYSUITE,
            "webhooks",
            "trigger",
            "--config",
            str(config),
            "--outcome",
            "none",
        ], None
    raise ValueError(command)


def run_case(command: str, mode: str, work: Path) -> Row:
    behaviour = "hang" if mode in HAR_MODES else PREFIX.get(command, "") + mode
    work.mkdir(parents=True, exist_ok=True)
    with hostile_server(behaviour) as server:
        config = write_config(server, work / "target.yaml")
        line, during = _command(command, mode, server.root_url, config, work)
        run = run_bounded(line, BUDGET_S, during)
    expected = () if mode in HAR_MODES else REPORTS.get(command, ())
    missing = tuple(name for name in expected if not (work / "report" / name).exists())
    return Row(command, mode, run.returncode, run.seconds, run.peak_mb, missing, run.output)


CASES = [(c, m) for c in COMMANDS for m in MODES] + [("replay", m) for m in HAR_MODES]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "mode"), CASES)
def test_each_command_meets_each_hostile_mode_within_bounds(
    command: str, mode: str, tmp_path: Path
) -> None:
    row = run_case(command, mode, tmp_path)
    print(row.line())
    said = f"{row.line()}\n{row.output[-3000:]}"
    assert row.exit is not None, f"killed at the {BUDGET_S} s budget: {said}"
    assert row.exit != 0, said
    assert "Traceback" not in row.output, said
    assert row.peak_mb <= MAX_MB, said
    assert not row.reports, said


def main() -> int:
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory(prefix="paysuite-battery-") as base:
        for index, (command, mode) in enumerate(CASES):
            row = run_case(command, mode, Path(base) / str(index))
            print(row.line(), flush=True, file=sys.stderr)
            rows.append(row)
    print("| command | mode | exit | wall s | peak MB | reports |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row.line())
    bad = [r for r in rows if r.exit in (0, None) or r.peak_mb > MAX_MB or r.reports
           or "Traceback" in r.output]  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
