"""The store's one connection and its group commit: how an acknowledged write is durable.

- WAL mode with ``synchronous=NORMAL``: a commit is in the WAL (the OS page cache) before
  ``COMMIT`` returns, so every acknowledged write survives a SIGKILL; only a power loss can lose
  the last commits, which a test double may accept rather than pay an fsync per request.
- Every call is synchronous on the event loop's thread: writers are serialized, so the
  idempotency insert and the pending -> processed update are race-free without locks.
- Group commit: the first creation of an event-loop turn opens a SQL transaction, later ones in
  the same turn join it, and one COMMIT (``call_soon``) acknowledges them all. Every other use of
  the connection (``conn``) commits the open batch first, so reads only see committed data.
- Checkpoints run on a background thread (``checkpoint``), not inside a request's COMMIT.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from stub_server.store import decimal_sum
from stub_server.store.checkpoint import AUTOCHECKPOINT_BACKSTOP_PAGES, Checkpointer
from stub_server.store.private_files import make_private, on_disk
from stub_server.store.schema import SCHEMA


def missing_folder(path: str) -> str | None:
    """The folder of database file ``path`` when it does not exist."""
    if not on_disk(path):
        return None
    folder = Path(path).parent
    return None if folder.is_dir() else str(folder)


class GroupCommitDatabase:
    """The base of every table's class; ``Store`` puts them together."""

    def __init__(self, path: str) -> None:
        self.path = path
        if on_disk(path):
            # no silent creation of folders: a typo in ``--db`` must not start an empty store
            missing = missing_folder(path)
            if missing is not None:
                raise sqlite3.OperationalError(f"the folder {missing} does not exist")
            make_private(path)
        self._db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, cached_statements=256
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("PRAGMA cache_size=-32768")  # 32 MiB: indexes of large stores
        decimal_sum.register(self._db)
        self._db.executescript(SCHEMA)
        self._batch: list[asyncio.Future[None]] | None = None
        self.lookups: dict[str, dict[str | None, bytes]] = {}
        self._checkpointer: Checkpointer | None = None
        if str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            self._db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_BACKSTOP_PAGES}")
            self._checkpointer = Checkpointer(path)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._batch is not None:
            self.flush()
        return self._db

    def open_batch(self) -> None:
        if self._batch is None:
            self._db.execute("BEGIN IMMEDIATE")
            self._batch = []
            asyncio.get_running_loop().call_soon(self.flush)

    def batch_commit(self) -> asyncio.Future[None]:
        assert self._batch is not None, "open_batch() first"
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._batch.append(done)
        return done

    def flush(self) -> None:
        waiters, self._batch = self._batch, None
        if waiters is None:
            return
        try:
            self._db.execute("COMMIT")
        except Exception as exc:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self.lookups.clear()  # nothing of the batch was committed
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        self.count_commit()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def count_commit(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.commits += 1

    def close(self) -> None:
        self.flush()
        if self._checkpointer is not None:
            self._checkpointer.stop()
        try:
            self._db.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        self._db.close()
