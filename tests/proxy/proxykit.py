"""Helpers of the proxy self-tests: stubs with faults, a `paysuite proxy` process in front of
one, and a client that talks through it (tokens through ``paysuite_core.tokens``)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from paysuite_core import tokens
from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import Application
from paysuite_core.tokens import TokenFlow, httpx_send

LISTENING = re.compile(r"paysuite proxy listening on (http://\S+) -> ")
ROOT = Path(__file__).resolve().parents[2]


def config_file(stub: RunningStub, directory: Path, **overrides: Any) -> Path:
    """The stub's credentials file, with ``overrides`` (``refresh_rotation=True``...)."""
    data = yaml.safe_load(stub.credentials_path.read_text(encoding="utf-8"))
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = directory / f"target-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class ProxyRun:
    """A running `paysuite proxy`; ``stop()`` sends Ctrl-C and collects what it printed."""

    process: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT
    report_dir: Path
    lines: list[str] = field(default_factory=list)
    status: int | None = None

    @property
    def base_url(self) -> str:
        return self.url + "/api"

    def stop(self, timeout_s: float = 90) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=timeout_s)
        self.lines += out.splitlines()
        self.status = self.process.returncode
        return self.status

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    @property
    def report(self) -> dict[str, Any]:
        return json.loads((self.report_dir / "conformance.json").read_text(encoding="utf-8"))

    def failed(self) -> set[str]:
        return {c["id"] for c in self.report["checks"] if c["outcome"] == "failed"}

    def check(self, check_id: str) -> dict[str, Any]:
        return next(c for c in self.report["checks"] if c["id"] == check_id)


def start_proxy(target: str, report_dir: Path, *extra: str, config: Path | None = None) -> ProxyRun:
    command = [sys.executable, "-m", "paysuite", "proxy", "--target", target,
               "--listen", "127.0.0.1:0", "--report-dir", str(report_dir), "--duration", "120",
               *extra]  # fmt: skip
    if config is not None:
        command += ["--config", str(config)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
    )
    assert process.stdout is not None
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        match = LISTENING.search(line)
        if match:
            return ProxyRun(process, match.group(1), report_dir, lines)
    process.kill()
    raise AssertionError("the proxy did not start:\n" + "\n".join(lines))


class Client:
    """A plain API client (httpx) whose base URL is the proxy's: what a merchant's app does."""

    def __init__(self, base_url: str, app: Application, root_url: str) -> None:
        self.base_url = base_url
        self.root_url = root_url
        self.http = httpx.Client(timeout=30)
        self.flow = TokenFlow(httpx_send(self.http, base_url), app)

    def close(self) -> None:
        self.http.close()

    def headers(self, **extra: str) -> dict[str, str]:
        return {**self.flow.headers(), **extra}

    def _auth(self, token: str | None) -> dict[str, str]:
        """The flow's headers, or ``token`` as it is (even expired) when one is given."""
        if token is None:
            return self.headers()
        return {**tokens.JSON_HEADERS, "Authorization": f"Bearer {token}"}

    def create(
        self, kind: str = "cashin", *, key: str | None = None, number: str = "0781234567",
        amount: int = 100, token: str | None = None,
    ) -> httpx.Response:  # fmt: skip
        headers = self._auth(token)
        if key is not None:
            headers["Idempotency-Key"] = key
        body = {"amount": amount, "number": number}
        return self.http.post(f"{self.base_url}/transactions/{kind}", json=body, headers=headers)

    def find(self, ref: str, *, token: str | None = None) -> httpx.Response:
        headers = self._auth(token)
        return self.http.get(f"{self.base_url}/transactions/find/{ref}", headers=headers)

    def events(self, **filters: str) -> httpx.Response:
        return self.http.get(
            f"{self.base_url}/events/transactions", params=filters, headers=self.headers()
        )

    def sandbox(self, ref: str, action: str) -> httpx.Response:
        """The stub's simulated customer, through the proxy too (forwarded, not judged)."""
        return self.http.post(f"{self.root_url}/_sandbox/transactions/{ref}/{action}")


def writer(stub: RunningStub) -> Application:
    return next(app for app in stub.config().applications if app.privilege == "read-write")


def wait_processed(client: Client, ref: str, *, timeout_s: float = 10) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        found = client.find(ref)
        if found.json().get("status") != "pending" or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


WALK = Path(__file__).with_name("paypack_walk.py")


def paypack_walk(run: ProxyRun, stub: RunningStub, number: str = "0781112255") -> dict[str, Any]:
    """The fixed paypack-py walk (``paypack_walk.py``) through the proxy ``run``, with the
    stub's read-write application; what each step answered."""
    app = writer(stub)
    job = {"base_url": run.base_url, "root_url": run.url, "client_id": app.client_id,
           "client_secret": app.client_secret, "number": number,
           "key": uuid.uuid4().hex[:24]}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(WALK)], input=json.dumps(job), capture_output=True, text=True,
        timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    steps: dict[str, Any] = json.loads(done.stdout)
    return steps
