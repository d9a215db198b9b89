"""A rate-limited target (429 with Retry-After): waited for, never a failure, counted.

The document shows no rate limits, so a conformant implementation behind a gateway may answer
429 to any request. Before the suite honoured ``Retry-After`` such a target (the independent
implementation's ``rate-limit`` choice: burst 40, 25 a second per application) got
``VERDICT: FAIL — 2 MUST check(s) failed: EVT-001, PRIV-002`` and 19 errors.

- the recording client: a 429 is sent again after its Retry-After, the evidence keeps the
  answer that counts; a spent budget or the check's deadline make an error, never a failure;
- the rate-limited implementation passes the seed profile with --strict, its figures reported;
- with a budget of 0 the throttled checks are errors, none a failure.

The rate-limited server runs with a 10 s access lifetime: a throttled request is sent again
unchanged, token included, and the suite renews a token at a third of its lifetime, so the
lifetime must outlast a few one-second waits (2 s, the other foreign tests', does not).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conformkit import conform

from paysuite_core.driver.http import CheckBudgetExceeded, RecordingClient, ThrottledOut
from paysuite_core.results.evidence import Evidence
from paysuite_core.throttle import Throttle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "foreign"))
from foreignkit import Foreign, start_foreign

#: The independent implementation's token lifetime in these runs (see the module docstring).
ACCESS_TTL = ("--access-ttl", "10")


# --- the recording client, against an in-process transport -------------------------------------
def _client(
    answers: list[httpx.Response], throttle: Throttle, evidence: Evidence
) -> tuple[RecordingClient, list[httpx.Request]]:
    """A RecordingClient whose transport answers ``answers`` in turn (httpx.MockTransport)."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    client = RecordingClient(
        "http://target.test/api",
        lambda: evidence,
        throttle=throttle,
        transport=httpx.MockTransport(handler),
    )
    return client, seen


def _too_many(retry_after: str = "0") -> httpx.Response:
    return httpx.Response(429, headers={"Retry-After": retry_after}, json={"message": "slow down"})


def test_a_429_is_sent_again_and_the_check_sees_the_answer_after_it() -> None:
    evidence = Evidence()
    throttle = Throttle(10)
    client, seen = _client(
        [_too_many(), _too_many(), httpx.Response(200, json={})], throttle, evidence
    )
    reply = client.get("/events/transactions")
    client.close()
    assert reply.status == 200 and len(seen) == 3
    assert [e.status for e in evidence.exchanges] == [200], "the 429s leave the evidence"
    assert "429 2 time(s)" in (reply.exchange.note or "")
    assert throttle.stats().throttled == 2 and throttle.stats().waited_s > 0


def test_a_spent_budget_is_an_error_of_the_check_with_the_429_as_proof() -> None:
    evidence = Evidence()
    client, _ = _client([_too_many("1")], Throttle(0), evidence)
    with pytest.raises(ThrottledOut) as caught:
        client.post("/transactions/cashin", json={"amount": 100, "number": "0780000000"})
    client.close()
    assert "throttled past --max-throttle-wait" in str(caught.value)
    assert [e.status for e in caught.value.proof] == [429]


def test_the_checks_own_budget_comes_before_a_long_retry_after() -> None:
    import time

    client, _ = _client([_too_many("30")], Throttle(120), Evidence())
    client.check_deadline = time.monotonic() + 5
    with pytest.raises(CheckBudgetExceeded) as caught:
        client.get("/events/transactions")
    client.close()
    assert "--check-timeout" in str(caught.value) and "429" in str(caught.value)


def test_without_a_throttle_a_429_is_only_an_answer() -> None:
    evidence = Evidence()
    client, seen = _client([_too_many()], None, evidence)  # type: ignore[arg-type]
    assert client.get("/events/transactions").status == 429 and len(seen) == 1
    client.close()


# --- whole runs against the rate-limited independent implementation -----------------------------
@pytest.fixture
def rate_limited(tmp_path: Path) -> Iterator[Foreign]:
    server = start_foreign("independent", tmp_path, *ACCESS_TTL, "--choice", "rate-limit")
    yield server
    server.stop()


@pytest.mark.slow
def test_a_rate_limited_conformant_implementation_passes_with_its_figures_reported(
    rate_limited: Foreign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = conform(capsys, tmp_path / "r", config=rate_limited.config_path, strict=True)
    report = outcome.report
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0 and report["verdict"] == "pass", "\n".join(bad)
    throttling = report["throttling"]
    assert throttling["responses_throttled"] > 0 and throttling["seconds_waited"] > 0, throttling
    assert throttling["budget_s"] == 120 and throttling["requests_given_up"] == 0
    verdict = outcome.stdout.rstrip().splitlines()[-1]
    assert verdict.startswith("VERDICT: PASS") and "the target throttled" in verdict, verdict
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "<span id='throttling'>the target throttled" in page


@pytest.mark.slow
def test_with_no_budget_a_throttled_check_is_an_error_never_a_failure(
    rate_limited: Foreign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = conform(
        capsys, tmp_path / "r", config=rate_limited.config_path, max_throttle_wait="0"
    )
    report = outcome.report
    assert not outcome.ids("failed"), [
        (c["id"], c["message"][:200]) for c in report["checks"] if c["outcome"] == "failed"
    ]
    throttled = {
        c["id"]
        for c in report["checks"]
        if c["outcome"] == "error" and "throttled past --max-throttle-wait" in c["message"]
    }
    assert throttled, "a burst of 40 must be exceeded by a whole run"
    assert outcome.status == 2 and report["verdict"] == "error"
    figures = report["throttling"]
    assert figures["budget_s"] == 0 and figures["seconds_waited"] == 0
    assert figures["requests_given_up"] == figures["responses_throttled"] > 0
