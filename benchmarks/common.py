"""What every benchmark shares: its processes, the stub's token and a transaction to find,
percentiles, and the report file."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from paysuite_core import tokens
from paysuite_core.target_config import TargetConfig

HERE = Path(__file__).resolve().parent
NUMBER = "0781234567"
#: What a server of the benchmarks (the stub, paysuite proxy, ``servers.py``) prints once bound.
LISTENING = " listening on "


def say(bench: str, message: str) -> None:
    print(f"benchmarks {bench}: {message}", flush=True)


def start_server(
    command: list[str], log: Path, timeout_s: float = 60
) -> tuple[subprocess.Popen[bytes], str]:
    """A server process on a free port and its URL, once it prints ``... listening on URL``.
    Its output goes to a file: a pipe nobody reads could fill up with its lines and stall it."""
    with open(log, "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text("utf-8", errors="replace").splitlines():
            if LISTENING in line:
                return process, line.split(LISTENING, 1)[1].split(" ")[0]
        time.sleep(0.05)
    stop(process)
    raise RuntimeError(f"{command[2]} did not start: {log.read_text('utf-8', errors='replace')}")


def stop(
    process: subprocess.Popen[bytes], signum: int = signal.SIGTERM, timeout_s: float = 15
) -> None:
    """Stop a server as a user would (paysuite proxy writes its reports on SIGINT); killed if it
    hangs."""
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def access_token(config: TargetConfig) -> str:
    """An access token of the read-write application (the benchmarks create and find)."""
    app = next(a for a in config.applications if a.privilege == "read-write")
    with httpx.Client(timeout=10) as client:
        return tokens.TokenFlow(tokens.httpx_send(client, config.base_url), app).access()


def create_ref(base_url: str, token: str) -> str:
    """The ref of a fresh cashin: the transaction the find measurements read again and again."""
    created = httpx.post(
        f"{base_url}/transactions/cashin",
        json={"amount": 100, "number": NUMBER},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex},
        timeout=10,
    )
    created.raise_for_status()
    return str(created.json()["ref"])


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def write_report(report_dir: Path, name: str, data: dict[str, Any]) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    written = report_dir / name
    written.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return written
