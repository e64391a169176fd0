"""The story as a reader remembers it (issue 42): events in story time, stored per chapter
version, and the 《青岚渡》 bugs the issue lists — each with its test. Every text here was written
for these tests; the blueprint is the default one (《青岚渡》) unless a test says otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from novel import api
from novel import story_state as story_state_module
from novel.blueprint import Blueprint, Character, default_blueprint
from novel.cast import cast_of
from novel.consistency import check_rules
from novel.events import ChapterEvents
from novel.repo import Draft
from novel.story_state import StoryState, advance, read_chapter, replay
from novel.summary import extractive_summary
from novel.timeline import DAWN, EVENING, NIGHT, When
from tests.novel_room import ADMIN, Room

BP = default_blueprint()
KILLING = (
    "夜里，林远和霍三在江心岛上相遇。霍三在江心岛上拔刀，一刀刺死了林远。林远倒下，再也没有起来。"
)
SPEAKS = "第二天一早，林远站在青岚渡口，对苏晴说：“我们走吧。”"
KNEELS = "林远跪在地上，双手捧起江水洗脸。林远站在河边望着对岸。"


def _member(state: StoryState, name: str) -> tuple[str, str | None]:
    """(standing, last place) of a character as `/novel characters` shows them."""
    members = {m.name: m for m in cast_of(state, [frozenset()] * state.chapters)}
    m = members[name]
    return m.standing, m.seen.place if m.seen else None


# ---- the 《青岚渡》 bugs -----------------------------------------------------------------------


def test_the_killer_is_alive_and_the_victim_dead() -> None:
    state = replay(BP, [KILLING])
    assert set(state.dead()) == {"林远"}  # before issue 42: 霍三 已死亡, 林远 在世
    assert _member(state, "霍三")[0] == "alive" and _member(state, "林远")[0] == "dead"
    # the next chapter has 林远 speaking: a finding, naming him
    [found] = check_rules(SPEAKS, state)
    assert found.kind == "dead_acts" and found.fields["who"] == "林远"


def test_kneeling_on_the_ground_is_no_place() -> None:
    state = replay(BP, [KNEELS])
    assert check_rules(KNEELS, StoryState(BP)) == []  # not 「既在河边又在地」
    assert _member(state, "林远")[1] != "地"
    seen = state.character("林远")
    assert seen is not None and seen.seen is not None and seen.seen.place == "河边"
    assert "河边" in seen.seen.sentence


def test_the_last_place_is_a_place_a_sentence_says() -> None:
    chapters = [
        "霍三在漕帮总舵喝茶。",
        "霍三来到江心岛，在岛上的破庙里住了下来。",
        "霍三站在窗边，看着江面。",  # a part of where he is: not a new last place
    ]
    state = replay(BP, chapters)
    huo = state.character("霍三")
    assert huo is not None and huo.seen is not None
    assert huo.seen.place == "江心岛" and huo.seen.chapter == 2
    assert huo.seen.place in huo.seen.sentence  # quoted from a sentence that says it


def test_a_missing_character_who_speaks_is_no_longer_missing() -> None:
    assert _member(StoryState(BP), "沈默")[0] == "missing"  # the blueprint: 失踪
    state = replay(BP, ["沈默推开听潮阁的门，对林远说：“你来了。”"])
    assert _member(state, "沈默")[0] == "alive"
    # someone else speaking of him does not find him
    rumour = replay(BP, ["苏晴说：“听说沈默还活着。”"])
    assert _member(rumour, "沈默")[0] == "missing"


def test_a_wind_is_no_character() -> None:
    text = "江风带着潮腥，一阵一阵地扑在脸上。林远缩了缩脖子。"
    assert check_rules(text, StoryState(BP)) == []  # not an unintroduced name
    state = replay(BP, [text])
    assert "江风" not in {i.name for i in state.introduced}
    assert "江风" not in {m.name for m in cast_of(state, [frozenset()])}


def test_the_dead_acting_as_he_is_named_as_the_dead() -> None:
    bp = BP.model_copy(
        update={
            "characters": [
                *(c for c in BP.characters if c.name != "霍三"),
                Character(name="霍三", status="已死亡", description="漕帮二当家，男人"),
            ]
        }
    )
    [found] = check_rules("苏晴回到青岚渡。霍三站在船头，冷冷地笑。", StoryState(bp))
    assert found.fields["who"] == "霍三"
    [found] = check_rules("苏晴回头看了一眼霍三的空椅子。他正坐在那里喝茶。", StoryState(bp))
    assert found.fields["name"] == "霍三" and found.fields["words"] == "他"  # not 他


# ---- events in story time -------------------------------------------------------------------------


def test_a_chapter_yields_typed_events_in_story_time() -> None:
    text = (
        "当夜，霍三在江心岛上砍伤了林远的右腿。郎中说，没有三个月好不了。\n\n"
        "第二天一早，苏晴离开青岚渡，往听潮阁赶去。\n\n"
        "三天后，一个名叫钱七的船夫来到渡口。\n\n"
        "半个月过去了。天亮时，林远坐在青岚渡的茶棚里，他的腿伤已经好了。"
    )
    chapter = read_chapter(StoryState(BP), text)
    events = {(e.kind, e.who): e for e in chapter.events}
    wound = events[("wounded", "林远")]
    assert (wound.body, wound.side, wound.heals, wound.by) == ("leg", "右", 90, "霍三")
    assert wound.when == When(0, NIGHT)
    left = events[("left", "苏晴")]
    assert (left.place, left.journey, left.when) == ("青岚渡", True, When(1, DAWN))
    assert events[("arrived", "苏晴")].place == "听潮阁"
    assert events[("introduced", "钱七")].when.day == 4
    healed = events[("healed", "林远")]
    assert healed.when == When(19, DAWN)
    # a healing after 19 days of a wound that needs 90: too soon
    found = [f for f in check_rules(text, StoryState(BP)) if f.kind == "healed_too_soon"]
    assert [(f.fields["name"], f.fields["days"], f.fields["elapsed"]) for f in found] == [
        ("林远", "90", "19")
    ]


def test_events_round_trip_through_json() -> None:
    state = StoryState(BP)
    chapter = read_chapter(state, KILLING + "\n\n" + SPEAKS)
    stored = story_state_module.chapter_events(state, chapter)
    assert ChapterEvents.from_json(stored.to_json()) == stored
    assert story_state_module.apply(state, stored) == advance(state, KILLING + "\n\n" + SPEAKS)


# ---- stored: a restart needs no replay --------------------------------------------------------------

CH1 = "林远在青岚渡口等船。霍三在江心岛上砍伤了苏晴的左臂。"
CH2 = "傍晚，沈默推开听潮阁的门，对林远说：“你来了。”"
CH3 = "霍三死了。林远来到听潮阁，点起一盏灯。"
REVISED = "苏晴的伤还疼。林远在漕帮总舵外面等到天亮。"


async def _seed(room: Room, texts: tuple[str, ...] = (CH1, CH2, CH3)) -> None:
    for i, text in enumerate(texts, start=1):
        await room.novel.memory.add_chapter(
            chat_id="g1",
            chapter_id=f"c{i}",
            draft=Draft(
                f"第{i}章",
                text,
                extractive_summary(text, f"第{i}章", BP),
                "t",
                "test",
                room.clock(),
            ),
        )


async def _rows(room: Room) -> dict[tuple[str, int], str]:
    return {k: v[1] for k, v in (await room.repo.events.stored("g1")).items()}


async def test_a_restart_reads_stored_events_and_reads_no_chapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Room(tmp_path, None) as room:
        await room.service.handle(ADMIN, api.NextRound())
        await _seed(room)
        before = await room.novel.chapters.story_state("g1")
        cast_before = await room.story.cast("g1")
        assert set(await _rows(room)) == {("c1", 1), ("c2", 1), ("c3", 1)}

    def no_reading(*_: object) -> object:
        raise AssertionError("a chapter was read again after the restart")

    monkeypatch.setattr(story_state_module, "read_chapter", no_reading)
    monkeypatch.setattr("novel.ledger.read_chapter", no_reading)
    async with Room(tmp_path, None) as room:  # the restart
        state = await room.novel.chapters.story_state("g1")
        assert state == before
        cast = await room.story.cast("g1")
        assert cast == cast_before
        # /novel characters and the check read the same state
        standing = {m.name: m.standing for m in cast.members}
        assert standing["霍三"] == "dead" and standing["苏晴"] == "hurt"
        assert standing["沈默"] == "alive"  # he spoke in chapter 2
        assert set(state.dead()) == {"霍三"}


async def test_revise_rollback_and_delete_replace_the_chapters_events(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await _seed(room)
        await room.novel.chapters.story_state("g1")
        first = await _rows(room)

        assert not (await s.handle(ADMIN, api.ReviseChapter(3, text=REVISED))).is_error
        rows = await _rows(room)
        assert set(rows) == {("c1", 1), ("c2", 1), ("c3", 2)}  # the current versions'
        assert rows[("c1", 1)] == first[("c1", 1)]  # chapters before it are not read again
        state = await room.novel.chapters.story_state("g1")
        assert state.dead() == {}
        lin = state.character("林远")
        assert lin is not None and lin.seen is not None and lin.seen.place == "漕帮总舵"

        assert not (await s.handle(ADMIN, api.RollbackChapter(3, 1))).is_error
        assert set(await _rows(room)) == {("c1", 1), ("c2", 1), ("c3", 1)}
        assert set((await room.novel.chapters.story_state("g1")).dead()) == {"霍三"}

        assert not (await s.handle(ADMIN, api.DeleteChapter(1, confirm=True))).is_error
        rows = await _rows(room)
        assert set(rows) == {("c2", 1), ("c3", 1)}
        count = await room.repo.events._one(  # the deleted chapter's versions took their events
            "SELECT COUNT(*) FROM novel_chapter_events WHERE chapter_id = 'c1'"
        )
        assert count is not None and count[0] == 0
        state = await room.novel.chapters.story_state("g1")
        assert state == replay(BP, [CH2, CH3]).knowing(state.known)
        assert all(w.who != "苏晴" for w in state.wounds)  # her wound was in chapter 1


async def test_stored_events_that_do_not_decode_are_read_again(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        await room.service.handle(ADMIN, api.NextRound())
        await _seed(room)
        good = await room.novel.chapters.story_state("g1")
        stored = await room.repo.events.stored("g1")
        basis, _ = stored[("c2", 1)]
        await room.repo.events.put("c2", 1, basis, '{"events": [{"kind": 5}]}')
        assert await room.novel.chapters.story_state("g1") == good
        assert (await room.repo.events.stored("g1"))[("c2", 1)][1] != '{"events": [{"kind": 5}]}'


def test_a_blueprint_that_changes_the_cast_reads_the_chapters_again() -> None:
    from novel.ledger import bases

    versions = [("c1", 1), ("c2", 3)]
    same = bases(BP, versions)
    assert bases(BP, versions) == same and len(set(same)) == 2
    renamed = Blueprint.model_validate({**BP.model_dump(), "title": "新书名"})
    assert bases(renamed, versions) == same  # the title is nothing the reader uses
    copy = Blueprint.model_validate(BP.model_dump())  # an equal blueprint: the same bases
    assert bases(copy, versions) == same
    recast = BP.model_copy(update={"characters": [*BP.characters, Character(name="钱七")]})
    assert bases(recast, versions)[0] != same[0]
    assert bases(BP, [("c1", 2), ("c2", 3)])[1] != same[1]  # chapter 1 revised
    assert bases(BP, [("c1", 2), ("c2", 3)])[0] == same[0]


def test_story_time_reads_the_phrases_of_the_issue() -> None:
    from novel.timeline import lapse, move

    now = When(0, EVENING)
    assert move(now, "当夜，风停了。") == When(0, NIGHT)
    assert move(now, "第二天一早，他出了门。") == When(1, DAWN)
    assert move(now, "三天后，她回来了。").day == 3
    assert move(now, "半个月过去了。").day == 15
    assert move(When(0, NIGHT), "天亮时，雨停了。") == When(1, DAWN)
    assert move(now, "那年也是这样的秋天。") == now  # a memory does not move the clock
    assert move(now, "“明天一早我就动身。”") == now  # nor a plan
    assert [lapse(x) for x in ("三个月", "半年", "很长时间", "好几个月", "六个星期")] == [
        90,
        182,
        90,
        90,
        42,
    ]


def test_a_sentence_that_spans_days_moves_the_clock_past_them() -> None:
    from novel.timeline import move

    now = When(1, EVENING)
    assert move(now, "一连半个月，林远都躺在船舱里养伤。").day == 16
    assert move(now, "整整三天，他没有出门。").day == 4
    assert move(now, "连着两个月没有消息。").day == 61
    assert move(now, "一连串的脚步声从门外传来。") == now  # no span of time


def test_recovering_from_an_open_wound_is_that_wound_not_a_new_one() -> None:
    """躺在船舱里养伤 half a month later tells the leg wound again: its healing time (三个月)
    and its day stay, so healing five days later is 22 days after the wound, not 6 after a
    new 14-day one."""
    hurt = "霍三拔刀刺来，林远左腿挨了一刀，伤口深可见骨。苏晴说，这伤没有三个月好不了。"
    resting = "第二天一早，林远回到青岚渡。一连半个月，林远都躺在船舱里养伤。"
    state = replay(BP, [hurt, resting])
    (wound,) = state.wounds_of("林远")
    assert (wound.since.day, wound.heals, wound.body) == (0, 90, "leg")
    assert state.character("林远").status.sentence.startswith("霍三拔刀刺来")
