"""paysuite_core.throttle: Retry-After read both ways, the backoff, the budget, the counters.

No test sleeps: the throttle's clocks and random source are injected, and ``send_honouring``
takes the sleep function, so the waits are recorded instead of slept.
"""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from paysuite_core.throttle import (
    BACKOFF_CAP_S,
    MIN_WAIT_S,
    Throttle,
    ThrottleExhausted,
    backoff_s,
    parse_retry_after,
    retry_after_of,
    send_honouring,
)

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC).timestamp()


class Clock:
    """Monotonic time that moves only when the code under test "sleeps"."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def throttle(max_wait_s: float = 120.0, clock: Clock | None = None) -> Throttle:
    return Throttle(max_wait_s, clock=clock or Clock(), wall=lambda: NOW, rng=random.Random(7))


# --- Retry-After ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1", 1.0),
        ("120", 120.0),
        (" 3 ", 3.0),
        ("0", 0.0),
        # IMF-fixdate, the form a server must send (RFC 9110 §5.6.7)
        ("Wed, 25 Nov 2026 12:00:05 GMT", 5.0),
        # the obsolete RFC 850 and asctime forms, which a recipient must still read
        ("Wednesday, 25-Nov-26 12:00:10 GMT", 10.0),
        ("Wed Nov 25 12:00:30 2026", 30.0),
        # a date already past: retry now
        ("Wed, 25 Nov 2026 11:59:00 GMT", 0.0),
    ],
)
def test_retry_after_reads_delay_seconds_and_every_http_date_form(
    value: str, seconds: float
) -> None:
    assert parse_retry_after(value, now=NOW) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "  ", "-1", "1.5", "soon", "1e3", "Wed, 99 Foo"])
def test_an_unusable_retry_after_is_none_so_the_caller_falls_back(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_retry_after_is_found_in_any_header_mapping_whatever_its_case() -> None:
    assert retry_after_of({"retry-after": "2"}) == "2"
    assert retry_after_of({"Retry-After": "3"}) == "3"
    assert retry_after_of({"RETRY-AFTER": "4"}) == "4"
    assert retry_after_of({"Content-Type": "application/json"}) is None
    assert retry_after_of(None) is None


def test_the_wait_follows_retry_after_when_it_is_usable() -> None:
    clock = Clock()
    decision = throttle(clock=clock).throttled("2")
    assert decision.retry and decision.wait_s == 2.0
    date = format_datetime(datetime.fromtimestamp(NOW + 4, UTC), usegmt=True)
    assert throttle().throttled(date).wait_s == pytest.approx(4.0)


# --- the backoff -------------------------------------------------------------------------------
def test_without_retry_after_the_backoff_grows_with_jitter_and_is_capped() -> None:
    rng = random.Random(1)
    for attempt in range(8):
        step = min(BACKOFF_CAP_S, 0.5 * 2**attempt)
        waits = {backoff_s(attempt, rng) for _ in range(20)}
        assert all(step / 2 <= wait <= step for wait in waits), (attempt, waits)
        assert len(waits) > 1, "jitter: callers throttled together do not return together"


def test_a_bad_or_absent_retry_after_falls_back_to_the_backoff() -> None:
    gate = throttle()
    first = gate.throttled("soon", 0)
    third = gate.throttled(None, 2)
    assert 0.25 <= first.wait_s <= 0.5 and first.retry
    assert 1.0 <= third.wait_s <= 2.0 and third.retry


def test_retry_after_zero_still_waits_a_little_so_a_target_cannot_spin_the_caller() -> None:
    clock = Clock()
    assert throttle(clock=clock).throttled("0").wait_s == MIN_WAIT_S


# --- the budget --------------------------------------------------------------------------------
def test_the_budget_bounds_the_total_wait_then_a_throttled_request_gives_up() -> None:
    clock = Clock()
    gate = throttle(max_wait_s=5, clock=clock)
    for _ in range(5):
        decision = gate.throttled("1")
        assert decision.retry
        clock.sleep(decision.wait_s)
    spent = gate.throttled("1")
    assert not spent.retry and "--max-throttle-wait (5 s)" in spent.why
    stats = gate.stats()
    assert (stats.throttled, stats.waited_s, stats.gave_up) == (6, 5.0, 1)
    assert gate.exhausted


def test_a_wait_longer_than_what_is_left_gives_up_at_once_instead_of_waiting_it_out() -> None:
    gate = throttle(max_wait_s=10)
    decision = gate.throttled("3600")
    assert not decision.retry and gate.stats().waited_s == 0


def test_a_zero_budget_never_waits() -> None:
    decision = throttle(max_wait_s=0).throttled("1")
    assert not decision.retry


def test_the_callers_deadline_comes_first() -> None:
    clock = Clock()
    decision = throttle(clock=clock).throttled("5", deadline=clock.now + 2)
    assert not decision.retry and "time limit" in decision.why
    assert throttle(clock=clock).throttled("1", deadline=clock.now + 2).retry


def test_waits_that_overlap_cost_the_budget_once() -> None:
    """Two callers throttled at the same moment wait the same second: one second of the run."""
    clock = Clock()
    gate = throttle(clock=clock)
    assert gate.throttled("1").retry and gate.throttled("1").retry
    assert gate.stats().waited_s == 1.0 and gate.stats().throttled == 2


def test_other_callers_pace_themselves_by_the_wait_the_target_asked_for() -> None:
    clock = Clock()
    gate = throttle(clock=clock)
    assert gate.pause_s() == 0.0
    gate.throttled("2")
    clock.now += 0.5
    assert gate.pause_s() == pytest.approx(1.5)  # the rest of the 2 s, already charged
    assert gate.stats().waited_s == 2.0
    clock.now += 1.5
    assert gate.pause_s() == 0.0


def test_the_figures_read_as_the_reports_show_them() -> None:
    clock = Clock()
    gate = throttle(max_wait_s=120, clock=clock)
    gate.throttled("1")
    stats = gate.stats()
    assert stats.to_dict() == {
        "responses_throttled": 1,
        "seconds_waited": 1.0,
        "budget_s": 120.0,
        "requests_given_up": 0,
    }
    assert stats.text() == "the target throttled 1 response (429); the run waited 1.0 s of 120 s"


def test_the_throttle_is_safe_to_share_between_threads() -> None:
    gate = Throttle(1e9, rng=random.Random(3))
    threads = [
        threading.Thread(target=lambda: [gate.throttled("0") for _ in range(200)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gate.stats().throttled == 1600


# --- the retry loop -------------------------------------------------------------------------------
class Answer:
    def __init__(self, status: int, retry_after: str | None = None) -> None:
        self.status = status
        self.headers = {"Retry-After": retry_after} if retry_after else {}


def _loop(answers: list[Answer], gate: Throttle, clock: Clock, **kwargs: object) -> Answer:
    queue = list(answers)
    return send_honouring(
        gate,
        lambda: queue.pop(0),
        lambda answer: answer.status,
        lambda answer: answer.headers,
        sleep=clock.sleep,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_429_is_waited_for_and_sent_again_until_the_answer_is_another() -> None:
    clock = Clock()
    gate = throttle(clock=clock)
    answer = _loop([Answer(429, "1"), Answer(429, "2"), Answer(200)], gate, clock)
    assert answer.status == 200
    assert clock.slept == [1.0, 2.0]
    assert gate.stats().throttled == 2 and gate.stats().waited_s == 3.0


def test_the_loop_gives_up_with_the_last_429_when_the_budget_is_spent() -> None:
    clock = Clock()
    gate = throttle(max_wait_s=1.5, clock=clock)
    with pytest.raises(ThrottleExhausted) as caught:
        _loop([Answer(429, "1"), Answer(429, "1"), Answer(200)], gate, clock)
    assert caught.value.answer.status == 429  # type: ignore[attr-defined]
    gate2 = throttle(max_wait_s=0, clock=clock)
    last = _loop([Answer(429, "1")], gate2, clock, give_up=lambda answer: answer)
    assert last.status == 429


def test_without_a_throttle_a_429_is_just_the_answer() -> None:
    clock = Clock()
    assert _loop([Answer(429, "1")], None, clock).status == 429  # type: ignore[arg-type]
    assert clock.slept == []
