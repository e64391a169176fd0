"""SQLite (aiosqlite, WAL) persistence of the writers' room: every table is prefixed `novel_`.

One connection; every public method is one complete unit (its own transaction) taken under one
asyncio lock, so coroutines never interleave inside a transaction.

Rows are the stores' own (`RoundRow`, `VersionRow`, `ChangeRow` …); what a result carries to
the chat layer is built from them here (`Proposal`, `VersionRow.as_version`,
`ChangeRow.as_change`: the types of `novel.results`), so no presenter reads a storage row.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite

from novel.evolve import BlueprintChange
from novel.member import Member, Place
from novel.phase import OPEN_PHASES, Event, Phase, sources, transition
from novel.results import ChangeStatus, ChapterVersion, Proposal, ProposedChange
from novel.summary import ChapterSummary, load
from retrieval.sqlite import open_sqlite

_OPEN = ", ".join(f"'{p}'" for p in OPEN_PHASES)

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
    via TEXT NOT NULL,
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
CREATE TABLE IF NOT EXISTS novel_blueprint_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    data TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    changed_by TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS novel_blueprint_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    chapter_id TEXT NOT NULL,
    chapter_no INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    created_at TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT NOT NULL DEFAULT ''
);
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
    source TEXT NOT NULL DEFAULT 'command',
    user_name TEXT NOT NULL DEFAULT '',
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
-- What each chapter version says happened (issue 42: `novel.ledger`); `basis` names what it
-- was read against (the reader, the blueprint, the chapters before it).
CREATE TABLE IF NOT EXISTS novel_chapter_events (
    chapter_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    basis TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (chapter_id, version),
    FOREIGN KEY (chapter_id, version)
        REFERENCES novel_chapter_versions(chapter_id, version) ON DELETE CASCADE
);
"""

# Columns added after the first release: (table, column, definition) for databases created
# before them (CREATE TABLE IF NOT EXISTS leaves an old table as it was).
_MIGRATIONS: tuple[tuple[str, str, str], ...] = (
    ("novel_votes", "source", "TEXT NOT NULL DEFAULT 'command'"),
    ("novel_votes", "user_name", "TEXT NOT NULL DEFAULT ''"),
    # Where each story lives (`StoryStore`): the chat it belongs to, the place that holds it
    # ("" = the chat's own story), that place's name, and who made it.
    ("novel_novels", "home", "TEXT NOT NULL DEFAULT ''"),
    ("novel_novels", "place", "TEXT NOT NULL DEFAULT ''"),
    ("novel_novels", "place_name", "TEXT NOT NULL DEFAULT ''"),
    ("novel_novels", "created_by", "TEXT NOT NULL DEFAULT ''"),
)
# After the columns exist: a novel from before stories had places is its chat's own story
# (keyed by the chat's id, so its home is its key), and a place holds at most one story.
_STORY_MIGRATION = (
    "UPDATE novel_novels SET home = chat_id WHERE home = ''",
    "CREATE UNIQUE INDEX IF NOT EXISTS novel_novels_place ON novel_novels(home, place)"
    " WHERE place != ''",
)

VoteSource = str  # "command" | "button" | "poll"
_CHANGE_STATUSES: tuple[ChangeStatus, ...] = ("pending", "accepted", "rejected", "superseded")


@dataclass(frozen=True, slots=True)
class RoundRow:
    id: str
    chat_id: str
    phase: Phase
    via: str  # the chat layer's word for where the round's chat is (handed back, never read)
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
class VoteRow:
    user_id: str
    user_name: str
    proposal_id: int
    source: VoteSource


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
    summary: ChapterSummary
    created_at: datetime
    author: str
    reason: str

    def as_version(self) -> ChapterVersion:
        """The version as members read it (`/chapter show`, `/chapter history`)."""
        return ChapterVersion(
            self.version, self.title, self.text, self.created_at, self.author, self.reason
        )


@dataclass(frozen=True, slots=True)
class Draft:
    """A chapter version to store: its words and their summary, who wrote it, why and when."""

    title: str
    text: str
    summary: ChapterSummary
    author: str
    reason: str
    now: datetime


@dataclass(frozen=True, slots=True)
class BlueprintRevision:
    id: int
    data: str
    changed_at: datetime
    changed_by: str
    reason: str


@dataclass(frozen=True, slots=True)
class ChangeRow:
    """A proposed blueprint change (from a chapter) and its fate."""

    id: int
    chapter_id: str
    chapter_no: int
    kind: str
    payload: dict[str, Any]
    status: str  # pending | accepted | rejected | superseded
    created_at: datetime
    decided_at: datetime | None = None
    decided_by: str = ""

    def as_change(self) -> ProposedChange:
        """The proposal as the members see it: its change read from the stored payload."""
        return ProposedChange(
            self.id,
            self.chapter_no,
            BlueprintChange.from_row(self.kind, self.payload),
            next((s for s in _CHANGE_STATUSES if s == self.status), "pending"),
            self.decided_at,
            self.decided_by,
        )


def _ts(value: datetime) -> str:
    return value.isoformat()


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _columns(cls: type[Any], row: sqlite3.Row, **read: object) -> dict[str, Any]:
    """The row dataclass `cls`'s fields from the row's columns of the same names; `read` has
    the ones not stored as they are used (times, phases, JSON)."""
    return {f.name: read[f.name] if f.name in read else row[f.name] for f in fields(cls)}


def _round(row: sqlite3.Row) -> RoundRow:
    return RoundRow(
        **_columns(
            RoundRow,
            row,
            phase=Phase(row["phase"]),
            opened_at=datetime.fromisoformat(row["opened_at"]),
            proposal_deadline=datetime.fromisoformat(row["proposal_deadline"]),
            vote_deadline=_dt(row["vote_deadline"]),
        )
    )


def _version(row: sqlite3.Row) -> VersionRow:
    return VersionRow(
        **_columns(
            VersionRow,
            row,
            summary=_summary(row["summary"], row["title"]),
            created_at=datetime.fromisoformat(row["created_at"]),
        )
    )


def _summary(stored: str, title: str) -> ChapterSummary:
    """A version's summary column → ChapterSummary: the JSON of any shape written so far
    (`novel.summary.load`), or plain text."""
    try:
        data: object = json.loads(stored)
    except ValueError:
        data = stored
    return load(data, title)


def _change(row: sqlite3.Row) -> ChangeRow:
    return ChangeRow(
        **_columns(
            ChangeRow,
            row,
            payload=json.loads(row["payload"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            decided_at=_dt(row["decided_at"]),
        )
    )


async def _advance_in(
    db: aiosqlite.Connection, round_id: str, event: Event, fields: Mapping[str, Any]
) -> bool:
    """Inside a transaction: move the round by `event` if it is still in a phase the phase
    table (`novel.phase`) lets `event` leave from; False when someone else moved it first."""
    allowed = sources(event)
    target = transition(allowed[0], event)
    sets = ["phase = ?"]
    params: list[Any] = [target.value]
    for key, value in fields.items():
        sets.append(f"{key} = ?")
        params.append(_ts(value) if isinstance(value, datetime) else value)
    marks = ", ".join("?" for _ in allowed)
    cur = await db.execute(
        f"UPDATE novel_rounds SET {', '.join(sets)} WHERE id = ? AND phase IN ({marks})",
        (*params, round_id, *(p.value for p in allowed)),
    )
    return cur.rowcount == 1


class _Store:
    """One concern's tables on the shared connection. Every public method is one complete unit
    (its own transaction) taken under the connection's one lock."""

    def __init__(self, db: aiosqlite.Connection, lock: asyncio.Lock) -> None:
        self._db = db
        self._lock = lock

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


class RoundStore(_Store):
    """Rounds and their phases, proposals and votes."""

    async def insert_round(
        self, *, round_id: str, opener: Member, now: datetime, proposal_deadline: datetime
    ) -> bool:
        """Open a round in the opener's chat (where they spoke and their language); False when
        the novel already has an open round (the partial unique index)."""
        try:
            async with self._tx() as db:
                await db.execute(
                    "INSERT INTO novel_rounds(id, chat_id, phase, via, channel_id, opener_id,"
                    " opener_name, lang, opened_at, proposal_deadline)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        round_id,
                        opener.chat_id,
                        Phase.PROPOSAL.value,
                        opener.via,
                        opener.channel_id,
                        opener.user_id,
                        opener.user_name,
                        opener.lang,
                        _ts(now),
                        _ts(proposal_deadline),
                    ),
                )
        except sqlite3.IntegrityError:
            return False
        return True

    async def open_round(self, chat_id: str) -> RoundRow | None:
        row = await self._one(
            f"SELECT * FROM novel_rounds WHERE chat_id = ? AND phase IN ({_OPEN})", (chat_id,)
        )
        return _round(row) if row else None

    async def get_round(self, round_id: str) -> RoundRow | None:
        row = await self._one("SELECT * FROM novel_rounds WHERE id = ?", (round_id,))
        return _round(row) if row else None

    async def open_rounds(self) -> list[RoundRow]:
        rows = await self._all(f"SELECT * FROM novel_rounds WHERE phase IN ({_OPEN})")
        return [_round(r) for r in rows]

    async def advance(self, round_id: str, event: Event, **fields: Any) -> bool:
        """Apply `event` as a compare-and-set (plus fields); False when the round is no longer
        in a phase `event` may leave from (someone else moved it first)."""
        async with self._tx() as db:
            return await _advance_in(db, round_id, event, fields)

    async def set_winner(self, round_id: str, winner_id: int, outcome: str) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE novel_rounds SET winner_id = ?, outcome = ? WHERE id = ?",
                (winner_id, outcome, round_id),
            )

    @staticmethod
    async def _require_phase(db: aiosqlite.Connection, round_id: str, phase: Phase) -> None:
        """Inside a transaction: LookupError unless the round is in `phase` right now."""
        cur = await db.execute("SELECT phase FROM novel_rounds WHERE id = ?", (round_id,))
        row = await cur.fetchone()
        if row is None or row["phase"] != phase:
            raise LookupError(round_id)

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
            await self._require_phase(db, round_id, Phase.PROPOSAL)
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

    async def proposals(self, round_id: str) -> list[Proposal]:
        rows = await self._all(
            "SELECT * FROM novel_proposals WHERE round_id = ? ORDER BY id", (round_id,)
        )
        return [Proposal(**_columns(Proposal, r)) for r in rows]

    async def vote(
        self,
        round_id: str,
        user_id: str,
        proposal_id: int,
        now: datetime,
        *,
        user_name: str = "",
        source: VoteSource = "command",
    ) -> int | None:
        """Cast or change a vote only while the round is voting; returns the previous choice
        (None if first) or raises LookupError when the round is not voting."""
        async with self._tx() as db:
            await self._require_phase(db, round_id, Phase.VOTING)
            cur = await db.execute(
                "SELECT proposal_id FROM novel_votes WHERE round_id = ? AND user_id = ?",
                (round_id, user_id),
            )
            before = await cur.fetchone()
            await db.execute(
                "INSERT INTO novel_votes(round_id, user_id, proposal_id, voted_at, source,"
                " user_name) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(round_id, user_id) DO UPDATE"
                " SET proposal_id = excluded.proposal_id, voted_at = excluded.voted_at,"
                " source = excluded.source, user_name = excluded.user_name",
                (round_id, user_id, proposal_id, _ts(now), source, user_name),
            )
            return int(before["proposal_id"]) if before else None

    async def retract_vote(self, round_id: str, user_id: str, *, source: VoteSource) -> bool:
        """Withdraw a member's vote if it was cast through `source` (a poll retraction does
        not undo a later button vote). Raises LookupError when the round is not voting."""
        async with self._tx() as db:
            await self._require_phase(db, round_id, Phase.VOTING)
            cur = await db.execute(
                "DELETE FROM novel_votes WHERE round_id = ? AND user_id = ? AND source = ?",
                (round_id, user_id, source),
            )
            return cur.rowcount == 1

    async def tally(self, round_id: str) -> dict[int, int]:
        rows = await self._all(
            "SELECT proposal_id, COUNT(*) AS n FROM novel_votes WHERE round_id = ? GROUP BY proposal_id",
            (round_id,),
        )
        return {int(r["proposal_id"]): int(r["n"]) for r in rows}

    async def votes(self, round_id: str) -> list[VoteRow]:
        rows = await self._all(
            "SELECT user_id, user_name, proposal_id, source FROM novel_votes WHERE round_id = ?"
            " ORDER BY voted_at, user_id",
            (round_id,),
        )
        return [
            VoteRow(r["user_id"], r["user_name"], int(r["proposal_id"]), r["source"]) for r in rows
        ]


class ChapterStore(_Store):
    """Chapters and their versions (saving a round's chapter also finishes the round)."""

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
        self, chat_id: str, chapter_id: str, draft: Draft, round_id: str | None = None
    ) -> int:
        """Insert a chapter at the end with version 1 (and `save` its round) in one transaction;
        returns the chapter number. LookupError when the round is no longer being written."""
        async with self._tx() as db:
            saved = {"closed_at": draft.now, "chapter_id": chapter_id}
            if round_id is not None and not await _advance_in(db, round_id, Event.SAVE, saved):
                raise LookupError(round_id)
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
                (chapter_id, chat_id, number, _ts(draft.now)),
            )
            await self._insert_version(db, chapter_id, 1, draft)
            return number

    async def add_version(self, chapter_id: str, version: int, draft: Draft) -> None:
        """Insert version `version` and make it current, in one transaction (the chapter's
        pending blueprint changes, the old version's, are superseded in it)."""
        async with self._tx() as db:
            await self._insert_version(db, chapter_id, version, draft)
            await self._make_current(db, chapter_id, version)

    async def drop_version(self, chapter_id: str, version: int, current: int) -> None:
        """Undo a revision that failed to save: remove version `version` and make `current`
        current again, in one transaction."""
        async with self._tx() as db:
            await self._make_current(db, chapter_id, current)
            await db.execute(
                "DELETE FROM novel_chapter_versions WHERE chapter_id = ? AND version = ?",
                (chapter_id, version),
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
        db: aiosqlite.Connection, chapter_id: str, version: int, draft: Draft
    ) -> None:
        await db.execute(
            "INSERT INTO novel_chapter_versions(chapter_id, version, title, text, summary,"
            " created_at, author, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                chapter_id,
                version,
                draft.title,
                draft.text,
                draft.summary.model_dump_json(),
                _ts(draft.now),
                draft.author,
                draft.reason,
            ),
        )

    async def set_current(self, chapter_id: str, version: int) -> None:
        async with self._tx() as db:
            await self._make_current(db, chapter_id, version)

    @staticmethod
    async def _make_current(db: aiosqlite.Connection, chapter_id: str, version: int) -> None:
        """Flip the chapter's current version and supersede its pending blueprint changes:
        they were proposed from another version's text, and the story state reads pending
        character proposals as known names. Whatever kills the process after this, no
        proposal of a version that is not current stays pending; the caller proposes the
        current version's again (`ChapterService`)."""
        await db.execute(
            "UPDATE novel_chapters SET current_version = ? WHERE id = ?", (version, chapter_id)
        )
        await db.execute(
            "UPDATE novel_blueprint_changes SET status = 'superseded'"
            " WHERE chapter_id = ? AND status = 'pending'",
            (chapter_id,),
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
            await db.execute(
                "UPDATE novel_blueprint_changes SET status = 'superseded'"
                " WHERE chat_id = ? AND chapter_id = ? AND status = 'pending'",
                (chat_id, chapter_id),
            )
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
            renumbered = [(r[0], int(r[1])) for r in await cur.fetchall()]
            await db.executemany(  # their pending proposals name the chapter by number
                "UPDATE novel_blueprint_changes SET chapter_no = ?"
                " WHERE chapter_id = ? AND status = 'pending'",
                [(n, cid) for cid, n in renumbered],
            )
            return renumbered


class BlueprintStore(_Store):
    """Each novel, its blueprint and its history, and the changes chapters propose to it."""

    async def ensure_novel(self, chat_id: str, blueprint_json: str, now: datetime) -> None:
        async with self._tx() as db:
            await db.execute(  # a story made here is its chat's own: its home is its key
                "INSERT OR IGNORE INTO novel_novels(chat_id, created_at, home) VALUES (?, ?, ?)",
                (chat_id, _ts(now), chat_id),
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

    async def set_blueprint(
        self, chat_id: str, data: str, by: str, now: datetime, reason: str = ""
    ) -> None:
        """Replace the blueprint and log the new version (who, when, why) in the history."""
        async with self._tx() as db:
            await self._write_blueprint(db, chat_id, data, by, now, reason)

    @staticmethod
    async def _write_blueprint(
        db: aiosqlite.Connection, chat_id: str, data: str, by: str, now: datetime, reason: str
    ) -> None:
        await db.execute(
            "INSERT INTO novel_blueprint_history(chat_id, data, changed_at, changed_by, reason)"
            " VALUES (?, ?, ?, ?, ?)",
            (chat_id, data, _ts(now), by, reason),
        )
        await db.execute(
            "UPDATE novel_blueprints SET data = ?, updated_at = ?, updated_by = ? WHERE chat_id = ?",
            (data, _ts(now), by, chat_id),
        )

    async def blueprint_history(self, chat_id: str, limit: int = 20) -> list[BlueprintRevision]:
        """Every blueprint written (upload, edit, accepted changes), newest first."""
        rows = await self._all(
            "SELECT * FROM novel_blueprint_history WHERE chat_id = ? ORDER BY id DESC LIMIT ?",
            (chat_id, limit),
        )
        return [
            BlueprintRevision(
                int(r["id"]),
                r["data"],
                datetime.fromisoformat(r["changed_at"]),
                r["changed_by"],
                r["reason"],
            )
            for r in rows
        ]

    async def propose_changes(
        self,
        chat_id: str,
        chapter_id: str,
        chapter_no: int,
        changes: Sequence[tuple[str, dict[str, Any]]],
        now: datetime,
    ) -> list[ChangeRow]:
        """Record a chapter's proposed changes; the same chapter's earlier pending ones (an
        older version's) are superseded."""
        async with self._tx() as db:
            await db.execute(
                "UPDATE novel_blueprint_changes SET status = 'superseded', decided_at = ?"
                " WHERE chat_id = ? AND chapter_id = ? AND status = 'pending'",
                (_ts(now), chat_id, chapter_id),
            )
            ids: list[int] = []
            for kind, payload in changes:
                cur = await db.execute(
                    "INSERT INTO novel_blueprint_changes(chat_id, chapter_id, chapter_no, kind,"
                    " payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        chat_id,
                        chapter_id,
                        chapter_no,
                        kind,
                        json.dumps(payload, ensure_ascii=False),
                        _ts(now),
                    ),
                )
                ids.append(int(cur.lastrowid or 0))
        return [c for c in await self.pending_changes(chat_id) if c.id in ids]

    async def pending_changes(self, chat_id: str) -> list[ChangeRow]:
        rows = await self._all(
            "SELECT * FROM novel_blueprint_changes WHERE chat_id = ? AND status = 'pending'"
            " ORDER BY id",
            (chat_id,),
        )
        return [_change(r) for r in rows]

    async def decided_changes(self, chat_id: str, limit: int = 20) -> list[ChangeRow]:
        """Proposed changes an admin accepted or rejected, newest decision first."""
        rows = await self._all(
            "SELECT * FROM novel_blueprint_changes WHERE chat_id = ?"
            " AND status IN ('accepted', 'rejected') ORDER BY decided_at DESC, id DESC LIMIT ?",
            (chat_id, limit),
        )
        return [_change(r) for r in rows]

    async def supersede_changes(self, chat_id: str, chapter_id: str, now: datetime) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE novel_blueprint_changes SET status = 'superseded', decided_at = ?"
                " WHERE chat_id = ? AND chapter_id = ? AND status = 'pending'",
                (_ts(now), chat_id, chapter_id),
            )

    async def decide_changes(
        self,
        chat_id: str,
        ids: Sequence[int],
        status: str,
        by: str,
        now: datetime,
        *,
        blueprint: str | None = None,
        reason: str = "",
    ) -> int:
        """Mark pending changes accepted/rejected; with `blueprint`, write it (and its history)
        in the same transaction. Returns how many were still pending."""
        if not ids:
            return 0
        marks = ", ".join("?" for _ in ids)
        async with self._tx() as db:
            cur = await db.execute(
                f"UPDATE novel_blueprint_changes SET status = ?, decided_at = ?, decided_by = ?"
                f" WHERE chat_id = ? AND status = 'pending' AND id IN ({marks})",
                (status, _ts(now), by, chat_id, *ids),
            )
            if cur.rowcount != len(ids):
                raise LookupError("a change is no longer pending")
            if blueprint is not None:
                await self._write_blueprint(db, chat_id, blueprint, by, now, reason)
            return int(cur.rowcount)


@dataclass(frozen=True, slots=True)
class StoryRow:
    """A story and where it lives: its key (`Member.chat_id`; the chat's own id for the chat's
    own story), the chat it belongs to, the place that holds it ("" for the chat's own story,
    which every place without a story of its own shares), the place's name when it was known,
    and when and by whom it was made."""

    story_id: str
    chat_id: str
    place: str
    place_name: str
    created_at: datetime
    created_by: str


class StoryStore(_Store):
    """Which place of a chat holds which story. The index is read once (`load`) and kept in
    memory beside the table, so the chat layer asks it for every command without a query."""

    def __init__(self, db: aiosqlite.Connection, lock: asyncio.Lock) -> None:
        super().__init__(db, lock)
        self._at: dict[tuple[str, str], str] = {}  # (chat id, place) → story id
        self._home: dict[str, str] = {}  # a place's story id → its chat id

    async def load(self) -> None:
        for row in await self.stories():
            self._remember(row)

    def _remember(self, row: StoryRow) -> None:
        if row.place:
            self._at[(row.chat_id, row.place)] = row.story_id
            self._home[row.story_id] = row.chat_id

    def story_at(self, place: Place) -> str:
        """The story commands spoken at `place` belong to: the place's own, else (a thread)
        its channel's, else the chat's own story."""
        for where in (place.channel_id, place.parent_id):
            story = self._at.get((place.chat_id, where)) if where else None
            if story is not None:
                return story
        return place.chat_id

    def chat_of(self, story_id: str) -> str:
        """The chat story `story_id` belongs to (a chat's own story is keyed by the chat)."""
        return self._home.get(story_id, story_id)

    async def stories(self, chat_id: str | None = None) -> list[StoryRow]:
        """The stories of `chat_id` (every chat's when None) that were ever used, oldest first."""
        sql = (
            "SELECT chat_id AS story_id, home AS chat_id, place, place_name, created_at,"
            " created_by FROM novel_novels"
        )
        rows = await self._all(
            f"{sql} WHERE home = ? ORDER BY created_at, rowid" if chat_id else sql,
            (chat_id,) if chat_id else (),
        )
        return [
            StoryRow(**_columns(StoryRow, r, created_at=datetime.fromisoformat(r["created_at"])))
            for r in rows
        ]

    async def create(self, row: StoryRow, blueprint_json: str) -> bool:
        """A place's own story with its first blueprint, in one transaction; False when the
        place holds a story already (another admin was first: the unique index)."""
        try:
            async with self._tx() as db:
                await db.execute(
                    "INSERT INTO novel_novels(chat_id, created_at, home, place, place_name,"
                    " created_by) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        row.story_id,
                        _ts(row.created_at),
                        row.chat_id,
                        row.place,
                        row.place_name,
                        row.created_by,
                    ),
                )
                await db.execute(
                    "INSERT INTO novel_blueprints(chat_id, data, updated_at, updated_by)"
                    " VALUES (?, ?, ?, ?)",
                    (row.story_id, blueprint_json, _ts(row.created_at), row.created_by),
                )
        except sqlite3.IntegrityError:
            return False
        self._remember(row)
        return True


async def _rename_columns(db: aiosqlite.Connection) -> None:
    """A rounds table from before the room stopped naming platforms: its column is renamed
    (`platform` → `via`, the same values). Novels from before stories had places become their
    chats' own stories."""
    rounds = await db.execute_fetchall("PRAGMA table_info(novel_rounds)")
    if "platform" in {row[1] for row in rounds}:
        await db.execute_fetchall("ALTER TABLE novel_rounds RENAME COLUMN platform TO via")
    for statement in _STORY_MIGRATION:
        await db.execute_fetchall(statement)


class EventStore(_Store):
    """The story events of each chapter version (`novel.ledger` reads and writes them; a
    version's row goes with the version)."""

    async def stored(self, chat_id: str) -> dict[tuple[str, int], tuple[str, str]]:
        """(chapter id, version) → (basis, data) for the chat's current versions."""
        rows = await self._all(
            "SELECT e.chapter_id, e.version, e.basis, e.data FROM novel_chapter_events e"
            " JOIN novel_chapters c ON c.id = e.chapter_id AND c.current_version = e.version"
            " WHERE c.chat_id = ?",
            (chat_id,),
        )
        return {(r[0], int(r[1])): (r[2], r[3]) for r in rows}

    async def put(self, chapter_id: str, version: int, basis: str, data: str) -> None:
        """Store (or replace) a version's events; a version deleted meanwhile stores nothing."""
        async with self._tx() as db:
            await db.execute(
                "INSERT INTO novel_chapter_events(chapter_id, version, basis, data)"
                " SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM novel_chapter_versions"
                " WHERE chapter_id = ? AND version = ?)"
                " ON CONFLICT(chapter_id, version) DO UPDATE SET basis = excluded.basis,"
                " data = excluded.data",
                (chapter_id, version, basis, data, chapter_id, version),
            )


class NovelRepo:
    """The writers' room's SQLite file: one connection (and its lock) shared by one store per
    concern, each handed to the service that uses it."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        lock = asyncio.Lock()
        self.rounds = RoundStore(db, lock)
        self.book = ChapterStore(db, lock)
        self.world = BlueprintStore(db, lock)
        self.events = EventStore(db, lock)
        self.stories = StoryStore(db, lock)

    @classmethod
    async def open(cls, path: Path) -> NovelRepo:
        db = await open_sqlite(
            path, _SCHEMA, autocommit=True, foreign_keys=True, columns=_MIGRATIONS
        )
        try:
            await _rename_columns(db)
            db.row_factory = sqlite3.Row
            repo = cls(db)
            await repo.stories.load()
        except BaseException:
            await db.close()
            raise
        return repo

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> NovelRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
