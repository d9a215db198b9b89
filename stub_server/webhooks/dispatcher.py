"""The dispatcher: takes due deliveries from the outbox, POSTs them signed, records the outcome.

At-least-once (RC-40): a delivery leaves ``pending`` only when a receiver answered 2xx
(``delivered``) or its last attempt failed (``abandoned``); an attempt cut short by a stop or a
SIGKILL was not recorded, so it is made again after the restart, with the same event_id, which
is how a receiver deduplicates. Deliveries of one transaction are attempted one after the other
in event order (created before processed); different transactions go concurrently, at most
``concurrency`` at a time.

The fault switches of delivery (``stub_server.faults``: ``webhook-*``) are fields of
``DeliveryHooks``, set by ``stub_server.fault_hooks``; the defaults are the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from paysuite_core import webhook_signature
from stub_server import timefmt
from stub_server.errors import json_body
from stub_server.rules.rendering import Renderer
from stub_server.store import Delivery, Store, WebhookEndpoint, no_endpoint_error, uuid4_text
from stub_server.webhooks.endpoint_url import EndpointUrlError, check_endpoint_url
from stub_server.webhooks.retry_policy import RetryPolicy

log = logging.getLogger("stub_server.webhooks")

#: Without a wake-up, the dispatcher looks at the outbox (and re-reads the endpoints, which
#: ``paysuite stub webhooks add`` may have changed) this often.
POLL_S = 1.0
#: Deliveries read from the outbox per round.
BATCH = 200
#: How much of a failed answer's body goes into the log's ``last_error``.
ERROR_BODY_CHARS = 200


def _same(secret: str) -> str:
    return secret


@dataclass
class DeliveryHooks:
    """The points where a webhook fault switch replaces a rule of delivery."""

    #: The secret a delivery is signed with, from the endpoint's.
    signing_secret: Callable[[str], str] = _same
    #: Whether a failed attempt is retried (before ``max_attempts``).
    retries: bool = True
    #: Whether each delivered event is sent a second time under a new event_id.
    duplicate_new_id: bool = False
    #: When set, a created delivery waits (up to this long) for its processed one, and the
    #: two are sent processed first.
    out_of_order_hold_s: float | None = None


class Dispatcher:
    """One per running stub: the outbox's consumer."""

    def __init__(
        self,
        store: Store,
        render: Renderer,
        policy: RetryPolicy,
        hooks: DeliveryHooks,
        *,
        concurrency: int = 8,
    ) -> None:
        self.store = store
        self.render = render
        self.policy = policy
        self.hooks = hooks
        self.concurrency = concurrency
        self._wake = asyncio.Event()
        self._busy_refs: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self._endpoints_read = time.monotonic()
        store.on_enqueue = self._wake.set

    async def run_forever(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self.policy.timeout_s)
        connector = aiohttp.TCPConnector(limit=self.concurrency * 2)
        async with aiohttp.ClientSession(
            timeout=timeout, connector=connector, trust_env=False
        ) as session:
            self._session = session
            try:
                while True:
                    self._wake.clear()
                    self._dispatch_due()
                    await self._sleep()
            finally:
                self.store.on_enqueue = None
                for task in list(self._tasks):
                    task.cancel()
                for task in list(self._tasks):
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _sleep(self) -> None:
        """Until a delivery not already under way is due, a wake-up (a new delivery, a
        finished one) or ``POLL_S``; the endpoints are re-read every ``POLL_S``."""
        if time.monotonic() - self._endpoints_read >= POLL_S:
            self.store.reload_webhook_urls()
            self._endpoints_read = time.monotonic()
        delay = POLL_S
        if len(self._busy_refs) < self.concurrency:
            due = self.store.next_delivery_due(exclude_refs=self._busy_refs)
            if due is not None:
                delay = min(POLL_S, max(0.0, (due - timefmt.now_us()) / 1e6))
        if delay <= 0:
            await asyncio.sleep(0)  # more due than one batch: go on, but let requests in
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=delay)

    def _dispatch_due(self) -> None:
        """Start delivering the due transactions not already under way, while slots last."""
        if len(self._busy_refs) >= self.concurrency:
            return  # a finished delivery wakes the loop again
        now = timefmt.now_us()
        groups: dict[str, list[Delivery]] = {}
        for delivery in self.store.due_deliveries(now, BATCH):
            if delivery.ref not in self._busy_refs:
                groups.setdefault(delivery.ref, []).append(delivery)
        for ref, deliveries in groups.items():
            if len(self._busy_refs) >= self.concurrency:
                return
            deliveries.sort(key=lambda d: d.id)  # both due (retries): still in event order
            if self.hooks.out_of_order_hold_s is not None:
                deliveries = self._out_of_order(ref, deliveries, now)
                if not deliveries:
                    continue
            self._busy_refs.add(ref)
            task = asyncio.create_task(self._deliver_in_turn(ref, deliveries))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

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
                    self._postpone(d, event.created_us + int(hold_s * 1e6))
                    held.append(d)
        return [d for d in deliveries if d not in held]

    def _postpone(self, d: Delivery, until_us: int) -> None:
        self.store.record_attempt(
            d.id, attempts=d.attempts, status="pending", url=d.url, last_error=d.last_error,
            next_attempt_us=until_us, delivered_us=None,
        )  # fmt: skip

    async def _deliver_in_turn(self, ref: str, deliveries: list[Delivery]) -> None:
        try:
            for delivery in deliveries:
                await self._attempt(delivery)
        except Exception:  # a bug must not stop the other deliveries; the row stays pending
            log.exception("webhook delivery of %s failed unexpectedly", ref)
        finally:
            self._busy_refs.discard(ref)
            self._wake.set()

    async def _attempt(self, delivery: Delivery) -> None:
        """One attempt at ``delivery``, and its outcome recorded."""
        store = self.store
        endpoint = store.webhook_endpoint(delivery.mode)
        event = store.delivery_event(delivery.event_seq)
        if endpoint is None or event is None:  # the endpoint was removed; the event cannot be
            why = no_endpoint_error(delivery.mode) if endpoint is None else "event not found"
            store.record_attempt(
                delivery.id, attempts=delivery.attempts, status="abandoned", url=delivery.url,
                last_error=why, next_attempt_us=None, delivered_us=None,
            )  # fmt: skip
            return
        record = self.render.event(event)
        attempt = delivery.attempts + 1
        error = await self.post(endpoint, json_body(record), event.event_id, attempt)
        now = timefmt.now_us()
        if error is None:
            store.record_attempt(
                delivery.id, attempts=attempt, status="delivered", url=endpoint.url,
                last_error=None, next_attempt_us=None, delivered_us=now,
            )  # fmt: skip
            if self.hooks.duplicate_new_id:
                copy = {**record, "event_id": uuid4_text()}
                await self.post(endpoint, json_body(copy), str(copy["event_id"]), 1)
            return
        if attempt >= self.policy.max_attempts or not self.hooks.retries:
            log.warning("webhook %s abandoned after %d attempt(s): %s", event.event_id,
                        attempt, error)  # fmt: skip
            store.record_attempt(
                delivery.id, attempts=attempt, status="abandoned", url=endpoint.url,
                last_error=error, next_attempt_us=None, delivered_us=None,
            )  # fmt: skip
            return
        store.record_attempt(
            delivery.id, attempts=attempt, status="pending", url=endpoint.url, last_error=error,
            next_attempt_us=now + int(self.policy.delay_s(attempt) * 1e6), delivered_us=None,
        )  # fmt: skip

    async def post(
        self, endpoint: WebhookEndpoint, body: bytes, event_id: str, attempt: int
    ) -> str | None:
        """POST one signed delivery; None when the receiver acknowledged it (2xx), else why
        the attempt failed."""
        assert self._session is not None, "run_forever() first"
        try:
            check_endpoint_url(endpoint.url)  # the environment may have changed since the add
        except EndpointUrlError as exc:
            return str(exc)
        headers = {
            "Content-Type": "application/json",
            webhook_signature.SIGNATURE_HEADER: webhook_signature.sign(
                self.hooks.signing_secret(endpoint.secret), body
            ),
            webhook_signature.EVENT_ID_HEADER: event_id,
            webhook_signature.ATTEMPT_HEADER: str(attempt),
            webhook_signature.MODE_HEADER: endpoint.mode,
        }
        try:
            async with self._session.post(
                endpoint.url, data=body, headers=headers, allow_redirects=False
            ) as response:
                if 200 <= response.status < 300:
                    return None
                text = (await response.text(errors="replace"))[:ERROR_BODY_CHARS]
                return f"HTTP {response.status}: {text}".rstrip(": ")
        except TimeoutError:
            return f"no answer within {self.policy.timeout_s:g} s"
        except (aiohttp.ClientError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"
