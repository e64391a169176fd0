"""Contract tests for the ballot room's store (`bot.ballot.store.BallotStore`) on a real SQLite
file: where each round's ballot was posted (one row per round, found by its native poll's id),
each chat's ballot settings, both surviving a reopen, and a data directory from before the
ballot had a room of its own moved over once (`novel_ballots`, `novel_chat_settings`)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.ballot.store import BallotStore, PostedBallot

NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
CHAT = "tg:-100"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[BallotStore]:
    async with BallotStore(tmp_path / "baibao.sqlite3") as opened:
        yield opened


async def test_a_posted_ballot_is_kept_per_round_and_found_by_its_poll(store: BallotStore) -> None:
    post = PostedBallot("r1", "telegram", CHAT, "c", "m1", poll_id="p1", poll_message_id="m2")
    await store.save(post, NOW)
    moved = PostedBallot("r1", "telegram", CHAT, "c", "m9", poll_id="p9")
    await store.save(moved, NOW)  # reposted: one row per round
    assert await store.ballot("r1") == moved
    assert await store.by_poll("p9") == moved
    assert await store.by_poll("p1") is None
    assert await store.by_poll("") is None  # a button ballot has no poll
    assert await store.ballot("r2") is None


async def test_settings_are_per_chat_and_overwritten(store: BallotStore) -> None:
    assert store.settings.get((CHAT, "ballot_style")) is None
    await store.set_setting(CHAT, "ballot_style", "buttons")
    await store.set_setting(CHAT, "ballot_style", "poll")
    await store.set_setting("dc:1", "ballot_style", "buttons")
    assert store.settings[(CHAT, "ballot_style")] == "poll"
    assert store.settings[("dc:1", "ballot_style")] == "buttons"


async def test_ballots_and_settings_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "baibao.sqlite3"
    post = PostedBallot("r1", "discord", "g1", "c1", "m1")
    async with BallotStore(path) as first:
        await first.set_setting(CHAT, "ballot_voters", "shown")
        await first.save(post, NOW)
    async with BallotStore(path) as again:
        assert again.settings == {(CHAT, "ballot_voters"): "shown"}
        assert await again.ballot("r1") == post


_OLD_TABLES = """
CREATE TABLE novel_ballots (
    round_id TEXT PRIMARY KEY, platform TEXT NOT NULL, chat_id TEXT NOT NULL,
    channel_id TEXT NOT NULL DEFAULT '', message_id TEXT NOT NULL DEFAULT '',
    poll_id TEXT NOT NULL DEFAULT '', poll_message_id TEXT NOT NULL DEFAULT '',
    posted_at TEXT NOT NULL
);
CREATE TABLE novel_chat_settings (
    chat_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (chat_id, key)
);
INSERT INTO novel_ballots VALUES ('r1', 'telegram', '-100', '7', '501', 'poll-9', '502',
    '2026-12-01T08:00:00+00:00');
INSERT INTO novel_chat_settings VALUES ('-100', 'ballot_style', 'keyboard');
INSERT INTO novel_chat_settings VALUES ('-100', 'ballot_voters', 'shown');
INSERT INTO novel_chat_settings VALUES ('-100', 'unrelated', 'x');
"""


async def test_the_writers_rooms_old_ballot_tables_move_here_once(tmp_path: Path) -> None:
    """A native poll posted before the upgrade still finds its round, and the chat keeps its
    style; the old tables are gone, so nothing is moved twice."""
    path = tmp_path / "baibao.sqlite3"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(_OLD_TABLES)
    async with BallotStore(path) as store:
        assert await store.by_poll("poll-9") == PostedBallot(
            "r1", "telegram", "-100", "7", "501", "poll-9", "502"
        )
        assert store.settings == {
            ("-100", "ballot_style"): "keyboard",
            ("-100", "ballot_voters"): "shown",
        }
    with closing(sqlite3.connect(path)) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not tables & {"novel_ballots", "novel_chat_settings"}
    async with BallotStore(path) as reopened:  # nothing left to move; nothing lost
        assert await reopened.ballot("r1") is not None
