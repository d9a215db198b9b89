"""Counts of executions judge only the suite's own traffic on a shared number.

With ``numbers:`` (a configured list instead of a pattern) the suite's customer numbers are not
its own: other applications of the same merchant may pay them at the same time. Here they do,
with the very kinds and amount the suite uses, throughout a run of the checks that count
executions (IDEM, PRIV, TXN) and of the history phase (MODEL, which then judges only lists by
its own refs) against the correct stub: no check fails; a creation no answer of the check named
is noted "unconfirmed", not counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import Application
from paysuite_core.tokens import TokenFlow, httpx_send

pytestmark = pytest.mark.slow

NUMBERS = ["0781000001", "0791000002"]
AMOUNT = 100


class OtherApps:
    """The merchant's cashin and cashout applications pay ``AMOUNT`` to every listed number, in
    turn, until stopped: a till and a payout job sharing the customers with the suite."""

    def __init__(self, stub: RunningStub, merchant: str) -> None:
        config = stub.config()
        self.apps = [
            app
            for app in config.applications
            if app.merchant == merchant and app.privilege in ("cashin", "cashout")
        ]
        assert len(self.apps) == 2
        self.base_url = config.base_url
        self.stop = threading.Event()
        self.paid: list[int] = []
        self.thread = threading.Thread(target=self._pay, daemon=True)

    def _pay(self) -> None:
        with httpx.Client(timeout=30) as http:
            flows = [(app, TokenFlow(httpx_send(http, self.base_url), app)) for app in self.apps]
            while not self.stop.is_set():
                for app, flow in flows:
                    for number in NUMBERS:
                        self.paid.append(self._create(http, flow, app, number))
                time.sleep(0.02)

    def _create(self, http: httpx.Client, flow: TokenFlow, app: Application, number: str) -> int:
        path = f"{self.base_url}/transactions/{app.privilege}"
        body = {"amount": AMOUNT, "number": number}
        return http.post(path, json=body, headers=flow.headers()).status_code

    def __enter__(self) -> OtherApps:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def test_counts_on_a_shared_number_list_amid_other_apps_payments(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub()
    config = fast_config(stub, tmp_path)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data.pop("number_pattern", None)
    data["numbers"] = NUMBERS
    data["amount"] = {"min": AMOUNT, "max": AMOUNT}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    merchant = next(a["merchant"] for a in data["applications"] if a["privilege"] == "read-write")
    with OtherApps(stub, merchant) as others:
        outcome = conform(
            capsys,
            tmp_path / "shared",
            config=config,
            strict=True,
            only="IDEM,PRIV,TXN",
        )
    assert len(others.paid) >= 20 and set(others.paid) == {200}, others.paid[:10]
    checks = outcome.report["checks"]
    bad = [
        f"{c['id']}: {c['message'][:300]}" for c in checks if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0 and not bad, bad
    notes = " ".join(str(c.get("note") or "") for c in checks)
    assert "unconfirmed:" in notes and "configured list" in notes, notes
