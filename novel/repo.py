"""SQLite (aiosqlite, WAL) persistence of the writers' room: every table is prefixed `novel_`.

One connection; every public method is one complete unit (its own transaction) taken under one
asyncio lock, so coroutines never interleave inside a transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite

OPEN_PHASES = ("proposal", "voting", "writing", "pending")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS novel_novels (
    chat_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS novel_blueprints (
    chat_id TEXT PRIMARY KEY REFERENCES novel_novels(chat_id),
    data TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS novel_rounds (
    id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    phase TEXT NOT NULL,
    platform TEXT NOT NULL,
    channel_id TEXT NOT NULL DEFAULT '',
    opener_id TEXT NOT NULL,
    opener_name TEXT NOT NULL DEFAULT '',
    lang TEXT NOT NULL DEFAULT 'zh',
    opened_at TEXT NOT NULL,
    proposal_deadline TEXT NOT NULL,
    vote_deadline TEXT,
    winner_id INTEGER,
    outcome TEXT NOT NULL DEFAULT '',
    closed_at TEXT,
    chapter_id TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS novel_rounds_one_open ON novel_rounds(chat_id)
    WHERE phase IN ('proposal', 'voting', 'writing', 'pending');
CREATE TABLE IF NOT EXISTS novel_proposals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL REFERENCES novel_rounds(id),
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (round_id, user_id)
);
CREATE TABLE IF NOT EXISTS novel_votes (
    round_id TEXT NOT NULL REFERENCES novel_rounds(id),
    user_id TEXT NOT NULL,
    proposal_id INTEGER NOT NULL REFERENCES novel_proposals(id),
    voted_at TEXT NOT NULL,
    PRIMARY KEY (round_id, user_id)
);
CREATE TABLE IF NOT EXISTS novel_chapters (
    id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    chapter_no INTEGER NOT NULL,
    current_version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (chat_id, chapter_no)
);
CREATE TABLE IF NOT EXISTS novel_chapter_versions (
    chapter_id TEXT NOT NULL REFERENCES novel_chapters(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    summary TEXT NOT NULL,
    created_at TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (chapter_id, version)
);
"""


@dataclass(frozen=True, slots=True)
class RoundRow:
    id: str
    chat_id: str
    phase: str
    platform: str
    channel_id: str
    opener_id: str
    opener_name: str
    lang: str
    opened_at: datetime
    proposal_deadline: datetime
    vote_deadline: datetime | None
    winner_id: int | None
    outcome: str
    chapter_id: str | None


@dataclass(frozen=True, slots=True)
class ProposalRow:
    id: int
    round_id: str
    user_id: str
    user_name: str
    title: str
    summary: str
    notes: str


@dataclass(frozen=True, slots=True)
class ChapterRow:
    id: str
    chat_id: str
    chapter_no: int
    current_version: int
    title: str  # of the current version


@dataclass(frozen=True, slots=True)
class VersionRow:
    chapter_id: str
    version: int
    title: str
    text: str
    summary: dict[str, Any]
    created_at: datetime
    author: str
    reason: str


def _ts(value: datetime) -> str:
    return value.isoformat()


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _round(row: sqlite3.Row) -> RoundRow:
    return RoundRow(
        id=row["id"],
        chat_id=row["chat_id"],
        phase=row["phase"],
        platform=row["platform"],
        channel_id=row["channel_id"],
        opener_id=row["opener_id"],
        opener_name=row["opener_name"],
        lang=row["lang"],
        opened_at=datetime.fromisoformat(row["opened_at"]),
        proposal_deadline=datetime.fromisoformat(row["proposal_deadline"]),
        vote_deadline=_dt(row["vote_deadline"]),
        winner_id=row["winner_id"],
        outcome=row["outcome"],
        chapter_id=row["chapter_id"],
    )


def _version(row: sqlite3.Row) -> VersionRow:
    return VersionRow(
        chapter_id=row["chapter_id"],
        version=row["version"],
        title=row["title"],
        text=row["text"],
        summary=json.loads(row["summary"]),
        created_at=datetime.fromisoformat(row["created_at"]),
        author=row["author"],
        reason=row["reason"],
    )


class NovelRepo:
    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        import asyncio

        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> NovelRepo:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = await aiosqlite.connect(path, isolation_level=None)
        db.row_factory = sqlite3.Row
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute("PRAGMA foreign_keys=ON")
        await db.executescript(_SCHEMA)
        return cls(db)

    async def close(self) -> None:
        await self._db.close()

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                await self._db.execute("ROLLBACK")
                raise
            else:
                await self._db.execute("COMMIT")

    async def _all(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._lock:
            cur = await self._db.execute(sql, params)
            rows = await cur.fetchall()
            return list(rows)

    async def _one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = await self._all(sql, params)
        return rows[0] if rows else None

    # ---- novels and blueprints ------------------------------------------------------------

    async def ensure_novel(self, chat_id: str, blueprint_json: str, now: datetime) -> None:
        async with self._tx() as db:
            await db.execute(
                "INSERT OR IGNORE INTO novel_novels(chat_id, created_at) VALUES (?, ?)",
                (chat_id, _ts(now)),
            )
            await db.execute(
                "INSERT OR IGNORE INTO novel_blueprints(chat_id, data, updated_at) VALUES (?, ?, ?)",
                (chat_id, blueprint_json, _ts(now)),
            )

    async def chats(self) -> list[str]:
        return [r["chat_id"] for r in await self._all("SELECT chat_id FROM novel_novels")]

    async def blueprint_json(self, chat_id: str) -> str | None:
        row = await self._one("SELECT data FROM novel_blueprints WHERE chat_id = ?", (chat_id,))
        return row["data"] if row else None

    async def set_blueprint(self, chat_id: str, data: str, by: str, now: datetime) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE novel_blueprints SET data = ?, updated_at = ?, updated_by = ? WHERE chat_id = ?",
                (data, _ts(now), by, chat_id),
            )

    # ---- rounds ---------------------------------------------------------------------------

    async def insert_round(
        self,
        *,
        round_id: str,
        chat_id: str,
        platform: str,
        channel_id: str,
        opener_id: str,
        opener_name: str,
        lang: str,
        now: datetime,
        proposal_deadline: datetime,
    ) -> bool:
        """False when the novel already has an open round (the partial unique index)."""
        try:
            async with self._tx() as db:
                await db.execute(
                    "INSERT INTO novel_rounds(id, chat_id, phase, platform, channel_id, opener_id,"
                    " opener_name, lang, opened_at, proposal_deadline)"
                    " VALUES (?, ?, 'proposal', ?, ?, ?, ?, ?, ?, ?)",
                    (
                        round_id,
                        chat_id,
                        platform,
                        channel_id,
                        opener_id,
                        opener_name,
                        lang,
                        _ts(now),
                        _ts(proposal_deadline),
                    ),
                )
        except sqlite3.IntegrityError:
            return False
        return True

    async def open_round(self, chat_id: str) -> RoundRow | None:
        row = await self._one(
            "SELECT * FROM novel_rounds WHERE chat_id = ? AND phase IN"
            " ('proposal', 'voting', 'writing', 'pending')",
            (chat_id,),
        )
        return _round(row) if row else None

    async def get_round(self, round_id: str) -> RoundRow | None:
        row = await self._one("SELECT * FROM novel_rounds WHERE id = ?", (round_id,))
        return _round(row) if row else None

    async def open_rounds(self) -> list[RoundRow]:
        rows = await self._all(
            "SELECT * FROM novel_rounds WHERE phase IN ('proposal', 'voting', 'writing', 'pending')"
        )
        return [_round(r) for r in rows]

    async def move_round(
        self, round_id: str, from_phases: Sequence[str], to_phase: str, **fields: Any
    ) -> bool:
        """Compare-and-set the phase (plus fields); False when the round is no longer in
        `from_phases` (someone else moved it first)."""
        sets = ["phase = ?"]
        params: list[Any] = [to_phase]
        for key, value in fields.items():
            sets.append(f"{key} = ?")
            params.append(_ts(value) if isinstance(value, datetime) else value)
        marks = ", ".join("?" for _ in from_phases)
        async with self._tx() as db:
            cur = await db.execute(
                f"UPDATE novel_rounds SET {', '.join(sets)} WHERE id = ? AND phase IN ({marks})",
                (*params, round_id, *from_phases),
            )
            return cur.rowcount == 1

    # ---- proposals and votes ----------------------------------------------------------------

    async def upsert_proposal(
        self,
        round_id: str,
        user_id: str,
        user_name: str,
        title: str,
        summary: str,
        notes: str,
        now: datetime,
    ) -> bool:
        """True when new, False when the member's earlier proposal was updated (keeps its order).
        Raises LookupError when the round is no longer taking proposals."""
        async with self._tx() as db:
            cur = await db.execute("SELECT phase FROM novel_rounds WHERE id = ?", (round_id,))
            row = await cur.fetchone()
            if row is None or row["phase"] != "proposal":
                raise LookupError(round_id)
            cur = await db.execute(
                "UPDATE novel_proposals SET title = ?, summary = ?, notes = ?, user_name = ?,"
                " updated_at = ? WHERE round_id = ? AND user_id = ?",
                (title, summary, notes, user_name, _ts(now), round_id, user_id),
            )
            if cur.rowcount:
                return False
            await db.execute(
                "INSERT INTO novel_proposals(round_id, user_id, user_name, title, summary, notes,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (round_id, user_id, user_name, title, summary, notes, _ts(now), _ts(now)),
            )
            return True

    async def proposals(self, round_id: str) -> list[ProposalRow]:
        rows = await self._all(
            "SELECT * FROM novel_proposals WHERE round_id = ? ORDER BY id", (round_id,)
        )
        return [
            ProposalRow(
                r["id"],
                r["round_id"],
                r["user_id"],
                r["user_name"],
                r["title"],
                r["summary"],
                r["notes"],
            )
            for r in rows
        ]

    async def vote(
        self, round_id: str, user_id: str, proposal_id: int, now: datetime
    ) -> int | None:
        """Cast or change a vote only while the round is voting; returns the previous choice
        (None if first) or raises LookupError when the round is not voting."""
        async with self._tx() as db:
            cur = await db.execute("SELECT phase FROM novel_rounds WHERE id = ?", (round_id,))
            row = await cur.fetchone()
            if row is None or row["phase"] != "voting":
                raise LookupError(round_id)
            cur = await db.execute(
                "SELECT proposal_id FROM novel_votes WHERE round_id = ? AND user_id = ?",
                (round_id, user_id),
            )
            before = await cur.fetchone()
            await db.execute(
                "INSERT INTO novel_votes(round_id, user_id, proposal_id, voted_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(round_id, user_id) DO UPDATE SET proposal_id = excluded.proposal_id,"
                " voted_at = excluded.voted_at",
                (round_id, user_id, proposal_id, _ts(now)),
            )
            return int(before["proposal_id"]) if before else None

    async def tally(self, round_id: str) -> dict[int, int]:
        rows = await self._all(
            "SELECT proposal_id, COUNT(*) AS n FROM novel_votes WHERE round_id = ? GROUP BY proposal_id",
            (round_id,),
        )
        return {int(r["proposal_id"]): int(r["n"]) for r in rows}

    # ---- chapters and versions ---------------------------------------------------------------

    async def chapters(self, chat_id: str) -> list[ChapterRow]:
        rows = await self._all(
            "SELECT c.id, c.chat_id, c.chapter_no, c.current_version, v.title FROM novel_chapters c"
            " JOIN novel_chapter_versions v ON v.chapter_id = c.id AND v.version = c.current_version"
            " WHERE c.chat_id = ? ORDER BY c.chapter_no",
            (chat_id,),
        )
        return [ChapterRow(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    async def chapter(self, chat_id: str, chapter_no: int) -> ChapterRow | None:
        for c in await self.chapters(chat_id):
            if c.chapter_no == chapter_no:
                return c
        return None

    async def current_map(self, chat_id: str) -> dict[str, tuple[int, int]]:
        """chapter id → (chapter number, current version): the truth retrieval checks against."""
        rows = await self._all(
            "SELECT id, chapter_no, current_version FROM novel_chapters WHERE chat_id = ?",
            (chat_id,),
        )
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    async def versions(self, chapter_id: str) -> list[VersionRow]:
        rows = await self._all(
            "SELECT * FROM novel_chapter_versions WHERE chapter_id = ? ORDER BY version",
            (chapter_id,),
        )
        return [_version(r) for r in rows]

    async def version(self, chapter_id: str, version: int) -> VersionRow | None:
        row = await self._one(
            "SELECT * FROM novel_chapter_versions WHERE chapter_id = ? AND version = ?",
            (chapter_id, version),
        )
        return _version(row) if row else None

    async def current_versions(self, chat_id: str) -> list[tuple[int, VersionRow]]:
        """(chapter number, current version) for every chapter in order."""
        rows = await self._all(
            "SELECT c.chapter_no, v.* FROM novel_chapters c JOIN novel_chapter_versions v"
            " ON v.chapter_id = c.id AND v.version = c.current_version WHERE c.chat_id = ?"
            " ORDER BY c.chapter_no",
            (chat_id,),
        )
        return [(int(r["chapter_no"]), _version(r)) for r in rows]

    async def add_chapter(
        self,
        *,
        chat_id: str,
        chapter_id: str,
        title: str,
        text: str,
        summary: dict[str, Any],
        author: str,
        reason: str,
        now: datetime,
        round_id: str | None = None,
    ) -> int:
        """Insert a chapter at the end with version 1 (and finish its round) in one transaction;
        returns the chapter number."""
        async with self._tx() as db:
            cur = await db.execute(
                "SELECT COALESCE(MAX(chapter_no), 0) + 1 FROM novel_chapters WHERE chat_id = ?",
                (chat_id,),
            )
            row = await cur.fetchone()
            assert row is not None
            number = int(row[0])
            await db.execute(
                "INSERT INTO novel_chapters(id, chat_id, chapter_no, current_version, created_at)"
                " VALUES (?, ?, ?, 1, ?)",
                (chapter_id, chat_id, number, _ts(now)),
            )
            await self._insert_version(db, chapter_id, 1, title, text, summary, author, reason, now)
            if round_id is not None:
                await db.execute(
                    "UPDATE novel_rounds SET phase = 'done', closed_at = ?, chapter_id = ?"
                    " WHERE id = ?",
                    (_ts(now), chapter_id, round_id),
                )
            return number

    async def add_version(
        self,
        *,
        chapter_id: str,
        version: int,
        title: str,
        text: str,
        summary: dict[str, Any],
        author: str,
        reason: str,
        now: datetime,
    ) -> None:
        """Insert version `version` and make it current, in one transaction."""
        async with self._tx() as db:
            await self._insert_version(
                db, chapter_id, version, title, text, summary, author, reason, now
            )
            await db.execute(
                "UPDATE novel_chapters SET current_version = ? WHERE id = ?", (version, chapter_id)
            )

    async def next_version(self, chapter_id: str) -> int:
        row = await self._one(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM novel_chapter_versions WHERE chapter_id = ?",
            (chapter_id,),
        )
        assert row is not None
        return int(row[0])

    @staticmethod
    async def _insert_version(
        db: aiosqlite.Connection,
        chapter_id: str,
        version: int,
        title: str,
        text: str,
        summary: dict[str, Any],
        author: str,
        reason: str,
        now: datetime,
    ) -> None:
        await db.execute(
            "INSERT INTO novel_chapter_versions(chapter_id, version, title, text, summary,"
            " created_at, author, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                chapter_id,
                version,
                title,
                text,
                json.dumps(summary, ensure_ascii=False),
                _ts(now),
                author,
                reason,
            ),
        )

    async def set_current(self, chapter_id: str, version: int) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE novel_chapters SET current_version = ? WHERE id = ?", (version, chapter_id)
            )

    async def delete_chapter(self, chat_id: str, chapter_id: str) -> list[tuple[str, int]]:
        """Delete a chapter with its versions and renumber the later ones, in one transaction;
        returns (chapter id, new number) for each renumbered chapter."""
        async with self._tx() as db:
            cur = await db.execute(
                "SELECT chapter_no FROM novel_chapters WHERE id = ?", (chapter_id,)
            )
            row = await cur.fetchone()
            if row is None:
                return []
            number = int(row[0])
            await db.execute(
                "DELETE FROM novel_chapter_versions WHERE chapter_id = ?", (chapter_id,)
            )
            await db.execute("DELETE FROM novel_chapters WHERE id = ?", (chapter_id,))
            # Two steps so the (chat_id, chapter_no) unique index never sees a duplicate.
            await db.execute(
                "UPDATE novel_chapters SET chapter_no = -(chapter_no - 1)"
                " WHERE chat_id = ? AND chapter_no > ?",
                (chat_id, number),
            )
            await db.execute(
                "UPDATE novel_chapters SET chapter_no = -chapter_no WHERE chat_id = ? AND chapter_no < 0",
                (chat_id,),
            )
            cur = await db.execute(
                "SELECT id, chapter_no FROM novel_chapters WHERE chat_id = ? AND chapter_no >= ?",
                (chat_id, number),
            )
            return [(r[0], int(r[1])) for r in await cur.fetchall()]
