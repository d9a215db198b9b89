"""The reconciliation waits out a rate-limited target's 429 instead of calling a create unchecked.

Against the independent implementation's ``rate-limit`` choice (per application a burst of 40,
25 a second, then 429 with ``Retry-After: 1``), checking 50 creates takes about 100 requests of
one application: more than a burst. Without ``Retry-After`` honoured they were errors ("find
status 429") and the run failed with exit 3; now every create is found, and load.json's
reconciliation says how often the target throttled and how long it waited.

The reconciliation runs under gevent (in the Locust master); it is called here directly, in a
process where gevent is imported but nothing is monkey-patched.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from load.ledger import CreateRecord
from load.reconcile import reconcile
from paysuite_core import tokens
from paysuite_core.target_config import TargetConfig, load_target_config
from paysuite_core.throttle import Throttle, send_honouring

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "foreign"))
from foreignkit import Foreign, start_foreign

CREATES = 50


@pytest.fixture
def rate_limited(tmp_path: Path) -> Iterator[Foreign]:
    server = start_foreign("independent", tmp_path, "--choice", "rate-limit")
    yield server
    server.stop()


def _create(config: TargetConfig, count: int) -> list[CreateRecord]:
    """``count`` cashins by the read-write application (itself paced by a throttle)."""
    writer = next(app for app in config.applications if app.privilege == "read-write")
    gate = Throttle(60)
    records: list[CreateRecord] = []
    with httpx.Client(timeout=10) as client:
        send = tokens.httpx_send(client, config.base_url, throttle=gate)
        token = tokens.TokenFlow(send, writer).access()
        for index in range(count):
            number = f"078{index:07d}"
            answer = send_honouring(
                gate,
                lambda number=number: client.post(  # type: ignore[misc]
                    f"{config.base_url}/transactions/cashin",
                    json={"amount": 100, "number": number},
                    headers={"Authorization": f"Bearer {token}"},
                ),
                lambda response: response.status_code,
                lambda response: response.headers,
            )
            assert answer.status_code < 300, answer.text
            records.append(
                {"ref": answer.json()["ref"], "key": f"k{index}", "kind": "CASHIN",
                 "number": number, "amount": 100.0, "merchant": writer.merchant, "t": 0.0}
            )  # fmt: skip
    return records


def test_the_reconciliation_waits_out_429_and_finds_every_create(rate_limited: Foreign) -> None:
    config = load_target_config(rate_limited.config_path)
    records = _create(config, CREATES)
    lines: list[str] = []
    result = reconcile(records, config, concurrency=16, time_budget_s=60, progress=lines.append)
    assert result["passed"] and result["found"] == CREATES, (result["reasons"], result)
    throttling = result["throttling"]
    assert throttling["responses_throttled"] > 0 and throttling["seconds_waited"] >= 1, throttling
    assert throttling["budget_s"] == 60 and throttling["requests_given_up"] == 0
    assert any("the target throttled" in line for line in lines), lines


def test_a_429_it_may_not_wait_for_is_a_record_that_could_not_be_checked(
    rate_limited: Foreign,
) -> None:
    """No waiting allowed: the throttled records are errors, said in words, never "lost"."""
    config = load_target_config(rate_limited.config_path)
    records = _create(config, CREATES)
    result = reconcile(
        records, config, concurrency=16, time_budget_s=30, max_throttle_wait_s=0,
        progress=lambda _: None,
    )  # fmt: skip
    assert not result["passed"] and result["missing"] == 0 and result["mismatched"] == 0
    kinds = result["error_kinds"]
    assert "ThrottleExhausted" in kinds, result
    assert any("kept answering 429" in reason for reason in result["reasons"]), result["reasons"]
