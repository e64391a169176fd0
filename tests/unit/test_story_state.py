"""The story state: a pure, immutable, deterministic computation over the chapters, and the
consistency check reading it (issue 23). Every text here was written for these tests."""

from __future__ import annotations

import dataclasses

import pytest

from novel.blueprint import Blueprint, Character
from novel.consistency import check_rules
from novel.reading import read, resolve
from novel.story_state import StoryState, gender, replay

BP = Blueprint(
    title="雨巷",
    places=["长乐客栈", "码头", "江心岛", "府城"],
    rules=["没有法术。", "受伤会留下后果，伤不会立刻痊愈。", "死者不能复生。"],
    characters=[
        Character(name="韦七", description="码头的脚夫，三十岁的汉子"),
        Character(name="沈蘅", aliases=["阿蘅"], description="长乐客栈的女账房"),
        Character(name="方敬之", description="落第书生，男"),
    ],
)
CH1 = "韦七在码头上扛包。一个蒙面人冲过来，一刀砍在他的左臂上。\n\n沈蘅站在长乐客栈门口张望。"
CH2 = "一个名叫罗九的船夫来到长乐客栈。方敬之断了气。沈蘅失踪了。"
CH3 = "沈蘅站在码头上，望着江心岛。"


def test_replay_records_status_place_and_names_with_chapter_and_sentence() -> None:
    state = replay(BP, [CH1, CH2])
    assert state.chapters == 2
    wei = state.character("韦七")
    assert wei is not None and wei.status is not None
    assert (wei.status.status, wei.status.chapter) == ("hurt", 1)
    assert wei.status.sentence == "一个蒙面人冲过来，一刀砍在他的左臂上。"  # 他 = 韦七
    assert wei.seen is not None and (wei.seen.place, wei.seen.chapter) == ("码头", 1)
    fang = state.character("方敬之")
    assert fang is not None and fang.status is not None
    assert (fang.status.status, fang.status.chapter, fang.status.sentence) == (
        "dead",
        2,
        "方敬之断了气。",
    )
    shen = state.character("沈蘅")
    assert shen is not None and shen.status is not None and shen.status.status == "missing"
    assert shen.seen is not None and shen.seen.place == "长乐客栈"  # 门口 is part of the inn
    [luo] = state.introduced
    assert (luo.name, luo.chapter, luo.formal) == ("罗九", 2, True)
    assert state.dead() == {"方敬之": "已死亡（第2章）"}
    # seen again: no longer missing
    later = replay(BP, [CH1, CH2, CH3]).character("沈蘅")
    assert later is not None and later.status is None and later.seen is not None
    assert (later.seen.place, later.seen.chapter) == ("码头", 3)


def test_state_is_immutable_deterministic_and_recomputed_from_what_remains() -> None:
    state = replay(BP, [CH1, CH2])
    assert replay(BP, [CH1, CH2]) == state
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.chapters = 5  # type: ignore[misc]
    # chapter 2 deleted (or rolled back): nobody died, nobody was introduced
    remaining = replay(BP, [CH1, CH3])
    assert remaining.dead() == {} and remaining.introduced == ()
    fang = remaining.character("方敬之")
    assert fang is not None and fang.status is None
    assert replay(BP, []) == StoryState(BP)


def test_malformed_chapters_give_an_empty_reading_not_an_error() -> None:
    state = replay(BP, ["", "   \n\n  ", "！！……“”", "a" * 3000])
    assert state.chapters == 4
    assert all(c.status is None and c.seen is None for c in state.characters)


def test_the_check_judges_a_chapter_with_the_story_before_it() -> None:
    acting = "方敬之推开窗，说：“天亮了。”"
    [found] = check_rules(acting, replay(BP, [CH1, CH2]))
    assert found.kind == "dead_acts" and found.quote == acting
    assert found.fields["status"] == "已死亡（第2章）"  # the blueprint still says alive
    assert check_rules(acting, replay(BP, [CH1])) == []  # before his death
    # names introduced earlier are known later
    assert check_rules("罗九摇着橹，一声不吭。", replay(BP, [CH1, CH2])) == []
    assert [f.kind for f in check_rules("罗九摇着橹，一声不吭。", replay(BP, [CH1]))] == [
        "unknown_name"
    ]


def test_a_wound_healed_too_soon_said_with_a_pronoun() -> None:
    healed = "韦七一觉睡到中午。他的伤已经全好了，跳下床就去码头扛包。"
    [found] = check_rules(healed, replay(BP, [CH1]))
    # its own kind since issue 42 (it was rule_broken): a wound healed too soon
    assert found.kind == "healed_too_soon" and found.fields["name"] == "韦七"
    assert found.quote == "他的伤已经全好了，跳下床就去码头扛包。"
    # weeks later it may heal; and a chapter of weeks between is enough too
    assert check_rules("三个月后，韦七的伤口已经愈合。", replay(BP, [CH1])) == []
    weeks = "半个月过去了。沈蘅在长乐客栈里算账。"
    assert check_rules(healed, replay(BP, [CH1, weeks])) == []
    # hurt and healed in one scene, the healed one as 他
    same = "方敬之左臂中了一箭。他咬着牙把箭拔出来，伤口转眼就愈合了。"
    assert [f.kind for f in check_rules(same, StoryState(BP))] == ["healed_too_soon"]


def test_pronouns_stand_for_the_last_subject_of_the_right_gender() -> None:
    genders = {c.name: gender(c) for c in BP.characters}
    assert genders == {"韦七": "m", "沈蘅": "f", "方敬之": "m"}
    stack = [("韦七",), ("沈蘅",), ("方敬之",)]
    assert resolve("她", stack, genders) == ("沈蘅",)
    assert resolve("他", stack, genders) == ("方敬之",)
    assert resolve("他", [*stack, (None,)], genders) is None  # someone unnamed came between
    assert resolve("他们", [("韦七", "方敬之")], genders) == ("韦七", "方敬之")
    text = "沈蘅和韦七走进长乐客栈。韦七放下担子。她笑了。"
    readings = read(text, StoryState(BP).names(), genders)
    assert [a.canon for a in readings[2].clauses[0].actors] == ["沈蘅"]


def test_dead_acting_as_a_pronoun_and_what_must_not_fire() -> None:
    after = replay(BP, [CH1, CH2])
    assert [
        f.kind
        for f in check_rules("方敬之断了气。他忽然坐起来，对沈蘅说：“我饿了。”", StoryState(BP))
    ] == ["dead_acts"]
    for fine in (
        "方敬之断了气。沈蘅跪在他身边哭。",  # he is the object
        "沈蘅告诉罗九，方敬之昨天还在码头喝酒。",  # reported speech
        "那夜沈蘅梦见了方敬之。方敬之坐在窗前读书，回头冲她一笑。",  # a dream, two sentences
        "沈蘅想起从前。那时方敬之常常站在码头上念诗。",  # a memory lasts its paragraph
        "照片上，方敬之站在码头边挥手。",  # a picture
    ):
        assert check_rules(fine, after) == [], fine


def test_deaths_said_by_the_clause_or_the_body_and_idioms_that_are_not() -> None:
    state = replay(BP, ["方敬之在府城的客栈里去世了。"])
    assert state.dead() == {"方敬之": "已死亡（第1章）"}
    state = replay(BP, ["第二天，人们在码头上找到了韦七的尸体。"])
    assert set(state.dead()) == {"韦七"}
    for alive in (
        "方敬之笑死了，拍着桌子直喊肚子疼。",
        "韦七疼得死去活来。",
        "方敬之差点死在江里。",
    ):
        assert replay(BP, [alive]).dead() == {}, alive


def test_the_review_replays_only_the_chapters_before_the_one_judged() -> None:
    from datetime import UTC, datetime

    from novel.chapters import _story_state
    from novel.repo import VersionRow
    from novel.summary import ChapterSummary

    def row(n: int, text: str) -> tuple[int, VersionRow]:
        when = datetime(2026, 1, n, tzinfo=UTC)
        said = ChapterSummary(summary=f"第{n}章")
        return n, VersionRow(f"c{n}", 1, f"第{n}章", text, said, when, "u", "write")

    chapters = [row(1, CH1), row(2, CH2), row(3, CH3)]
    # judging chapter 3: chapters 1 and 2 are the story before it
    assert _story_state(BP, [c for c in chapters if c[0] != 3], [], 3).dead() == {
        "方敬之": "已死亡（第2章）"
    }
    # revising chapter 2: only chapter 1 came before; chapter 3's names are still known
    before_two = _story_state(BP, [c for c in chapters if c[0] != 2], [], 2)
    assert before_two.dead() == {} and before_two.chapters == 1
