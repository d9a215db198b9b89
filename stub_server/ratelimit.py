"""Authorize under attack (RC-38): attempt limits, a bounded hashing queue, no existence oracle.

Why: checking a client_secret costs one scrypt (about 84 ms of CPU, on purpose). Unbounded, 128
concurrent wrong-secret attempts pushed everyone's latency from 5 ms to 674 ms, and an unknown
client_id answered faster than a known one told an attacker which exist. So: a token bucket per
client_id and per peer (``429`` with ``Retry-After`` before any hashing, sent after a pause of up
to ``TARPIT_S`` so a loop sends a few attempts a second, not thousands); a pair already verified
in this process is never limited; hashes run on their own small pool with at most ``queue``
waiting (else ``503 busy``); unknown client_ids are checked against a dummy hash of the same
cost, so both take the same time and the same answer.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from stub_server.errors import ApiError
from stub_server.secrets_hash import verify_secret

#: A hash with the stub's scrypt parameters of a random secret nobody kept: verifying against it
#: costs what verifying a real application's secret costs, and never matches.
DUMMY_HASH = (
    "scrypt$16384$8$1$6f1c2be0d3a94f5e8c7b1a2d3e4f5a6b$"
    "2a9d0c3b8e7f6a5d4c3b2a190817263544536271809a0b1c2d3e4f5a6b7c8d9e"
)
MAX_KEY_CHARS = 128
TARPIT_S = 1.0


@dataclass(frozen=True)
class Bucket:
    burst: int
    per_s: float


@dataclass(frozen=True)
class AuthorizeLimits:
    per_client: Bucket = Bucket(20, 2.0)
    per_peer: Bucket = Bucket(60, 10.0)
    hash_workers: int = 1
    hash_queue: int = 16


class KeyedLimiter:
    """Token buckets by key, at most ``max_keys`` remembered (the oldest forgotten first)."""

    def __init__(
        self, bucket: Bucket, *, max_keys: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.bucket = bucket
        self.max_keys = max_keys
        self.clock = clock
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def _tokens(self, key: str, now: float) -> float:
        tokens, at = self._state.get(key, (float(self.bucket.burst), now))
        return min(float(self.bucket.burst), tokens + (now - at) * self.bucket.per_s)

    def wait_s(self, key: str) -> float:
        tokens = self._tokens(key, self.clock())
        if tokens >= 1:
            return 0.0
        return (1 - tokens) / self.bucket.per_s if self.bucket.per_s > 0 else math.inf

    def take(self, key: str) -> None:
        now = self.clock()
        tokens = self._tokens(key, now) - 1
        self._state.pop(key, None)  # re-insert: dict order is the age order for eviction
        self._state[key] = (tokens, now)
        while len(self._state) > self.max_keys:
            del self._state[next(iter(self._state))]


class Busy(Exception):
    """The hashing queue is full."""


class HashQueue:
    def __init__(self, workers: int, queue: int) -> None:
        self.capacity = workers + queue
        self.pending = 0
        self._pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="stub-hash")

    async def verify(self, secret: str, stored: str) -> bool:
        if self.pending >= self.capacity:
            raise Busy
        self.pending += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, verify_secret, secret, stored)
        finally:
            self.pending -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


class AuthorizeGuard:
    def __init__(
        self,
        limits: AuthorizeLimits,
        clock: Callable[[], float] = time.monotonic,
        tarpit_s: float = TARPIT_S,
    ) -> None:
        self.limits = limits
        self.tarpit_s = tarpit_s
        self.per_client = KeyedLimiter(limits.per_client, clock=clock)
        self.per_peer = KeyedLimiter(limits.per_peer, clock=clock)
        self.hashes = HashQueue(limits.hash_workers, limits.hash_queue)

    async def admit(self, client_id: str, peer: str | None) -> None:
        client_key = client_id[:MAX_KEY_CHARS]
        peer_key = peer or "?"
        wait = max(self.per_client.wait_s(client_key), self.per_peer.wait_s(peer_key))
        if wait > 0:
            await asyncio.sleep(min(wait, self.tarpit_s))
            raise ApiError(
                429,
                "too_many_attempts",
                f"too many authorize attempts; retry in {max(1, math.ceil(wait))} s",
                headers=_retry_after(wait),
            )
        self.per_client.take(client_key)
        self.per_peer.take(peer_key)

    async def check(self, secret: str, stored: str | None) -> bool:
        try:
            ok = await self.hashes.verify(secret, stored or DUMMY_HASH)
        except Busy:
            raise ApiError(
                503,
                "busy",
                "too many authorize attempts are being checked; retry shortly",
                headers=_retry_after(1),
            ) from None
        return ok and stored is not None

    def close(self) -> None:
        self.hashes.close()
