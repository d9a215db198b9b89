"""The outbox's consumer: takes due deliveries, POSTs them signed, records the outcome (RC-40).

At-least-once: a delivery leaves ``pending`` only when a receiver answered 2xx (``delivered``)
or its last attempt failed (``abandoned``); an attempt cut short by a stop or a SIGKILL was not
recorded, so it is made again after the restart with the same event_id, by which a receiver
deduplicates. One transaction's deliveries go one after the other in event order; different
transactions go concurrently.

One endpoint cannot stall another: each endpoint (mode) has its own lane, with its own
concurrency and circuit breaker, and the outbox is read per mode, so a backlog of thousands
never hides another endpoint's due rows. Deliveries whose breaker is open stay ``pending``
without spending an attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field

import aiohttp

from paysuite_core.http_clients import aiohttp_session
from paysuite_core.webhooks import signature as webhook_signature
from stub_server import timefmt
from stub_server.errors import json_body
from stub_server.rules.rendering import Renderer
from stub_server.store import Delivery, Store, WebhookEndpoint, no_endpoint_error, uuid4_text
from stub_server.webhook_delivery.endpoints import ping, send
from stub_server.webhook_delivery.retry_policy import RetryPolicy

log = logging.getLogger("stub_server.webhook_delivery")

#: Without a wake-up, the dispatcher looks at the outbox (and re-reads the endpoints, which
#: ``paysuite stub webhooks add`` may have changed) this often.
POLL_S = 1.0
#: Deliveries read from the outbox per round.
BATCH = 200

#: Transactions delivered at once to one endpoint.
LANE_CONCURRENCY = 4
#: Failed attempts in a row that open an endpoint's circuit breaker.
BREAKER_FAILURES = 5
#: ``paysuite`` (Paysuite-Signature, timestamped) and ``live`` (X-Paypack-Signature).
SIGNATURE_FORMATS = ("paysuite", "live")


@dataclass
class DeliveryHooks:
    """The points where a ``webhook-*`` fault replaces a rule of delivery."""

    signing_secret: Callable[[str], str] = str
    retries: bool = True
    #: Whether each delivered event is sent a second time under a new event_id.
    duplicate_new_id: bool = False
    #: When set, a created delivery waits (up to this long) for its processed one, and the
    #: two are sent processed first.
    out_of_order_hold_s: float | None = None
    signature_formats: tuple[str, ...] = SIGNATURE_FORMATS


def stalls(error: str) -> bool:
    """Whether a failed attempt says the endpoint is down or overloaded (no answer, a refused
    connection, 5xx, 429): what the breaker counts. A receiver that answers another 4xx at once
    (a signature it refuses) stalls no one; its deliveries back off one by one."""
    if not error.startswith("HTTP "):
        return True
    status = error[5:8]
    return status.startswith("5") or status == "429"


@dataclass
class CircuitBreaker:
    """Closed (deliver), open (leave the endpoint alone until ``open_until``), then half-open
    (one trial delivery: a success closes it, a failure opens it again for twice as long, up to
    the retry policy's cap)."""

    base_s: float
    cap_s: float
    failures: int = 0
    trips: int = 0
    open_until: float = 0.0

    def is_open(self, now: float) -> bool:
        return now < self.open_until

    def half_open(self, now: float) -> bool:
        return self.trips > 0 and self.failures >= BREAKER_FAILURES and not self.is_open(now)

    def succeeded(self) -> None:
        self.failures = 0
        self.trips = 0
        self.open_until = 0.0

    def failed(self, now: float) -> bool:
        """Count one failed attempt; True when it opened the breaker (attempts already under
        way when it opened add nothing to its cool-down)."""
        self.failures += 1
        if self.failures < BREAKER_FAILURES or self.is_open(now):
            return False
        cool_s = min(self.cap_s, max(self.base_s, 0.05) * 2.0 ** min(self.trips, 30))
        self.trips += 1
        self.open_until = now + cool_s
        return True


@dataclass
class Lane:
    """One endpoint's transactions under way and its breaker."""

    mode: str
    breaker: CircuitBreaker
    limit: int = LANE_CONCURRENCY
    busy: set[str] = field(default_factory=set)
    pinged_url: str | None = None

    def free(self, now: float) -> int:
        if self.breaker.is_open(now):
            return 0
        limit = 1 if self.breaker.half_open(now) else self.limit
        return max(0, limit - len(self.busy))


class Dispatcher:
    """One per running stub: the outbox's consumer, one lane per endpoint."""

    def __init__(
        self,
        store: Store,
        render: Renderer,
        policy: RetryPolicy,
        hooks: DeliveryHooks,
    ) -> None:
        self.store = store
        self.render = render
        self.policy = policy
        self.hooks = hooks
        self.lanes: dict[str, Lane] = {}
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[object]] = set()
        self._session: aiohttp.ClientSession | None = None
        self._endpoints_read = 0.0
        store.on_enqueue = self._wake.set

    def lane(self, mode: str) -> Lane:
        lane = self.lanes.get(mode)
        if lane is None:
            breaker = CircuitBreaker(self.policy.base_s, self.policy.cap_s)
            lane = self.lanes[mode] = Lane(mode, breaker)
        return lane

    async def run_forever(self) -> None:
        # limit=0: the lanes bound the connections
        async with aiohttp_session(limit=0) as session:
            self._session = session
            try:
                while True:
                    self._wake.clear()
                    self._read_endpoints()
                    self._dispatch_due()
                    await self._sleep()
            finally:
                self.store.on_enqueue = None
                for task in list(self._tasks):
                    task.cancel()
                for task in list(self._tasks):
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    def _read_endpoints(self) -> None:
        """Every ``POLL_S``: re-read the endpoints (``paysuite stub webhooks add`` writes them
        from another process) and ping any endpoint that is new or has a new URL."""
        if time.monotonic() - self._endpoints_read < POLL_S:
            return
        self.store.reload_webhook_urls()
        self._endpoints_read = time.monotonic()
        for mode, url in self.store.webhook_urls.items():
            lane = self.lane(mode)
            if lane.pinged_url != url:
                lane.pinged_url = url
                lane.breaker.succeeded()  # a new address starts with a closed breaker
                self._start(self._ping(mode, url))

    def _start(self, work: Coroutine[object, None, object]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ping(self, mode: str, url: str) -> None:
        """Logged when unanswered: the endpoint will not receive deliveries as it is."""
        assert self._session is not None, "run_forever() first"
        problem = await ping(url, self._session)
        if problem is not None:
            log.warning("webhook endpoint %s %s does not answer a HEAD: %s", mode, url, problem)

    async def _sleep(self) -> None:
        """Until a delivery that a lane may start is due, a wake-up (a new delivery, a
        finished one) or ``POLL_S``; an open breaker wakes the loop when it half-opens."""
        now_mono = time.monotonic()
        delay = POLL_S
        now_us = timefmt.now_us()
        for mode, lane in self.lanes.items():
            if lane.breaker.is_open(now_mono):
                delay = min(delay, lane.breaker.open_until - now_mono)
            elif lane.free(now_mono) > 0 and mode in self.store.webhook_urls:
                due = self.store.next_delivery_due(mode, exclude_refs=lane.busy)
                if due is not None:
                    delay = min(delay, max(0.0, (due - now_us) / 1e6))
        if delay <= 0:
            await asyncio.sleep(0)  # more due than one batch: go on, but let requests in
            return
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation that
        # arrives as the wake-up does, and the stub's shutdown would then wait forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._wake.wait()

    def _dispatch_due(self) -> None:
        """Start the due transactions not already under way, lane by lane, while slots last."""
        now = timefmt.now_us()
        now_mono = time.monotonic()
        for mode in self.store.pending_modes():
            lane = self.lane(mode)
            free = lane.free(now_mono)
            if free <= 0:
                continue
            groups: dict[str, list[Delivery]] = {}
            for delivery in self.store.due_deliveries(now, BATCH, lane.busy, mode=mode):
                groups.setdefault(delivery.ref, []).append(delivery)
            for ref, deliveries in groups.items():
                if lane.free(now_mono) <= 0:
                    break
                deliveries.sort(key=lambda d: d.id)  # both due (retries): still in event order
                if self.hooks.out_of_order_hold_s is not None:
                    deliveries = self._out_of_order(ref, deliveries, now)
                    if not deliveries:
                        continue
                lane.busy.add(ref)
                self._start(self._deliver_in_turn(lane, ref, deliveries))

    def _out_of_order(self, ref: str, deliveries: list[Delivery], now: int) -> list[Delivery]:
        """Fault ``webhook-out-of-order``: hold a never-tried created delivery until its
        processed one exists (or the hold ends), then send both, processed first."""
        hold_s = self.hooks.out_of_order_hold_s or 0.0
        pending = self.store.pending_deliveries_of(ref)
        if any(d.event_kind == "transaction:processed" for d in pending):
            return sorted(pending, key=lambda d: d.event_kind != "transaction:processed")
        held = []
        for d in deliveries:
            if d.attempts == 0 and d.event_kind == "transaction:created":
                event = self.store.delivery_event(d.event_seq)
                if event is not None and now - event.created_us < hold_s * 1e6:
                    until_us = event.created_us + int(hold_s * 1e6)
                    self.store.record_attempt(d.id, 0, "pending", d.url, next_attempt_us=until_us)
                    held.append(d)
        return [d for d in deliveries if d not in held]

    async def _deliver_in_turn(self, lane: Lane, ref: str, deliveries: list[Delivery]) -> None:
        try:
            for delivery in deliveries:
                if lane.breaker.is_open(time.monotonic()):
                    break  # the rest waits, pending, until the breaker half-opens
                await self._attempt(lane, delivery)
        except Exception:  # a bug must not stop the other deliveries; the row stays pending
            log.exception("webhook delivery of %s failed unexpectedly", ref)
        finally:
            lane.busy.discard(ref)
            self._wake.set()

    async def _attempt(self, lane: Lane, delivery: Delivery) -> None:
        """One attempt at ``delivery``, and its outcome recorded (and told to the breaker)."""
        store = self.store
        endpoint = store.webhook_endpoint(delivery.mode)
        event = store.delivery_event(delivery.event_seq)
        if endpoint is None or event is None:  # the endpoint was removed; the event cannot be
            why = no_endpoint_error(delivery.mode) if endpoint is None else "event not found"
            store.record_attempt(
                delivery.id, delivery.attempts, "abandoned", delivery.url, last_error=why
            )
            return
        record = self.render.event(event)
        attempt = delivery.attempts + 1
        error = await self.post(endpoint, json_body(record), event.event_id, attempt)
        now = timefmt.now_us()
        if error is None:
            lane.breaker.succeeded()
            store.record_attempt(delivery.id, attempt, "delivered", endpoint.url, delivered_us=now)
            if self.hooks.duplicate_new_id:
                copy = {**record, "event_id": uuid4_text()}
                await self.post(endpoint, json_body(copy), str(copy["event_id"]), 1)
            return
        if stalls(error) and lane.breaker.failed(time.monotonic()):
            log.warning("webhook endpoint %s %s failed %d attempts in a row: not tried for "
                        "%.1f s", endpoint.mode, endpoint.url, lane.breaker.failures,
                        lane.breaker.open_until - time.monotonic())  # fmt: skip
        if attempt >= self.policy.max_attempts or not self.hooks.retries:
            log.warning("webhook %s abandoned after %d attempt(s): %s", event.event_id,
                        attempt, error)  # fmt: skip
            store.record_attempt(delivery.id, attempt, "abandoned", endpoint.url, last_error=error)
            return
        retry_us = now + int(self.policy.delay_s(attempt) * 1e6)
        store.record_attempt(
            delivery.id,
            attempt,
            "pending",
            endpoint.url,
            last_error=error,
            next_attempt_us=retry_us,
        )

    def signature_headers(self, endpoint: WebhookEndpoint, body: bytes) -> dict[str, str]:
        """During a rotation's overlap ``Paysuite-Signature`` carries a ``v1=`` per secret (the new
        one first); ``X-Paypack-Signature`` has room for one value, so it is made with the
        previous secret until the overlap ends: the receivers written for the live service
        keep verifying with the secret they were given until they switch."""
        secrets = [self.hooks.signing_secret(one) for one in endpoint.secrets.signing(
            timefmt.now_us())]  # fmt: skip
        headers = {}
        if "paysuite" in self.hooks.signature_formats:
            headers[webhook_signature.SIGNATURE_HEADER] = webhook_signature.sign(secrets, body)
        if "live" in self.hooks.signature_formats:
            headers[webhook_signature.LIVE_SIGNATURE_HEADER] = webhook_signature.sign_live(
                secrets[-1], body
            )
        return headers

    async def post(
        self, endpoint: WebhookEndpoint, body: bytes, event_id: str, attempt: int
    ) -> str | None:
        """None when the receiver acknowledged it (2xx), else why the attempt failed."""
        assert self._session is not None, "run_forever() first"
        headers = {
            "Content-Type": "application/json",
            **self.signature_headers(endpoint, body),
            webhook_signature.EVENT_ID_HEADER: event_id,
            webhook_signature.ATTEMPT_HEADER: str(attempt),
            webhook_signature.MODE_HEADER: endpoint.mode,
        }
        return await send(self._session, "POST", endpoint.url, self.policy.timeout_s, body, headers)
