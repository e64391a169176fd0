"""The change log: one entry for every change to what a chat or the library holds.

What is logged: library add, delete, restore, purge; blueprint set, edit, accept, reject;
chapter submit, revise, rollback, delete; settings. The router writes an entry for every
command the permission table marks as a change (`bot.permissions.Rule.change`) that
succeeded; the trash's purge and the CLI write their own. Each entry records who (platform,
user id, display name), where (the chat, and the channel or topic), when (the injected
clock), what (the command as given) and what came of it (the reply's first line).

`/sources log` shows a chat admin the entries of their chat and an operator every entry;
`baibao log` prints them. Kept in SQLite (`change_log`), never rewritten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from pathlib import Path

from retrieval.clock import utcnow
from retrieval.sqlite import SqliteOwner

_SCHEMA = """
CREATE TABLE IF NOT EXISTS change_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    platform TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    chat TEXT NOT NULL,
    channel TEXT NOT NULL,
    what TEXT NOT NULL,
    outcome TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS change_log_chat ON change_log(chat, seq);
"""

DETAIL = 300  # characters of the command and of its outcome kept


@dataclass(frozen=True, slots=True)
class Change:
    """One entry. `chat` is the chat's key (`Actor.chat`: `telegram:-100…`, `console:cli`)."""

    at: str  # ISO time, UTC
    platform: str
    user_id: str
    user_name: str
    chat: str
    channel: str
    what: str
    outcome: str = ""


_COLUMNS = tuple(f.name for f in fields(Change))


class ChangeLog(SqliteOwner):
    """`async with ChangeLog(db_path, now=clock.now) as log:`."""

    def __init__(self, db_path: Path | str, *, now: Callable[[], datetime] = utcnow) -> None:
        super().__init__(db_path, _SCHEMA)
        self._now = now

    def stamp(self) -> str:
        """Now, as entries record it."""
        return self._now().isoformat(timespec="seconds")

    async def record(self, change: Change) -> None:
        change = Change(*(str(v)[:DETAIL] for v in astuple(change)))
        await self.db.execute(
            f"INSERT INTO change_log ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * 8)})",
            astuple(change),
        )
        await self.db.commit()

    async def entries(self, chat: str | None = None, *, limit: int = 30) -> list[Change]:
        """The latest entries first (of `chat` only, when given)."""
        where, args = ("WHERE chat = ?", (chat,)) if chat is not None else ("", ())
        rows = await self.db.execute_fetchall(
            f"SELECT {', '.join(_COLUMNS)} FROM change_log {where} ORDER BY seq DESC LIMIT ?",
            (*args, limit),
        )
        return [Change(*(str(v) for v in row)) for row in rows]

    async def count(self, chat: str, what: str, since: str) -> int:
        """How many of `chat`'s entries since `since` (ISO) begin with `what`."""
        rows = await self.db.execute_fetchall(
            "SELECT COUNT(*) FROM change_log WHERE chat = ? AND at >= ? AND what LIKE ?",
            (chat, since, what.replace("%", "") + "%"),
        )
        return int(next(iter(rows))[0])
