"""The webhook endpoints' signing secrets, kept out of the database (``store.private_files``) in
``<db>.webhook-secrets``; the ``webhook_endpoints`` table keeps only the mode and the URL.

The file is JSON, one entry per mode: the current ``secret`` and, during a rotation's overlap,
the ``previous`` one and until when (``previous_until_us``) it still signs. ``paysuite stub
webhooks add`` and ``rotate`` write it from another process; the running stub re-reads it when
it changes. A previous secret whose overlap has ended signs nothing more and is removed from the
file (by whichever process reads or writes it next: the running stub reads it for every
delivery), so that the file holds no key that could still forge a delivery for a receiver that
never switched. Writers take ``<file>.lock`` (``flock``) around their read-change-write, so a
prune by the stub and a ``rotate`` from another process never undo each other.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from stub_server.store.private_files import beside_db, write_private
from stub_server.timefmt import now_us as _now_us

SUFFIX = ".webhook-secrets"
#: The longest overlap a rotation takes (``rotate --overlap``): a week. The old secret is meant to
#: stop; a week lets every receiver switch at its next deploy, and an overlap of years would keep
#: a secret believed retired signing deliveries.
MAX_OVERLAP_S = 7 * 86400


def check_overlap(overlap_s: float) -> float:
    """``overlap_s`` when it is a rotation's overlap; ``ValueError`` saying the bound otherwise."""
    if not 0 <= overlap_s <= MAX_OVERLAP_S:
        raise ValueError(
            f"an overlap is from 0 (the old secret stops at once) to 7d (a week, "
            f"{MAX_OVERLAP_S} s): the old secret is meant to stop"
        )
    return overlap_s


class SecretsFileError(RuntimeError):
    """The secrets file cannot be read or written; the message names it."""


@dataclass(frozen=True, slots=True)
class EndpointSecrets:
    secret: str
    previous: str | None = None
    previous_until_us: int | None = None

    def signing(self, now_us: int) -> tuple[str, ...]:
        """The secrets a delivery made at ``now_us`` is signed with, the current one first."""
        overlap = self.previous and self.previous_until_us and now_us < self.previous_until_us
        return (self.secret, self.previous) if overlap and self.previous else (self.secret,)

    def expired(self, now_us: int) -> bool:
        """A previous secret is kept whose overlap has ended."""
        return self.previous is not None and len(self.signing(now_us)) == 1

    def pruned(self, now_us: int) -> EndpointSecrets:
        """Without a previous secret that no longer signs."""
        return (
            replace(self, previous=None, previous_until_us=None) if self.expired(now_us) else self
        )

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"secret": self.secret}
        if self.previous is not None:
            data["previous"] = self.previous
            data["previous_until_us"] = self.previous_until_us
        return data


def secrets_path(db: str) -> Path | None:
    return beside_db(db, SUFFIX)


def _parse(text: str, path: Path) -> dict[str, EndpointSecrets]:
    try:
        raw = json.loads(text) if text.strip() else {}
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        return {
            str(mode): EndpointSecrets(
                str(entry["secret"]),
                None if entry.get("previous") is None else str(entry["previous"]),
                None if entry.get("previous_until_us") is None else int(entry["previous_until_us"]),
            )
            for mode, entry in raw.items()
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise SecretsFileError(f"the webhook secrets file {path} is not valid: {exc}") from None


class SecretsFile:
    """The secrets of a database's endpoints, re-read when the file changes."""

    def __init__(self, db: str) -> None:
        self.path = secrets_path(db)
        self._memory: dict[str, EndpointSecrets] = {}
        self._stamp: tuple[int, int, int] | None = None

    def _current_stamp(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _read(self) -> dict[str, EndpointSecrets]:
        """The entries as the file holds them now (re-read only when it changed)."""
        if self.path is None:
            return dict(self._memory)
        stamp = self._current_stamp()
        if stamp != self._stamp:
            try:
                text = self.path.read_text(encoding="utf-8") if stamp is not None else ""
            except OSError as exc:
                raise SecretsFileError(
                    f"cannot read the webhook secrets file {self.path}: {exc}"
                ) from None
            self._memory = _parse(text, self.path)
            self._stamp = stamp
        return dict(self._memory)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Held around a read-change-write, by every process that writes the file."""
        if self.path is None:
            yield
            return
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise SecretsFileError(f"cannot lock the webhook secrets file {lock}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _write(self, entries: dict[str, EndpointSecrets]) -> None:
        self._memory = entries
        if self.path is not None:
            text = json.dumps({m: s.to_dict() for m, s in sorted(entries.items())}, indent=1)
            write_private(self.path, text)
            self._stamp = self._current_stamp()

    def all(self, now_us: int | None = None) -> dict[str, EndpointSecrets]:
        """A copy, from the file as it is now; a previous secret whose overlap has ended is
        removed from the file first."""
        now = _now_us() if now_us is None else now_us
        entries = self._read()
        if any(one.expired(now) for one in entries.values()):
            with self._locked():
                entries = {mode: one.pruned(now) for mode, one in self._read().items()}
                self._write(entries)
        return dict(entries)

    def get(self, mode: str) -> EndpointSecrets | None:
        return self.all().get(mode)

    def put(self, mode: str, secrets: EndpointSecrets, now_us: int | None = None) -> None:
        now = _now_us() if now_us is None else now_us
        with self._locked():
            entries = {m: one.pruned(now) for m, one in self._read().items()}
            entries[mode] = secrets.pruned(now)
            self._write(entries)
