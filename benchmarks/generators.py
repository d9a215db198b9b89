"""The load generator of the server ratios: wrk when installed, else ``client.py`` (raw asyncio,
one process). Both sides of a ratio are always driven by the same one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import HERE, NUMBER

_WRK_GET = """
wrk.method = "GET"
wrk.headers["Accept"] = "application/json"
{auth}
"""

_WRK_CASHIN = """
wrk.method = "POST"
wrk.body = '{{"amount": 100, "number": "{number}"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
local counter = 0
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function request()
  counter = counter + 1
  -- a fresh key per request: run prefix, thread, counter (26 characters, at most 32 allowed)
  wrk.headers["Idempotency-Key"] = string.format("{run}%02d%016x", tid or 0, counter)
  return wrk.format(nil, nil, wrk.headers, wrk.body)
end
"""

_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def parse_wrk(output: str) -> dict[str, Any]:
    """Requests/sec, request count, non-2xx count and the 50%/99% latencies of wrk's output."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if rps is None:
        raise RuntimeError(f"unexpected wrk output: {output[-400:]}")
    total = re.search(r"(\d+) requests in", output)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors:.*", output)
    latency = {
        pct: float(value) * _UNIT_MS[unit]
        for pct, value, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", output, re.M)
    }
    return {
        "rps": float(rps.group(1)),
        "requests": int(total.group(1)) if total else 0,
        "non_2xx": int(bad.group(1)) if bad else 0,
        "p50_ms": latency.get("50"),
        "p99_ms": latency.get("99"),
        "socket_errors": errors.group(0) if errors else "",
    }


class Generator:
    """wrk when installed (or asked for), else the Python client."""

    def __init__(
        self, seconds: float, connections: int, workdir: Path, choice: str = "auto"
    ) -> None:
        self.seconds = seconds
        self.connections = connections
        self.workdir = workdir
        self.is_wrk = choice == "wrk" or (choice == "auto" and shutil.which("wrk") is not None)
        self.name = "wrk" if self.is_wrk else "python (benchmarks/client.py, raw asyncio)"

    def get(self, url: str, token: str | None = None) -> dict[str, Any]:
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        if self.is_wrk:
            lines = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in auth.items())
            return self._wrk(url, _WRK_GET.format(auth=lines))
        return self._python(url, ["--header", "Accept: application/json"], auth)

    def cashin(self, url: str, token: str) -> dict[str, Any]:
        """POSTs of a cashin, each with a fresh Idempotency-Key."""
        if self.is_wrk:
            run = uuid.uuid4().hex[:8]
            return self._wrk(url, _WRK_CASHIN.format(number=NUMBER, token=token, run=run))
        body = json.dumps({"amount": 100, "number": NUMBER})
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        return self._python(url, ["--method", "POST", "--body", body, "--fresh-key"], headers)

    def _wrk(self, url: str, script: str) -> dict[str, Any]:
        path = self.workdir / f"wrk-{uuid.uuid4().hex[:6]}.lua"
        path.write_text(script)
        command = [
            "wrk", f"-t{max(1, min(2, self.connections))}", f"-c{self.connections}",
            f"-d{max(1, int(self.seconds))}s", "--latency", "-s", str(path), url,
        ]  # fmt: skip
        out = subprocess.run(command, capture_output=True, text=True, timeout=self.seconds + 60)
        return parse_wrk(out.stdout)

    def _python(self, url: str, options: list[str], headers: dict[str, str]) -> dict[str, Any]:
        command = [
            sys.executable, str(HERE / "client.py"), url, "--seconds", str(self.seconds),
            "--connections", str(self.connections), *options,
        ]  # fmt: skip
        for key, value in headers.items():
            command += ["--header", f"{key}: {value}"]
        out = subprocess.run(command, capture_output=True, text=True, timeout=self.seconds + 60)
        if out.returncode != 0:
            raise RuntimeError(f"the bench client failed: {out.stderr[-400:]}")
        result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return result
