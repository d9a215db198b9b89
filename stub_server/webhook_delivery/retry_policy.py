"""When a failed delivery is tried again, and when it is given up (RC-40).

Exponential backoff without jitter: the stub has one dispatcher, so there is no herd to spread,
and a fixed schedule is one a test can predict (through the stub config's ``webhook_retry``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff ``base_s`` doubling up to ``cap_s``; ``max_attempts`` in all, then abandoned;
    a receiver that has not answered within ``timeout_s`` failed the attempt."""

    base_s: float = 1.0
    cap_s: float = 300.0
    max_attempts: int = 12
    timeout_s: float = 10.0

    def delay_s(self, failed_attempts: int) -> float:
        """The wait before the next attempt, after ``failed_attempts`` (1, 2, ...) failures."""
        return float(min(self.cap_s, self.base_s * 2.0 ** min(failed_attempts - 1, 62)))
