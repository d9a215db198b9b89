"""The webhook endpoints' signing secrets, kept out of the database (``store.private_files``) in
``<db>.webhook-secrets``; the ``webhook_endpoints`` table keeps only the mode and the URL.

The file is JSON, one entry per mode: the current ``secret`` and, during a rotation's overlap,
the ``previous`` one and until when (``previous_until_us``) it still signs. ``paysuite stub
webhooks add`` and ``rotate`` write it from another process; the running stub re-reads it when
it changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stub_server.store.private_files import beside_db, write_private

SUFFIX = ".webhook-secrets"


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

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"secret": self.secret}
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

    def all(self) -> dict[str, EndpointSecrets]:
        """A copy, from the file as it is now."""
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

    def get(self, mode: str) -> EndpointSecrets | None:
        return self.all().get(mode)

    def put(self, mode: str, secrets: EndpointSecrets) -> None:
        entries = self.all()
        entries[mode] = secrets
        self._memory = entries
        if self.path is not None:
            text = json.dumps({m: s.to_dict() for m, s in sorted(entries.items())}, indent=1)
            write_private(self.path, text)
            self._stamp = self._current_stamp()
