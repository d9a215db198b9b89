"""Filling a store with many transactions at once, for a benchmark of the events list at scale.

Why through ``create_transaction`` and ``process_many`` and not straight into the tables: the
events, their running totals and their indexes are then exactly what the handlers would have
written, so a seeded store measures the store the stub serves.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable

from stub_server.store import NewTransaction, Store

#: Creations per group commit; each group's processing then goes in one SQL transaction.
BATCH = 2000


def seed_transactions(store: Store, seeds: Iterable[tuple[NewTransaction, str | None]]) -> int:
    """Create each transaction and, when its status is not None, process it to that status
    (with its processed event) at the latest creation time of its batch. Returns how many
    events were written. Must not be called from a running event loop."""

    async def insert() -> int:
        written = 0
        iterator = iter(seeds)
        while batch := list(itertools.islice(iterator, BATCH)):
            await asyncio.gather(*(store.create_transaction(new) for new, _status in batch))
            done = [
                (found.id, status)
                for new, status in batch
                if status is not None and (found := store.find(new.ref, new.merchant)) is not None
            ]
            now_us = max(new.created_us for new, _status in batch)
            written += len(batch) + store.process_many(done, now_us, record_event=True)
        return written

    return asyncio.run(insert())
