"""Run each SDK's driver on one job and print the SDK x operation matrix.

A cell is ``ok``, ``n/a`` (the SDK has no such public method), ``skipped`` (the SDK could not be
run here, with the reason in the column heading) or the status and message that broke it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paysuite.clients import cache

#: The rows, in order: the document's operations, then the SDK-only calls.
OPERATIONS = (
    "authorize", "cashin", "cashout", "find", "events", "events from/to", "transactions", "me",
    "refresh",
)  # fmt: skip
JS_DRIVER = Path(__file__).with_name("paypack_js_driver.js")
DRIVER_TIMEOUT_S = 180


@dataclass
class SdkColumn:
    """One SDK's results: cells by operation, or the reason it was skipped."""

    sdk: str
    version: str = ""
    skip: str | None = None
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        if self.skip:
            return f"{self.sdk} (skipped)"
        return f"{self.sdk} {self.version}".strip()

    def text(self, operation: str) -> str:
        if self.skip:
            return "skipped"
        cell = self.cells.get(operation)
        if cell is None:
            return "not run"
        if cell["ok"] is None:
            return "n/a"
        return "ok" if cell["ok"] else f"FAIL {cell['detail']}"

    @property
    def broken(self) -> bool:
        """Ran, and some operation failed (or the driver itself did)."""
        if self.skip:
            return False
        return any(cell["ok"] is False for cell in self.cells.values()) or not self.cells


def _run_driver(sdk: str, argv: list[str], env: dict[str, str], job: dict[str, Any]) -> SdkColumn:
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(job),
            capture_output=True,
            text=True,
            env=env,
            timeout=DRIVER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        column = SdkColumn(sdk)
        column.cells["authorize"] = {"ok": False, "detail": f"driver did not finish: {exc}"}
        return column
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = " / ".join(done.stderr.strip().splitlines()[-3:])
        column = SdkColumn(sdk)
        column.cells["authorize"] = {
            "ok": False,
            "detail": f"driver failed (exit {done.returncode}): {tail}",
        }
        return column
    return SdkColumn(
        sdk,
        version=str(result.get("version", "")),
        cells={cell["op"]: cell for cell in result["cells"]},
        state=result.get("state", {}),
    )


def run_paypack_py(job: dict[str, Any], cache_dir: Path) -> SdkColumn:
    installed = cache.paypack_py(cache_dir)
    if installed.skip:
        return SdkColumn("paypack-py", skip=installed.skip)
    env = dict(os.environ)
    if installed.path is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(installed.path), env.get("PYTHONPATH", "")) if p
        )
    argv = [sys.executable, "-m", "paysuite.clients.paypack_py_driver"]
    return _run_driver("paypack-py", argv, env, job)


def run_paypack_js(job: dict[str, Any], cache_dir: Path) -> SdkColumn:
    installed = cache.paypack_js(cache_dir)
    if installed.skip or installed.path is None:
        return SdkColumn("paypack-js", skip=installed.skip or "not installed")
    env = {**os.environ, "NODE_PATH": str(installed.path), "NODE_NO_WARNINGS": "1"}
    return _run_driver("paypack-js", ["node", str(JS_DRIVER)], env, job)


RUNNERS = {"paypack-py": run_paypack_py, "paypack-js": run_paypack_js}


def render(columns: list[SdkColumn], base_url: str) -> str:
    """The matrix as aligned text, then each skipped SDK's reason."""
    rows = [["operation", *(c.heading for c in columns)]]
    rows += [[op, *(c.text(op) for c in columns)] for op in OPERATIONS]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"paysuite clients: {base_url}", ""]
    for row in rows:
        head = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*head, row[-1]]).rstrip())
    for column in columns:
        if column.skip:
            lines.append(f"\n{column.sdk} skipped: {column.skip}")
    return "\n".join(lines)
