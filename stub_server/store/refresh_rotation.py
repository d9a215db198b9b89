"""Spent refresh tokens (RC-10, AUTH-012): a used ``jti`` is recorded so a second use is
refused; rows are pruned once the token would have expired anyway. Under the
``revoke-on-refresh`` variant the same rows revoke the access token issued with each spent refresh
token (``spent``)."""

from __future__ import annotations

from stub_server.store.group_commit import GroupCommitDatabase


class RefreshRotation(GroupCommitDatabase):
    def use_refresh(self, jti: str, exp: int) -> bool:
        """False when it was already spent."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO used_refresh (jti, exp) VALUES (?, ?)", (jti, exp)
        )
        return cur.rowcount == 1

    def spent(self, jti: str) -> bool:
        """Whether the refresh token ``jti`` was used (kept until ``prune_refresh`` drops it)."""
        row = self.conn.execute("SELECT 1 FROM used_refresh WHERE jti = ?", (jti,)).fetchone()
        return row is not None

    def prune_refresh(self, now_s: int) -> None:
        self.conn.execute("DELETE FROM used_refresh WHERE exp < ?", (now_s,))
