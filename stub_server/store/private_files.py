"""Files beside the database that hold secrets (the JWT key, the webhook secrets).

Why beside and not inside: a database gets copied (a backup, a test artifact, a bug report),
and whoever holds these secrets can mint tokens or sign deliveries the stub's clients accept.
"""

from __future__ import annotations

import os
from pathlib import Path


def beside_db(db: str, suffix: str) -> Path | None:
    """None for ``:memory:`` and ``file:`` URIs: their secrets live as long as the process."""
    if db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db + suffix)


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
