"""Files that hold private data: the database (merchants' transactions, customers' numbers)
and, beside it, the secrets (the JWT key, the webhook secrets).

Why beside and not inside: a database gets copied (a backup, a test artifact, a bug report),
and whoever holds these secrets can mint tokens or sign deliveries the stub's clients accept.
"""

from __future__ import annotations

import os
from pathlib import Path


def on_disk(db: str) -> bool:
    """False for ``:memory:`` and ``file:`` URIs, which name no file of their own."""
    return db != ":memory:" and not db.startswith("file:")


def beside_db(db: str, suffix: str) -> Path | None:
    """None off disk: the secrets then live as long as the process."""
    return Path(db + suffix) if on_disk(db) else None


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically; the new file is 0600 from its first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def make_private(path: str) -> None:
    """Create the database file 0600 before SQLite opens it, and tighten an existing one and its
    ``-wal``/``-shm`` (SQLite creates those with the database file's permissions)."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for suffix in ("", "-wal", "-shm"):
        try:
            os.chmod(path + suffix, 0o600)
        except FileNotFoundError:
            pass
