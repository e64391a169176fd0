"""Where each round's ballot was posted, and each chat's ballot settings, in SQLite (tables
`bot_ballots`, `bot_ballot_settings`).

A posted ballot is found again by its round (to edit its running count, after a restart too)
and by its native poll's id (a poll's answer names only the poll). A data directory from before
the ballot had a room of its own kept both in the writers' room's tables (`novel_ballots`,
`novel_chat_settings`): they are moved here, once, in one transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path

import aiosqlite

from retrieval.sqlite import SqliteOwner

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bot_ballots (
    round_id TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    channel_id TEXT NOT NULL DEFAULT '',
    message_id TEXT NOT NULL DEFAULT '',
    poll_id TEXT NOT NULL DEFAULT '',
    poll_message_id TEXT NOT NULL DEFAULT '',
    posted_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS bot_ballots_poll ON bot_ballots(poll_id) WHERE poll_id != '';
CREATE TABLE IF NOT EXISTS bot_ballot_settings (
    chat_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (chat_id, key)
);
"""

_COLUMNS = "round_id, platform, chat_id, channel_id, message_id, poll_id, poll_message_id"
# The old tables → the new, with the settings the ballot keeps (`bot.ballot.board`).
_MOVES = {
    "novel_ballots": (
        f"INSERT OR IGNORE INTO bot_ballots({_COLUMNS}, posted_at)"
        f" SELECT {_COLUMNS}, posted_at FROM novel_ballots"
    ),
    "novel_chat_settings": (
        "INSERT OR IGNORE INTO bot_ballot_settings(chat_id, key, value)"
        " SELECT chat_id, key, value FROM novel_chat_settings"
        " WHERE key IN ('ballot_style', 'ballot_voters')"
    ),
}


@dataclass(frozen=True, slots=True)
class PostedBallot:
    """Where a round's ballot was posted: enough to edit it after a restart, and to find its
    round from a native poll's answer. The one type that describes a posted ballot."""

    round_id: str
    platform: str
    chat_id: str
    channel_id: str  # a Discord channel, a Telegram forum topic ("" for none)
    message_id: str  # the message that shows the running count (with the keyboard, if any)
    poll_id: str = ""  # a native poll's id
    poll_message_id: str = ""  # the native poll's own message (stopped at the close)


def _posted(row: sqlite3.Row) -> PostedBallot:
    return PostedBallot(**{f.name: row[f.name] for f in fields(PostedBallot)})


class BallotStore(SqliteOwner):
    """`async with BallotStore(db_path) as store:`; the settings are read once and cached."""

    def __init__(self, db_path: Path | str) -> None:
        super().__init__(db_path, _SCHEMA)
        self.settings: dict[tuple[str, str], str] = {}  # (chat id, key) → value

    async def _loaded(self, db: aiosqlite.Connection) -> None:
        db.row_factory = sqlite3.Row
        tables = {r[0] for r in await db.execute_fetchall("SELECT name FROM sqlite_master")}
        moved = [old for old in _MOVES if old in tables]
        for old in moved:
            await db.execute(_MOVES[old])
            await db.execute(f"DROP TABLE {old}")
        await db.commit()
        for row in await db.execute_fetchall("SELECT chat_id, key, value FROM bot_ballot_settings"):
            self.settings[(row[0], row[1])] = row[2]

    async def save(self, ballot: PostedBallot, now: datetime) -> None:
        b = ballot
        values = (b.round_id, b.platform, b.chat_id, b.channel_id, b.message_id, b.poll_id)
        await self.db.execute(
            f"INSERT INTO bot_ballots({_COLUMNS}, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(round_id) DO UPDATE SET platform = excluded.platform,"
            " chat_id = excluded.chat_id, channel_id = excluded.channel_id,"
            " message_id = excluded.message_id, poll_id = excluded.poll_id,"
            " poll_message_id = excluded.poll_message_id, posted_at = excluded.posted_at",
            (*values, b.poll_message_id, now.isoformat()),
        )
        await self.db.commit()

    async def ballot(self, round_id: str) -> PostedBallot | None:
        rows = await self.db.execute_fetchall(
            "SELECT * FROM bot_ballots WHERE round_id = ?", (round_id,)
        )
        return _posted(next(iter(rows))) if rows else None

    async def by_poll(self, poll_id: str) -> PostedBallot | None:
        if not poll_id:
            return None
        rows = await self.db.execute_fetchall(
            "SELECT * FROM bot_ballots WHERE poll_id = ?", (poll_id,)
        )
        return _posted(next(iter(rows))) if rows else None

    async def set_setting(self, chat_id: str, key: str, value: str) -> None:
        await self.db.execute(
            "INSERT INTO bot_ballot_settings(chat_id, key, value) VALUES (?, ?, ?)"
            " ON CONFLICT(chat_id, key) DO UPDATE SET value = excluded.value",
            (chat_id, key, value),
        )
        await self.db.commit()
        self.settings[(chat_id, key)] = value
