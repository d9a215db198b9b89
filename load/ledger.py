"""The ledger of acknowledged creates, gathered on the master over Locust's own messages.

Users append to a per-process outbox; a greenlet sends it once a second with
``runner.send_message`` (and once more at ``test_stop``), and the master (or the local runner,
which delivers to its own listener) merges the batches: one code path, so the ledger is
complete whether the workers run here or on other machines.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, TypedDict, cast

if TYPE_CHECKING:  # imported outside Locust too (the reconciliation's types)
    from locust.env import Environment
    from locust.rpc import Message

MESSAGE_TYPE = "paysuite_ledger"
FLUSH_INTERVAL_S = 1.0

log = logging.getLogger(__name__)


class CreateRecord(TypedDict):
    """One create a virtual user saw acknowledged: a promise the target made."""

    ref: str
    key: str
    kind: str
    number: str
    amount: float
    merchant: str
    t: float
    storm: NotRequired[bool]


class TimeToProcessed(TypedDict):
    seconds: float
    status: str


class Batch(TypedDict):
    """What a process sends the master once a second."""

    creates: list[CreateRecord]
    counters: dict[str, int]
    ttp: list[TimeToProcessed]


@dataclass
class Ledger:
    """Per process: an outbox (every runner but the master) and the merged totals (master/local)."""

    creates: list[CreateRecord] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)
    time_to_processed: list[TimeToProcessed] = field(default_factory=list)
    batches_received: int = 0
    sources: set[str] = field(default_factory=set)
    #: the outbox: what the next ``flush`` sends
    _out: Batch = field(default_factory=lambda: Batch(creates=[], counters={}, ttp=[]))

    # -- user side -----------------------------------------------------------------------------
    def record_create(self, record: CreateRecord) -> None:
        self._out["creates"].append(record)

    def count(self, name: str, amount: int = 1) -> None:
        counters = self._out["counters"]
        counters[name] = counters.get(name, 0) + amount

    def record_time_to_processed(self, seconds: float, status: str) -> None:
        self._out["ttp"].append({"seconds": round(seconds, 4), "status": status})

    def flush(self, environment: Environment) -> None:
        """Send the outbox to the master (or to ourselves when running locally)."""
        if not any(self._out.values()):
            return
        batch, self._out = self._out, Batch(creates=[], counters={}, ttp=[])
        runner = environment.runner
        if runner is None:
            self.merge(batch, "local")
            return
        runner.send_message(MESSAGE_TYPE, batch)

    # -- master side ---------------------------------------------------------------------------
    def merge(self, batch: Batch, source: str) -> None:
        self.creates.extend(batch.get("creates") or [])
        self.counters.update(batch.get("counters") or {})
        self.time_to_processed.extend(batch.get("ttp") or [])
        self.batches_received += 1
        self.sources.add(source)

    def on_message(self, environment: Environment, msg: Message, **_: object) -> None:
        batch = cast(Batch, msg.data or {})  # what flush() sent (keys may be missing: .get)
        self.merge(batch, str(getattr(msg, "node_id", "?")))

    def reset(self) -> None:
        """A new test run in the same process (the web UI's restart): start from nothing."""
        vars(self).update(vars(Ledger()))


LEDGER = Ledger()


def install(environment: Environment) -> None:
    """Wire the ledger into a runner: the listener where batches land, the flusher where made
    (its last flush at ``test_stop``: ``load.hooks``)."""
    import gevent
    from locust.runners import MasterRunner, WorkerRunner

    runner = environment.runner
    if runner is None:
        return
    if not isinstance(runner, WorkerRunner):
        runner.register_message(MESSAGE_TYPE, LEDGER.on_message)
    if isinstance(runner, MasterRunner):
        return

    def flusher() -> None:
        while True:
            gevent.sleep(FLUSH_INTERVAL_S)
            try:
                LEDGER.flush(environment)
            except Exception:  # a lost flush must not kill the flusher
                log.exception("paysuite: could not flush the ledger")

    gevent.spawn(flusher)
