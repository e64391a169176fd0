"""Contract tests for the writers' room's stores (`novel.repo`): one store per concern on one
SQLite connection (`RoundStore`, `ChapterStore`, `BlueprintStore`), each tested on its own
through its public methods on a real SQLite file — what a service may rely on whatever it does
with the rows. Phase moves follow `novel.phase`'s table; a move the table does not allow is
refused as a compare-and-set (False or LookupError), never applied. (Where ballots were posted
and how a chat shows them is the ballot room's: tests/contract/test_ballot_store.py.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from novel.member import Member
from novel.phase import Event, Phase
from novel.repo import Draft, NovelRepo
from novel.summary import ChapterSummary, NewCharacter, RelationChange, StatusChange

NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
CHAT = "tg:-100"


@pytest.fixture
async def repo(tmp_path: Path) -> AsyncIterator[NovelRepo]:
    async with await NovelRepo.open(tmp_path / "novel.db") as opened:
        await opened.world.ensure_novel(CHAT, "{}", NOW)
        yield opened


async def _open(repo: NovelRepo, round_id: str = "r1", chat_id: str = CHAT) -> bool:
    opener = Member(chat_id, "u1", user_name="甲", channel_id="c", lang="zh", via="telegram")
    return await repo.rounds.insert_round(
        round_id=round_id, opener=opener, now=NOW, proposal_deadline=NOW + timedelta(hours=1)
    )


# ---- RoundStore -------------------------------------------------------------------------------


async def test_a_novel_has_at_most_one_open_round(repo: NovelRepo) -> None:
    assert await _open(repo, "r1")
    assert not await _open(repo, "r2")  # the partial unique index
    opened = await repo.rounds.open_round(CHAT)
    assert opened is not None and opened.id == "r1" and opened.phase is Phase.PROPOSAL
    assert [r.id for r in await repo.rounds.open_rounds()] == ["r1"]
    assert await repo.rounds.get_round("nope") is None


async def test_phase_moves_are_compare_and_set_by_the_phase_table(repo: NovelRepo) -> None:
    await _open(repo)
    assert not await repo.rounds.advance("r1", Event.CLOSE_VOTES)  # not voting yet
    deadline = NOW + timedelta(hours=2)
    assert await repo.rounds.advance("r1", Event.CLOSE_PROPOSALS, vote_deadline=deadline)
    assert not await repo.rounds.advance("r1", Event.CLOSE_PROPOSALS)  # someone moved it first
    row = await repo.rounds.get_round("r1")
    assert row is not None and row.phase is Phase.VOTING and row.vote_deadline == deadline
    assert await repo.rounds.advance("r1", Event.CLOSE_VOTES)
    assert await repo.rounds.advance("r1", Event.STALL)
    assert await repo.rounds.advance("r1", Event.ABANDON)
    assert await repo.rounds.open_round(CHAT) is None  # a closed round frees the novel
    assert await _open(repo, "r2")


async def test_proposals_are_one_per_member_and_only_while_proposing(repo: NovelRepo) -> None:
    await _open(repo)
    assert await repo.rounds.upsert_proposal("r1", "u1", "甲", "目标一", "摘要", "", NOW)
    assert await repo.rounds.upsert_proposal("r1", "u2", "乙", "目标二", "摘要", "", NOW)
    assert not await repo.rounds.upsert_proposal("r1", "u1", "甲", "目标一改", "摘要", "", NOW)
    proposals = await repo.rounds.proposals("r1")
    assert [(p.user_id, p.title) for p in proposals] == [("u1", "目标一改"), ("u2", "目标二")]
    await repo.rounds.advance("r1", Event.CLOSE_PROPOSALS)
    with pytest.raises(LookupError):
        await repo.rounds.upsert_proposal("r1", "u3", "丙", "迟到", "", "", NOW)


async def test_votes_change_retract_by_source_and_tally(repo: NovelRepo) -> None:
    await _open(repo)
    await repo.rounds.upsert_proposal("r1", "u1", "甲", "一", "", "", NOW)
    await repo.rounds.upsert_proposal("r1", "u2", "乙", "二", "", "", NOW)
    first, second = (p.id for p in await repo.rounds.proposals("r1"))
    with pytest.raises(LookupError):  # not voting yet
        await repo.rounds.vote("r1", "u1", first, NOW)
    await repo.rounds.advance("r1", Event.CLOSE_PROPOSALS)
    assert await repo.rounds.vote("r1", "u1", first, NOW, source="button") is None
    assert await repo.rounds.vote("r1", "u1", second, NOW, source="poll") == first
    assert await repo.rounds.vote("r1", "u2", second, NOW, user_name="乙") is None
    assert await repo.rounds.tally("r1") == {second: 2}
    assert not await repo.rounds.retract_vote("r1", "u1", source="button")  # cast by poll now
    assert await repo.rounds.retract_vote("r1", "u1", source="poll")
    assert [(v.user_id, v.user_name, v.source) for v in await repo.rounds.votes("r1")] == [
        ("u2", "乙", "command")
    ]
    await repo.rounds.advance("r1", Event.CLOSE_VOTES)
    with pytest.raises(LookupError):
        await repo.rounds.retract_vote("r1", "u2", source="command")
    await repo.rounds.set_winner("r1", second, "voted")
    row = await repo.rounds.get_round("r1")
    assert row is not None and row.winner_id == second and row.outcome == "voted"


async def test_a_round_keeps_where_it_was_opened(repo: NovelRepo) -> None:
    """The opener's channel, language and the chat layer's `via`: handed back unread."""
    await _open(repo)
    row = await repo.rounds.get_round("r1")
    assert row is not None and (row.via, row.channel_id, row.lang) == ("telegram", "c", "zh")


async def test_a_rounds_table_from_before_via_is_renamed_in_place(tmp_path: Path) -> None:
    """A data directory written when the rounds table named its platform (`platform`): the
    column is renamed (`via`), its values kept, and the round reads as before."""
    path = tmp_path / "old.db"
    async with await NovelRepo.open(path) as repo:
        await repo.world.ensure_novel(CHAT, "{}", NOW)
        await _open(repo)
    with closing(sqlite3.connect(path)) as db:
        db.execute("ALTER TABLE novel_rounds RENAME COLUMN via TO platform")
        db.commit()
    async with await NovelRepo.open(path) as repo:
        row = await repo.rounds.get_round("r1")
        assert row is not None and row.via == "telegram"
        await repo.world.ensure_novel("other", "{}", NOW)
        assert await _open(repo, "r2", "other")  # and a new round writes the renamed column
        again = await repo.rounds.get_round("r2")
        assert again is not None and again.via == "telegram"


# ---- ChapterStore -----------------------------------------------------------------------------


async def _chapter(repo: NovelRepo, chapter_id: str, title: str) -> int:
    return await repo.book.add_chapter(
        chat_id=CHAT,
        chapter_id=chapter_id,
        draft=Draft(
            title=title,
            text=f"{title}的正文。",
            summary=ChapterSummary(summary=title),
            author="u1",
            reason="",
            now=NOW,
        ),
    )


async def test_chapters_number_in_order_and_a_round_is_saved_with_its_chapter(
    repo: NovelRepo,
) -> None:
    assert await _chapter(repo, "c1", "第一章") == 1
    await _open(repo)
    second = Draft("第二章", "正文。", ChapterSummary(summary="二"), "u1", "", NOW)
    with pytest.raises(LookupError):  # the round is not being written
        await repo.book.add_chapter(chat_id=CHAT, chapter_id="c2", draft=second, round_id="r1")
    assert [c.chapter_no for c in await repo.book.chapters(CHAT)] == [1]  # nothing half-saved
    for event in (Event.CLOSE_PROPOSALS, Event.CLOSE_VOTES):
        await repo.rounds.advance("r1", event)
    number = await repo.book.add_chapter(chat_id=CHAT, chapter_id="c2", draft=second, round_id="r1")
    assert number == 2
    row = await repo.rounds.get_round("r1")
    assert row is not None and row.phase is Phase.DONE and row.chapter_id == "c2"


async def test_versions_become_current_and_a_failed_revision_is_undone(repo: NovelRepo) -> None:
    await _chapter(repo, "c1", "第一章")
    assert await repo.book.next_version("c1") == 2
    await repo.book.add_version(
        chapter_id="c1",
        version=2,
        draft=Draft(
            title="第一章（改）",
            text="改写的正文。",
            summary=ChapterSummary(summary="改"),
            author="u2",
            reason="修订",
            now=NOW,
        ),
    )
    chapter = await repo.book.chapter(CHAT, 1)
    assert chapter is not None and chapter.current_version == 2 and chapter.title == "第一章（改）"
    version = await repo.book.version("c1", 2)
    assert (
        version is not None
        and version.summary == ChapterSummary(summary="改")
        and version.reason == "修订"
    )
    assert [v.version for v in await repo.book.versions("c1")] == [1, 2]
    await repo.book.set_current("c1", 1)  # rollback
    assert await repo.book.current_map(CHAT) == {"c1": (1, 1)}
    await repo.book.drop_version("c1", 2, current=1)
    assert [v.version for v in await repo.book.versions("c1")] == [1]
    assert [(n, v.version) for n, v in await repo.book.current_versions(CHAT)] == [(1, 1)]


async def test_a_summary_round_trips_typed(repo: NovelRepo) -> None:
    """What the summariser made is what every read returns: the same `ChapterSummary`, its
    nested status changes, new characters and relationships included."""
    summary = ChapterSummary(
        title="夜渡",
        summary="林远夜渡青岚江，霍三中箭。",
        characters=["林远", "霍三"],
        scenes=["青岚渡口"],
        events=["夜渡青岚江"],
        status_changes=[StatusChange(name="霍三", status="受伤")],
        new_characters=[NewCharacter(name="钱七", description="船夫")],
        relationships=[RelationChange(a="林远", b="钱七", relation="船夫")],
        extractive=True,
    )
    await repo.book.add_chapter(
        chat_id=CHAT,
        chapter_id="c1",
        draft=Draft(
            title="夜渡",
            text="正文。",
            summary=summary,
            author="u1",
            reason="",
            now=NOW,
        ),
    )
    version = await repo.book.version("c1", 1)
    assert version is not None and version.summary == summary
    assert [v.summary for v in await repo.book.versions("c1")] == [summary]
    assert [v.summary for _, v in await repo.book.current_versions(CHAT)] == [summary]


# Summary columns as older releases (or hands) wrote them, and what each reads back as.
_OLD_SHAPES: tuple[tuple[str, ChapterSummary], ...] = (
    (  # before the world-change keys existed
        '{"summary": "旧摘要", "characters": ["林远"], "scenes": ["渡口"]}',
        ChapterSummary(summary="旧摘要", characters=["林远"], scenes=["渡口"]),
    ),
    (  # looser: a comma list, a malformed item; what validates is kept
        '{"summary": "松散", "characters": "林远，苏晴", "status_changes":'
        ' [{"name": "霍三"}, {"name": "霍三", "status": "受伤"}], "extractive": "maybe"}',
        ChapterSummary(
            title="第1章",
            summary="松散",
            characters=["林远", "苏晴"],
            status_changes=[StatusChange(name="霍三", status="受伤")],
        ),
    ),
    ("{}", ChapterSummary(title="第1章", summary="第1章")),  # no line: the chapter's title
    ("[]", ChapterSummary(title="第1章", summary="第1章")),
    ("旧的纯文本摘要", ChapterSummary(summary="旧的纯文本摘要")),  # not JSON at all
)


@pytest.mark.parametrize(("stored", "expected"), _OLD_SHAPES)
async def test_an_old_shape_summary_row_still_loads(
    tmp_path: Path, stored: str, expected: ChapterSummary
) -> None:
    path = tmp_path / "old.db"
    async with await NovelRepo.open(path) as made:  # today's schema
        await made.world.ensure_novel(CHAT, "{}", NOW)
    with closing(sqlite3.connect(path)) as db, db:  # rows written as an older release did
        db.execute(
            "INSERT INTO novel_chapters(id, chat_id, chapter_no, current_version, created_at)"
            " VALUES ('c1', ?, 1, 1, ?)",
            (CHAT, NOW.isoformat()),
        )
        db.execute(
            "INSERT INTO novel_chapter_versions(chapter_id, version, title, text, summary,"
            " created_at) VALUES ('c1', 1, '第1章', '正文。', ?, ?)",
            (stored, NOW.isoformat()),
        )
    async with await NovelRepo.open(path) as repo:
        version = await repo.book.version("c1", 1)
        assert version is not None and version.summary == expected
        assert [v.summary for _, v in await repo.book.current_versions(CHAT)] == [expected]


async def test_deleting_a_chapter_renumbers_the_later_ones(repo: NovelRepo) -> None:
    for i, cid in enumerate(("c1", "c2", "c3"), start=1):
        await _chapter(repo, cid, f"第{i}章")
    await repo.world.propose_changes(CHAT, "c3", 3, [("character", {"name": "钱七"})], NOW)
    assert sorted(await repo.book.delete_chapter(CHAT, "c1")) == [("c2", 1), ("c3", 2)]
    assert await repo.book.current_map(CHAT) == {"c2": (1, 1), "c3": (2, 1)}
    assert [c.chapter_no for c in await repo.world.pending_changes(CHAT)] == [2]
    assert await repo.book.delete_chapter(CHAT, "gone") == []


# ---- BlueprintStore ---------------------------------------------------------------------------


async def test_the_blueprint_keeps_its_history_newest_first(repo: NovelRepo) -> None:
    await repo.world.ensure_novel(CHAT, '{"ignored": 1}', NOW)  # already there: kept
    assert await repo.world.blueprint_json(CHAT) == "{}"
    assert await repo.world.chats() == [CHAT]
    await repo.world.set_blueprint(CHAT, '{"v": 1}', "u1", NOW, "上传")
    await repo.world.set_blueprint(CHAT, '{"v": 2}', "u2", NOW + timedelta(minutes=1), "编辑")
    assert await repo.world.blueprint_json(CHAT) == '{"v": 2}'
    history = await repo.world.blueprint_history(CHAT)
    assert [(h.data, h.changed_by, h.reason) for h in history] == [
        ('{"v": 2}', "u2", "编辑"),
        ('{"v": 1}', "u1", "上传"),
    ]
    assert await repo.world.blueprint_json("nobody") is None


async def test_changes_are_proposed_superseded_and_decided_once(repo: NovelRepo) -> None:
    await _chapter(repo, "c1", "第一章")
    old = await repo.world.propose_changes(CHAT, "c1", 1, [("character", {"name": "甲"})], NOW)
    new = await repo.world.propose_changes(
        CHAT, "c1", 1, [("character", {"name": "乙"}), ("place", {"name": "岛"})], NOW
    )
    pending = await repo.world.pending_changes(CHAT)
    assert [c.id for c in pending] == [c.id for c in new] and old[0].id not in [
        c.id for c in pending
    ]
    assert [c.payload for c in pending] == [{"name": "乙"}, {"name": "岛"}]
    accepted = await repo.world.decide_changes(
        CHAT, [new[0].id], "accepted", "u1", NOW, blueprint='{"v": 3}', reason="接受"
    )
    assert accepted == 1 and await repo.world.blueprint_json(CHAT) == '{"v": 3}'
    with pytest.raises(LookupError):  # decided already
        await repo.world.decide_changes(CHAT, [new[0].id], "rejected", "u2", NOW)
    assert await repo.world.decide_changes(CHAT, [], "rejected", "u2", NOW) == 0
    decided = await repo.world.decided_changes(CHAT)
    assert [(c.id, c.status, c.decided_by) for c in decided] == [(new[0].id, "accepted", "u1")]
    await repo.world.supersede_changes(CHAT, "c1", NOW)
    assert await repo.world.pending_changes(CHAT) == []


async def test_the_stores_share_one_connection_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "novel.db"
    async with await NovelRepo.open(path) as first:
        await first.world.ensure_novel(CHAT, "{}", NOW)
        await _open(first)
        await _chapter(first, "c1", "第一章")
    async with await NovelRepo.open(path) as again:
        assert [r.id for r in await again.rounds.open_rounds()] == ["r1"]
        assert [c.chapter_id for _, c in await again.book.current_versions(CHAT)] == ["c1"]
