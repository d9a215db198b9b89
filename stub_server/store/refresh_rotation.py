"""Spent refresh tokens (Endpoints, 6. Refresh tokens; RC-10): rotation's memory.

Checked by AUTH-012. A refresh token is recorded by its ``jti`` when used, so a second use is
refused; rows are pruned once the token would have expired anyway.
"""

from __future__ import annotations

from stub_server.store.group_commit import GroupCommitDatabase


class RefreshRotation(GroupCommitDatabase):
    """The ``used_refresh`` table."""

    def use_refresh(self, jti: str, exp: int) -> bool:
        """Record a refresh token as spent; False when it already was."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO used_refresh (jti, exp) VALUES (?, ?)", (jti, exp)
        )
        return cur.rowcount == 1

    def prune_refresh(self, now_s: int) -> None:
        self.conn.execute("DELETE FROM used_refresh WHERE exp < ?", (now_s,))
