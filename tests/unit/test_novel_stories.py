"""Several stories in one chat (`novel.stories`, `novel.repo.StoryStore`): which story a
place holds (its own; a thread without one its channel's; else the chat's own), `/novel new`
and its refusals, `/novel list`, the directory kept across a restart, a data directory from
before stories had places, and two stories side by side on the real stores (SQLite + Qdrant
Edge) without either's rounds, chapters, blueprint or plot memory reaching the other."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.actor import Actor
from kernel.refusal import Refused
from novel import api
from novel.blueprint import Blueprint
from novel.member import Member, Place
from novel.phase import Phase
from novel.repo import NovelRepo, StoryRow
from novel.stories import MAX_TITLE, Stories
from retrieval.llm.scripted import ScriptedLLM
from tests.novel_room import SLOW, FakeClock, Room, fake_model

CHAT = "-100777"
WHEN = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
FAR = datetime(2099, 1, 1, tzinfo=UTC).isoformat()  # a deadline no test reaches
ADMIN = Member(CHAT, "1", "管理员", is_admin=True)


async def _stories(tmp_path: Path) -> tuple[NovelRepo, Stories]:
    repo = await NovelRepo.open(tmp_path / "baibao.sqlite3")
    return repo, Stories(repo, FakeClock(WHEN))


async def test_a_place_holds_its_own_story_a_thread_its_channels_and_the_rest_the_chats(
    tmp_path: Path,
) -> None:
    repo, stories = await _stories(tmp_path)
    try:
        opened = await stories.new(ADMIN, Place(CHAT, "c2", name="科幻"), "星海")
        assert (opened.title, opened.place_name) == ("星海", "科幻")
        directory = repo.stories
        star = directory.story_at(Place(CHAT, "c2"))
        assert star.startswith("story:") and star != CHAT
        assert directory.story_at(Place(CHAT, "t9", parent_id="c2")) == star  # a thread in c2
        assert directory.story_at(Place(CHAT, "c1")) == CHAT  # any other channel
        assert directory.story_at(Place(CHAT, "t8", parent_id="c1")) == CHAT
        assert directory.story_at(Place(CHAT)) == CHAT
        assert directory.story_at(Place("-100888", "c2")) == "-100888"  # another chat's c2
        assert directory.chat_of(star) == CHAT and directory.chat_of(CHAT) == CHAT
        # A thread may hold its own story, inside a channel that holds one.
        await stories.new(ADMIN, Place(CHAT, "t9", parent_id="c2", name="番外"), "星海番外")
        side = directory.story_at(Place(CHAT, "t9", parent_id="c2"))
        assert side not in (star, CHAT) and directory.chat_of(side) == CHAT
        # Its world is its own: only the title it was given.
        assert await repo.world.blueprint_json(star) == Blueprint(title="星海").to_json()
    finally:
        await repo.close()
    # The directory is stored: a restart finds the same stories.
    repo, _ = await _stories(tmp_path)
    try:
        assert repo.stories.story_at(Place(CHAT, "c2")) == star
        assert repo.stories.story_at(Place(CHAT, "t7", parent_id="c2")) == star
        assert repo.stories.chat_of(side) == CHAT
    finally:
        await repo.close()


@pytest.mark.parametrize(
    ("founder", "place", "title", "reason"),
    [
        (Member(CHAT, "2", "成员"), Place(CHAT, "c2"), "星海", "admins_only"),
        (ADMIN, Place(CHAT, "c2"), "   ", "story_title_missing"),
        (ADMIN, Place(CHAT, "c2"), "星" * (MAX_TITLE + 1), "story_title_too_long"),
        (ADMIN, Place(CHAT), "星海", "story_needs_place"),  # no channels: one story
        (ADMIN, Place("console"), "星海", "story_needs_place"),
    ],
    ids=["member", "blank-title", "long-title", "group-without-topics", "console"],
)
async def test_new_story_refusals_write_nothing(
    tmp_path: Path, founder: Member, place: Place, title: str, reason: str
) -> None:
    repo, stories = await _stories(tmp_path)
    try:
        with pytest.raises(Refused) as refused:
            await stories.new(founder, place, title)
        assert refused.value.reason == reason
        assert await repo.stories.stories() == []
        assert repo.stories.story_at(place) == place.chat_id
    finally:
        await repo.close()


async def test_a_place_with_a_story_or_with_another_storys_round_open_takes_no_new_one(
    tmp_path: Path,
) -> None:
    async with Room(tmp_path, None, SLOW) as room:
        stories, directory = room.novel.stories, room.repo.stories
        admin = Actor("discord", CHAT, "1", "管理员", channel_id="c1", is_admin=True)
        # The chat's own story has a round open in c1: c1 cannot take a story of its own yet.
        assert not (await room.service.handle(admin, api.NextRound())).is_error
        with pytest.raises(Refused) as busy:
            await stories.new(ADMIN, Place(CHAT, "c1"), "星海")
        assert busy.value.reason == "story_round_here"
        assert busy.value.fields == {"title": "青岚渡", "phase": "proposal"}
        said = await room.service.handle(admin, api.NewStory("星海"))
        assert said.is_error and "《青岚渡》正在这里进行一轮（提议阶段）" in said.plain()
        # c2 can; then it holds one, whoever asks next.
        await stories.new(ADMIN, Place(CHAT, "c2"), "星海")
        with pytest.raises(Refused) as taken:
            await stories.new(ADMIN, Place(CHAT, "c2"), "长夜")
        assert taken.value.reason == "story_here" and taken.value.fields == {"title": "星海"}
        # Two admins at once: the unique index lets one in; the other is told whose it is.
        late = StoryRow("story:late", CHAT, "c2", "", WHEN, "3")
        assert not await directory.create(late, Blueprint(title="迟到").to_json())
        assert directory.story_at(Place(CHAT, "c2")) != "story:late"
        assert [r.place for r in await directory.stories(CHAT)] == ["", "c2"]


async def test_two_stories_side_by_side_keep_their_rounds_chapters_and_memory(
    tmp_path: Path,
) -> None:
    """One chat, two places: the chat's own story in c1, 星海 in c2. Each has its round,
    ballot, chapter and plot memory; a search of one never returns the other's chunks."""
    async with Room(tmp_path, ScriptedLLM([fake_model], repeat_last=True), SLOW) as room:
        s = room.service

        def at(place: str, user: str = "1", admin: bool = True) -> Actor:
            return Actor("discord", CHAT, user, f"成员{user}", channel_id=place, is_admin=admin)

        made = await s.handle(at("c2"), api.NewStory("星海"))
        assert "从现在起写自己的故事《星海》" in made.plain(), made.plain()
        listed = (await s.handle(at("c2", "5", admin=False), api.ListStories())).plain()
        assert "1. 《青岚渡》 — 默认故事 · 0 章" in listed
        assert "2. 《星海》 — <#c2> · 0 章 ← 这里用的故事" in listed
        star = room.repo.stories.story_at(Place(CHAT, "c2"))

        for place, title in (("c1", "夜渡"), ("c2", "星门")):
            assert not (await s.handle(at(place), api.NextRound())).is_error
            proposed = await s.handle(at(place, "2", admin=False), api.Propose(title))
            assert "目前共 1 个提议" in proposed.plain(), proposed.plain()
        ballots = {}
        for place in ("c1", "c2"):
            ballot = await s.handle(at(place), api.CloseRound())
            assert ballot.poll is not None
            ballots[place] = ballot.poll
        assert ballots["c1"].labels == ("夜渡",) and ballots["c2"].labels == ("星门",)
        # A vote by button counts in the ballot's own round, wherever in the chat it is pressed.
        voted = await s.vote(at("c1", "3", admin=False), 1, ballots["c2"].round_id)
        assert "已投给 1.《星门》" in voted.plain(), voted.plain()
        # `/chapter vote` goes to the round of the story the place holds.
        assert "《夜渡》" in (await s.handle(at("c1", "4"), api.ChooseOption(1))).plain()
        stale = await s.vote(at("c1", "5"), 1, "no-such-round")
        assert stale.is_error
        for place in ("c1", "c2"):
            written = await s.handle(at(place), api.CloseRound())
            assert "第 1 章" in written.plain() and not written.is_error, written.plain()

        book = room.repo.book
        [own] = await book.current_versions(CHAT)
        [theirs] = await book.current_versions(star)
        assert (own[1].title, theirs[1].title) == ("夜渡", "星门")
        assert "星门" not in own[1].text and "夜渡" not in theirs[1].text
        shown = await s.handle(at("c2", "6", admin=False), api.ShowChapter())
        assert "星门" in shown.plain() and "夜渡" not in shown.plain()
        # Plot memory: each story's namespace only.
        memory = room.novel.memory
        hits = await memory.search(CHAT, "星门这一夜")
        assert hits and {h.title for h in hits} == {"夜渡"}
        hits = await memory.search(star, "夜渡这一夜")
        assert hits and {h.title for h in hits} == {"星门"}
        summaries = await memory.summaries(star, "夜渡")
        assert {h.title for h in summaries} == {"星门"}
        listed = (await s.handle(at("c1", "5", admin=False), api.ListStories())).plain()
        assert "1. 《青岚渡》 — 默认故事 · 1 章 ← 这里用的故事" in listed
        assert "2. 《星海》 — <#c2> · 1 章" in listed


OLD_SCHEMA = """
CREATE TABLE novel_novels (chat_id TEXT PRIMARY KEY, created_at TEXT NOT NULL);
CREATE TABLE novel_blueprints (
    chat_id TEXT PRIMARY KEY REFERENCES novel_novels(chat_id),
    data TEXT NOT NULL, updated_at TEXT NOT NULL, updated_by TEXT NOT NULL DEFAULT '');
CREATE TABLE novel_rounds (
    id TEXT PRIMARY KEY, chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    phase TEXT NOT NULL, platform TEXT NOT NULL, channel_id TEXT NOT NULL DEFAULT '',
    opener_id TEXT NOT NULL, opener_name TEXT NOT NULL DEFAULT '',
    lang TEXT NOT NULL DEFAULT 'zh', opened_at TEXT NOT NULL,
    proposal_deadline TEXT NOT NULL, vote_deadline TEXT, winner_id INTEGER,
    outcome TEXT NOT NULL DEFAULT '', closed_at TEXT, chapter_id TEXT);
CREATE TABLE novel_chapters (
    id TEXT PRIMARY KEY, chat_id TEXT NOT NULL REFERENCES novel_novels(chat_id),
    chapter_no INTEGER NOT NULL, current_version INTEGER NOT NULL,
    created_at TEXT NOT NULL, UNIQUE (chat_id, chapter_no));
CREATE TABLE novel_chapter_versions (
    chapter_id TEXT NOT NULL REFERENCES novel_chapters(id) ON DELETE CASCADE,
    version INTEGER NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL, summary TEXT NOT NULL,
    created_at TEXT NOT NULL, author TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (chapter_id, version));
"""


def old_data_directory(db: Path, chat: str = CHAT) -> None:
    """A data directory as the writers' room left it before stories had places: one novel
    per chat (keyed by the chat), with a chapter, and a round open in channel 55."""
    now = WHEN.isoformat()
    with sqlite3.connect(db) as conn:
        conn.executescript(OLD_SCHEMA)
        conn.execute("INSERT INTO novel_novels VALUES (?, ?)", (chat, now))
        conn.execute(
            "INSERT INTO novel_blueprints(chat_id, data, updated_at) VALUES (?, ?, ?)",
            (chat, Blueprint(title="旧书").to_json(), now),
        )
        conn.execute("INSERT INTO novel_chapters VALUES ('ch1', ?, 1, 1, ?)", (chat, now))
        conn.execute(
            "INSERT INTO novel_chapter_versions VALUES ('ch1', 1, '旧章', '林远过江。', '旧章',"
            " ?, '某人', 'submitted')",
            (now,),
        )
        conn.execute(
            "INSERT INTO novel_rounds(id, chat_id, phase, platform, channel_id, opener_id,"
            " opened_at, proposal_deadline) VALUES ('r1', ?, 'proposal', 'telegram', '55',"
            " '1', ?, ?)",
            (chat, now, FAR),
        )


async def test_a_data_directory_from_before_stories_had_places_keeps_working(
    tmp_path: Path,
) -> None:
    db = tmp_path / "baibao.sqlite3"
    old_data_directory(db)
    repo, stories = await _stories(tmp_path)
    try:
        [row] = await repo.stories.stories(CHAT)
        assert (row.story_id, row.chat_id, row.place) == (CHAT, CHAT, "")
        assert repo.stories.story_at(Place(CHAT, "55")) == CHAT
        assert [c.title for c in await repo.book.chapters(CHAT)] == ["旧章"]
        [entry] = (await stories.listed(Place(CHAT, "55"))).stories
        assert (entry.title, entry.chapters, entry.phase, entry.here) == (
            "旧书",
            1,
            Phase.PROPOSAL,
            True,
        )
        with pytest.raises(Refused) as busy:  # its round was opened in 55
            await stories.new(ADMIN, Place(CHAT, "55"), "星海")
        assert busy.value.reason == "story_round_here"
        await stories.new(ADMIN, Place(CHAT, "66"), "星海")
        assert repo.stories.story_at(Place(CHAT, "66")) != CHAT
        assert repo.stories.story_at(Place(CHAT, "55")) == CHAT
    finally:
        await repo.close()
    with sqlite3.connect(db) as conn:  # the migration ran once; a second open changes nothing
        columns = {r[1] for r in conn.execute("PRAGMA table_info(novel_novels)")}
        assert {"home", "place", "place_name", "created_by"} <= columns
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(novel_novels)")}
        assert "novel_novels_place" in indexes
    repo, _ = await _stories(tmp_path)
    try:
        assert len(await repo.stories.stories(CHAT)) == 2
    finally:
        await repo.close()
