"""Revise, rollback and delete keep the story state right: it is recomputed from the chapters
that remain (their current versions), and no blueprint proposal of a version that is not
current stays pending (the state reads pending new characters as known names)."""

from __future__ import annotations

from pathlib import Path

from novel import api
from novel.blueprint import default_blueprint
from novel.repo import Draft
from novel.story_state import StoryState, replay
from novel.summary import extractive_summary
from tests.novel_room import ADMIN, Room

CH1 = "林远在青岚渡口等船，江风很冷。"
FILLER = "林远喝了一碗粥，天色慢慢暗了下来。"
CH3 = "苏晴在漕帮总舵等林远，一直等到天亮。"
HURT = "霍三在江心岛受了重伤。一个名叫钱七的老船夫把他背回了听潮阁。"
DEAD = "霍三死了。林远来到听潮阁，点起一盏灯。"
STRANGER = "苏晴在漕帮总舵等林远。一个名叫孟青山的账房先生递给她一封信。"


def _facts(state: StoryState) -> dict[str, tuple[object, object]]:
    return {
        c.name: (
            c.status and (c.status.status, c.status.chapter),
            c.seen and (c.seen.place, c.seen.chapter),
        )
        for c in state.characters
    }


def _known(state: StoryState) -> set[str]:
    return set(state.known) | {i.name for i in state.introduced}


async def _seed(room: Room) -> None:
    bp = default_blueprint()
    for i, text in enumerate((CH1, FILLER, CH3), start=1):
        await room.novel.memory.add_chapter(
            chat_id="g1",
            chapter_id=f"c{i}",
            draft=Draft(
                title=f"第{i}章",
                text=text,
                summary=extractive_summary(text, f"第{i}章", bp),
                author="t",
                reason="test",
                now=room.clock(),
            ),
        )


async def _pending_names(room: Room) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in await room.repo.world.pending_changes("g1"):
        if c.kind == "character":
            out.setdefault(c.chapter_id, set()).add(str(c.payload.get("name")))
    return out


async def test_revise_rollback_and_delete_recompute_the_story_state(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())  # the novel exists (its blueprint)
        await _seed(room)
        bp = await s.service.chapters.blueprint("g1")
        state = await s.service.chapters.story_state("g1")
        assert _facts(state) == _facts(replay(bp, [CH1, FILLER, CH3]))
        assert state.character("林远").seen.chapter == 1  # type: ignore[union-attr]

        # revise chapter 2: 霍三 hurt, a new face (钱七) proposed for the blueprint
        assert not (await s.handle(ADMIN, api.ReviseChapter(2, text=HURT))).is_error
        state = await s.service.chapters.story_state("g1")
        assert _facts(state) == _facts(replay(bp, [CH1, HURT, CH3]))
        assert _facts(state)["霍三"] == (("hurt", 2), ("江心岛", 2))
        assert "钱七" in _known(state) and await _pending_names(room) == {"c2": {"钱七"}}

        # revise it again: 霍三 dies instead, and 钱七 was never in the story
        assert not (await s.handle(ADMIN, api.ReviseChapter(2, text=DEAD))).is_error
        state = await s.service.chapters.story_state("g1")
        assert _facts(state) == _facts(replay(bp, [CH1, DEAD, CH3]))
        assert state.dead() == {"霍三": "已死亡（第2章）"}
        assert _facts(state)["林远"][1] == ("听潮阁", 2)
        assert "钱七" not in _known(state) and await _pending_names(room) == {}

        # roll back to version 2: the wound, 钱七 and his proposal are back
        assert not (await s.handle(ADMIN, api.RollbackChapter(2, 2))).is_error
        state = await s.service.chapters.story_state("g1")
        assert _facts(state) == _facts(replay(bp, [CH1, HURT, CH3]))
        assert state.dead() == {} and _facts(state)["林远"][1] == ("青岚渡口", 1)
        assert "钱七" in _known(state) and await _pending_names(room) == {"c2": {"钱七"}}

        # chapter 3 proposes a face of its own; then chapter 2 goes: 3 becomes 2
        assert not (await s.handle(ADMIN, api.ReviseChapter(3, text=STRANGER))).is_error
        assert await _pending_names(room) == {"c2": {"钱七"}, "c3": {"孟青山"}}
        deleted = await s.handle(ADMIN, api.DeleteChapter(2, confirm=True))
        assert not deleted.is_error, deleted.plain()
        state = await s.service.chapters.story_state("g1")
        assert state.chapters == 2
        assert _facts(state) == _facts(replay(bp, [CH1, STRANGER]))
        assert _facts(state)["霍三"] == (None, None) and _facts(state)["苏晴"][1] == ("漕帮总舵", 2)
        assert "钱七" not in _known(state) and "孟青山" in _known(state)
        assert await _pending_names(room) == {"c3": {"孟青山"}}
        assert {c.chapter_no for c in await room.repo.world.pending_changes("g1")} == {2}


async def test_an_undone_revision_keeps_the_old_versions_proposals(tmp_path: Path) -> None:
    """A store fault after the SQLite flip undoes the revision: the old version is current
    again, and so are its blueprint proposals (the flip had superseded them)."""
    from tests.unit.test_novel_chapters import FailingStore

    stores: list[FailingStore] = []

    def wrap(store: object) -> FailingStore:
        stores.append(FailingStore(store))  # type: ignore[arg-type]
        return stores[-1]

    async with Room(tmp_path, None, store_wrapper=wrap) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await _seed(room)
        assert not (await s.handle(ADMIN, api.ReviseChapter(2, text=HURT))).is_error
        assert await _pending_names(room) == {"c2": {"钱七"}}
        stores[0].fail = {"set_extra": 1}  # activation, after the flip
        failed = await s.handle(ADMIN, api.ReviseChapter(2, text=DEAD))
        assert failed.is_error and stores[0].fail == {"set_extra": 0}
        assert (await room.repo.book.current_map("g1"))["c2"] == (2, 2)
        assert await _pending_names(room) == {"c2": {"钱七"}}
        bp = await s.service.chapters.blueprint("g1")
        state = await s.service.chapters.story_state("g1")
        assert _facts(state) == _facts(replay(bp, [CH1, HURT, CH3])) and state.dead() == {}


async def test_killed_between_the_flip_and_the_review_the_old_proposals_are_gone(
    tmp_path: Path,
) -> None:
    """The revision's SQLite flip is its commit point; the review (consistency check and new
    proposals) runs after it. A process killed in between must not leave the old version's
    proposals pending: the story state would know a name only the old text introduced."""
    async with Room(tmp_path, None) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await _seed(room)
        assert not (await s.handle(ADMIN, api.ReviseChapter(2, text=HURT))).is_error
        assert await _pending_names(room) == {"c2": {"钱七"}}
        bp = await s.service.chapters.blueprint("g1")
        await s.service.memory.add_version(  # the revision up to its commit point, no review after
            chat_id="g1",
            chapter_id="c2",
            chapter_no=2,
            draft=Draft(
                title="第2章",
                text=DEAD,
                summary=extractive_summary(DEAD, "第2章", bp),
                author="t",
                reason="test",
                now=room.clock(),
            ),
        )
        assert await _pending_names(room) == {}
        state = await s.service.chapters.story_state("g1")
        assert "钱七" not in _known(state) and state.dead() == {"霍三": "已死亡（第2章）"}
