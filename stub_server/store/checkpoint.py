"""Checkpoints (copying the WAL back into the database file) off the request path.

SQLite's automatic checkpoint runs inside the COMMIT that crosses the threshold, on the event
loop, and fsyncs the database file: every request in flight would wait for it. ``Checkpointer``
does it on a background thread with its own connection instead.
"""

from __future__ import annotations

import sqlite3
import threading

#: Commits after which the background thread checkpoints (a creation batch writes about ten
#: pages, so roughly SQLite's default of 1000 pages), and the backstop, in WAL pages, at which
#: the request path would checkpoint itself if that thread fell behind.
CHECKPOINT_COMMITS = 100
AUTOCHECKPOINT_BACKSTOP_PAGES = 20000


class Checkpointer:
    """A PASSIVE checkpoint (it never blocks the writer) once ``CHECKPOINT_COMMITS`` commits
    were counted, or at most ``idle_s`` after the first commit not yet checkpointed."""

    def __init__(self, path: str, interval_s: float = 0.1, idle_s: float = 2.0) -> None:
        self.commits = 0  # bumped on the event loop thread; read here (an int: GIL-atomic)
        self._path = path
        self._idle_rounds = max(1, int(idle_s / interval_s))
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stub-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            conn.execute("PRAGMA busy_timeout=100")
            done = 0
            waited_rounds = 0  # rounds since the first commit not yet checkpointed
            while not self._stopping.wait(self._interval_s):
                pending = self.commits - done
                waited_rounds = waited_rounds + 1 if pending else 0
                if pending >= CHECKPOINT_COMMITS or waited_rounds >= self._idle_rounds:
                    seen = self.commits
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    except sqlite3.Error:
                        continue  # busy: the next round tries again
                    done = seen
                    waited_rounds = 0
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)
