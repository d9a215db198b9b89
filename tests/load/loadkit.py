"""Helpers of the load self-tests: run ``paysuite load`` as a subprocess and read its verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from load.ledger import CreateRecord

#: Customers answer by themselves, as in `paysuite load` without --config.
AUTO_RESOLVE = {"auto_resolve": {"default": {"outcome": "success", "delay_s": 0.3}}}


@dataclass
class LoadRun:
    returncode: int
    stdout: str
    stderr: str
    report_dir: Path

    def summary(self) -> dict[str, Any]:
        return json.loads((self.report_dir / "load.json").read_text())


def run_load(report_dir: Path, *args: str, timeout: float = 120) -> LoadRun:
    """``python -m paysuite load --report-dir DIR --quiet ARGS`` as a subprocess."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "paysuite",
            "load",
            "--report-dir",
            str(report_dir),
            "--quiet",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return LoadRun(result.returncode, result.stdout, result.stderr, report_dir)


def hostile_ledger(count: int, storm: int = 0) -> list[CreateRecord]:
    """``count`` acknowledged creates of merchant ``HOSTILE`` (tests/hostile.py's configuration)
    for the reconciliation to check; the first ``storm`` marked as storm creates."""
    records: list[CreateRecord] = [
        {"ref": f"ref-{i}", "key": f"key-{i}", "kind": "CASHIN", "number": f"07800000{i:02d}",
         "amount": 100.0, "merchant": "HOSTILE", "t": float(i)}
        for i in range(count)
    ]  # fmt: skip
    for record in records[:storm]:
        record["storm"] = True
    return records
