"""Rate limits honoured: the one place that decides how long paysuite waits after a ``429``.

The document leaves rate limits "not shown", and a 429 says nothing about the rule a check judges,
so every sender goes through one ``Throttle`` per run: ``Retry-After`` honoured in both forms,
else an exponential backoff with jitter, within a run's budget of waiting (docs/conformance.md,
"Rate-limited targets"). The module never sleeps: its callers live in different worlds (threads,
asyncio, gevent), so it computes the delay and each sleeps its own way; all state sits behind one
lock. Waiting is counted in wall-clock time: two callers waiting over the same second cost the
budget one second (it bounds how much longer the run takes, not a sum of sleeps).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TypeVar

R = TypeVar("R")

#: ``--max-throttle-wait``'s default: the run's total waiting for a throttling target.
DEFAULT_MAX_WAIT_S = 120.0
#: The status a throttling target answers (RFC 6585 §4: Too Many Requests).
THROTTLED = 429
#: The backoff without ``Retry-After``: ``BASE_S * 2**attempt``, at most ``CAP_S``, jittered.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
#: The least wait before a retry, whatever ``Retry-After`` says (``0``, a date in the past): a
#: target that always answers 429 spends the budget instead of spinning the caller.
MIN_WAIT_S = 0.1


class ThrottleExhausted(RuntimeError):
    """A throttled request is not retried: the run's budget (or the caller's deadline) is spent.

    ``answer`` is the caller's last (throttled) answer, for evidence.
    """

    def __init__(self, message: str, answer: object = None) -> None:
        super().__init__(message)
        self.answer = answer


@dataclass(frozen=True)
class Decision:
    """What to do after a ``429``: sleep ``wait_s`` then send again, or give up (``why``)."""

    retry: bool
    wait_s: float = 0.0
    why: str = ""


@dataclass(frozen=True)
class ThrottleStats:
    """The run's figures, as the reports show them."""

    throttled: int  # 429 answers seen
    waited_s: float  # wall-clock seconds during which a caller waited for the target
    budget_s: float  # --max-throttle-wait
    gave_up: int  # throttled requests not retried (budget or deadline spent)

    def to_dict(self) -> dict[str, float | int]:
        """The ``throttling`` object of conformance.json and load.json."""
        return {
            "responses_throttled": self.throttled,
            "seconds_waited": round(self.waited_s, 3),
            "budget_s": self.budget_s,
            "requests_given_up": self.gave_up,
        }

    def text(self) -> str:
        """``the target throttled 12 responses (429); the run waited 9.4 s of 120 s``."""
        line = (
            f"the target throttled {self.throttled} response{'s' if self.throttled != 1 else ''} "
            f"(429); the run waited {self.waited_s:.1f} s of {self.budget_s:g} s"
        )
        if self.gave_up:
            line += f", {self.gave_up} request{'s' if self.gave_up != 1 else ''} not retried"
        return line


# --- Retry-After ------------------------------------------------------------------------------
def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or ``None`` when absent or unusable.

    RFC 9110 §10.2.3: ``Retry-After = HTTP-date / delay-seconds``, delay-seconds being
    ``1*DIGIT``. An HTTP-date is IMF-fixdate, or one of the obsolete RFC 850 and asctime forms a
    recipient must still accept (§5.6.7); a date in the past means "now" (0). Anything else (a
    negative or fractional number, a word) is unusable: the caller falls back to its backoff.
    ``now``: Unix time (``time.time()`` by default), injectable for tests.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return float(int(text))
    moment = _http_date(text)
    if moment is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, moment - current)


def _http_date(text: str) -> float | None:
    """Unix time of an HTTP-date in any of its three forms (``email.utils`` reads IMF-fixdate,
    RFC 850 and asctime alike), or ``None``."""
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # HTTP-dates are GMT whatever their form
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def retry_after_of(headers: Mapping[str, str] | None) -> str | None:
    """The ``Retry-After`` value of any header mapping (case-insensitive), or ``None``."""
    for name, value in (headers or {}).items():
        if str(name).lower() == "retry-after":
            return str(value)
    return None


def backoff_s(attempt: int, rng: random.Random) -> float:
    """The wait after the ``attempt``-th (0-based) consecutive 429 without ``Retry-After``.

    Exponential with "equal jitter": half the step fixed, half random, so callers that were
    throttled together do not come back together, and none comes back at once.
    """
    step = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** max(attempt, 0))
    return step / 2 + rng.uniform(0, step / 2)


# --- the throttle -----------------------------------------------------------------------------
class Throttle:
    """One run's shared throttle: decides the waits, keeps the budget and the counters.

    ``max_wait_s``: the budget of total waiting (wall-clock) for the run. ``clock`` is monotonic
    time, ``wall`` Unix time (for HTTP-dates); ``rng`` draws the jitter. All injectable, so the
    tests need no real sleeping.
    """

    def __init__(
        self,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.max_wait_s = max(0.0, float(max_wait_s))
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._throttled = 0
        self._gave_up = 0
        self._waited_s = 0.0
        #: the end of the latest wait already counted (waits that overlap count once)
        self._counted_until = float("-inf")
        #: the target asked everyone to wait until then (monotonic): callers pace themselves
        self._resume_at = float("-inf")

    # -- for callers --------------------------------------------------------------------------
    def throttled(
        self, retry_after: str | None, attempt: int = 0, *, deadline: float | None = None
    ) -> Decision:
        """A ``429`` was answered (``attempt``: how many in a row for this request, from 0).

        Counts it and decides: wait ``Retry-After`` (or the backoff) and retry, or give up when
        that wait does not fit in what is left of the budget or before ``deadline`` (monotonic:
        the caller's own time limit, e.g. the check's ``--check-timeout``). The wait is charged
        to the budget now, and every other caller paces itself by it (``pause_s``).
        """
        with self._lock:
            self._throttled += 1
            now = self._clock()
            asked = parse_retry_after(retry_after, self._wall())
            wait = asked if asked is not None else backoff_s(attempt, self._rng)
            wait = max(wait, MIN_WAIT_S)
            # a wait others already started covers part of this one: only the rest is new
            wait = max(wait, self._resume_at - now, 0.0)
            if deadline is not None and now + wait > deadline:
                self._gave_up += 1
                return Decision(False, wait, "the caller's time limit comes first")
            new = self._uncounted(now, now + wait)
            if new > self.remaining_s_locked() + 1e-9:
                self._gave_up += 1
                return Decision(
                    False,
                    wait,
                    f"the target throttled past --max-throttle-wait ({self.max_wait_s:g} s)",
                )
            self._charge(now, now + wait)
            self._resume_at = max(self._resume_at, now + wait)
            return Decision(True, wait)

    def pause_s(self, deadline: float | None = None) -> float:
        """How long a caller about to send should wait first: the rest of a wait the target
        asked of another caller (a shared pace), within the budget and ``deadline``. Charged."""
        with self._lock:
            now = self._clock()
            wait = self._resume_at - now
            if wait <= 0:
                return 0.0
            if deadline is not None:
                wait = min(wait, max(deadline - now, 0.0))
            wait = min(wait, self._uncounted(now, now + wait) + self.remaining_s_locked())
            if wait <= 0:
                return 0.0
            self._charge(now, now + wait)
            return wait

    def stats(self) -> ThrottleStats:
        with self._lock:
            return ThrottleStats(self._throttled, self._waited_s, self.max_wait_s, self._gave_up)

    @property
    def exhausted(self) -> bool:
        """Whether the budget is spent (a throttled request would not be retried)."""
        with self._lock:
            return self.remaining_s_locked() <= 1e-9

    # -- internals (under the lock) -----------------------------------------------------------
    def remaining_s_locked(self) -> float:
        return max(0.0, self.max_wait_s - self._waited_s)

    def _uncounted(self, start: float, end: float) -> float:
        return max(0.0, end - max(start, self._counted_until))

    def _charge(self, start: float, end: float) -> None:
        self._waited_s += self._uncounted(start, end)
        self._counted_until = max(self._counted_until, end)


# --- a synchronous retry loop for simple callers -------------------------------------------------
def send_honouring(
    throttle: Throttle | None,
    send: Callable[[], R],
    status_of: Callable[[R], int],
    headers_of: Callable[[R], Mapping[str, str] | None],
    *,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
    give_up: Callable[[R], R] | None = None,
) -> R:
    """``send()`` until its answer is not a ``429``, sleeping (``sleep``) as ``throttle`` says.

    Raises ``ThrottleExhausted`` (with the last answer) when a 429 is no longer retried, or
    returns ``give_up(last answer)`` when given. Without a throttle, one plain ``send()``. For
    a caller whose sleep is ``time.sleep`` or ``gevent.sleep``; the asyncio race and the
    recording client run the same steps themselves.
    """
    if throttle is None:
        return send()
    attempt = 0
    while True:
        pause = throttle.pause_s(deadline)
        if pause > 0:
            sleep(pause)
        answer = send()
        if status_of(answer) != THROTTLED:
            return answer
        asked = retry_after_of(headers_of(answer))
        decision = throttle.throttled(asked, attempt, deadline=deadline)
        if not decision.retry:
            if give_up is not None:
                return give_up(answer)
            raise ThrottleExhausted(decision.why, answer)
        sleep(decision.wait_s)
        attempt += 1
