"""`/novel characters | recap | map` in the domain (`novel.cast`) and their wording
(`bot.presenters.cast`): the story state read for members, on the real stack (SQLite + Qdrant
Edge) where storage is touched. Every text here was written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.presenters.cast import COLOURS, cast_reply, map_drawing, map_reply, recap_reply
from novel.blueprint import Blueprint, Character, default_blueprint
from novel.cast import (
    MAP_NODES,
    RECAP_MAX,
    CastMap,
    CastMember,
    CastView,
    Recap,
    appearances,
    cast_of,
    map_of,
)
from novel.story_state import StoryState, replay
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMError
from tests.novel_room import Room
from tests.story_seed import CHAPTERS, seed

CHAT = "g1"
PNG = b"\x89PNG\r\n\x1a\n"


def _cast() -> tuple[StoryState, list[frozenset[str]], tuple[CastMember, ...]]:
    texts = [t for _, t in CHAPTERS]
    state = replay(default_blueprint(), texts)
    seen = appearances(state, texts)
    return state, seen, cast_of(state, seen)


def test_the_cast_carries_status_sentence_and_last_place_forward() -> None:
    _, _, members = _cast()
    by = {m.name: m for m in members}
    assert [m.name for m in members][:4] == ["林远", "苏晴", "沈默", "霍三"]
    lin = by["林远"]
    assert lin.standing == "hurt" and lin.status.chapter == 2
    assert lin.status.sentence == "霍三的人追上来，一刀砍在林远的左臂上。"
    assert (lin.seen.place, lin.seen.chapter) == ("听潮阁", 3)
    qian = by["钱七"]
    assert (qian.standing, qian.status.chapter, qian.status.sentence) == ("dead", 3, "钱七死了。")
    assert qian.introduced == 1 and qian.appearances == 3
    # the blueprint says 沈默 is missing; chapter 3 places him: found
    shen = by["沈默"]
    assert shen.blueprint_status == "失踪" and shen.standing == "alive" and shen.seen.chapter == 3
    huo = by["霍三"]
    assert huo.seen is None and huo.home == "漕帮总舵" and huo.standing == "alive"


def test_the_map_joins_relationships_and_shared_chapters() -> None:
    state, seen, members = _cast()
    nodes, edges, left_out = map_of(state, members, seen)
    assert left_out == 0 and len(nodes) == 5
    by = {(e.a, e.b): e for e in edges}
    assert (by[("林远", "苏晴")].relation, by[("林远", "苏晴")].shared) == ("同伴", 3)
    assert (by[("沈默", "霍三")].relation, by[("沈默", "霍三")].shared) == ("旧怨", 0)
    assert (by[("林远", "钱七")].relation, by[("林远", "钱七")].shared) == ("", 3)
    assert nodes[0].name == "林远"  # the most present first, blueprint order on ties
    drawn, lines = map_drawing(CastMap("青岚渡", 3, nodes, edges), "zh")
    colour = {n.id: n.colour for n in drawn}
    assert colour["林远"] == COLOURS["hurt"] and colour["钱七"] == COLOURS["dead"]
    assert colour["苏晴"] == COLOURS["alive"] and len(set(COLOURS.values())) == 4
    width = {(e.src, e.dst): (e.width, e.relation) for e in lines}
    assert width[("林远", "苏晴")] == (pytest.approx(2.8), "同伴 · 同场 3 章")
    assert width[("沈默", "霍三")] == (pytest.approx(1.0), "旧怨")


def test_a_big_cast_is_cut_to_the_most_present() -> None:
    names = [f"角色{chr(0x4E00 + i)}{chr(0x4E80 + i)}" for i in range(MAP_NODES + 5)]
    bp = Blueprint(title="大", characters=[Character(name=n) for n in names])
    texts = ["，".join(names[:10]) + "。", "，".join(names) + "。"]
    state = replay(bp, texts)
    seen = appearances(state, texts)
    nodes, _, left_out = map_of(state, cast_of(state, seen), seen)
    assert len(nodes) == MAP_NODES and left_out == 5
    assert [n.name for n in nodes[:10]] == names[:10]


async def test_no_chapters_and_no_characters_are_said_plainly() -> None:
    empty = CastView("空", 0, ())
    assert "还没有任何人物" in cast_reply(empty, "zh").plain()
    assert "No characters yet" in cast_reply(empty, "en").plain()
    assert "还没有任何章节" in recap_reply(Recap("空", 3, 0, ()), "zh").plain()
    nothing = await map_reply(CastMap("空", 0, (), ()), "en")
    assert "No characters to draw" in nothing.plain() and not nothing.attachments


async def test_service_reads_the_stored_chapters_and_recomputes_after_delete(
    tmp_path: Path,
) -> None:
    async with Room(tmp_path, None) as room:
        story = room.story
        assert (await story.recap(CHAT, 3)).chapters == ()
        await seed(room.repo, room.novel.memory, CHAT)
        view = await story.cast(CHAT)
        assert view.chapters == 3
        text = cast_reply(view, "zh").plain()
        assert "状态：已死亡（第 3 章）「钱七死了。」" in text
        assert "最后出现：听潮阁（第 3 章）「林远在听潮阁里见到了沈默。」" in text
        recap = await story.recap(CHAT, 2)
        assert [c.number for c in recap.chapters] == [2, 3] and recap.source == "extractive"
        assert all(c.lines and not c.written for c in recap.chapters)
        shown = recap_reply(recap, "zh").plain()
        assert "前情提要：第 2–3 章" in shown and "摘自各章摘要" in shown
        more = recap_reply(await story.recap(CHAT, RECAP_MAX), "en").plain()
        assert "Previously: chapters 1–3" in more and "only 3 chapter(s)" in more
        with pytest.raises(ValueError):
            await story.recap(CHAT, 0)
        picture = await map_reply(await story.cast_map(CHAT), "zh")
        assert picture.attachments[0].data.startswith(PNG)
        assert (
            "林远：受伤" in picture.plain() and "林远 — 苏晴：同伴 · 同场 3 章" in picture.plain()
        )
        # delete the last chapter: 钱七 did not die after all
        admin = Actor("console", CHAT, "admin", "管理员", is_admin=True)
        await room.novel.chapters.delete(admin, None, False)
        qian = next(m for m in (await story.cast(CHAT)).members if m.name == "钱七")
        assert qian.standing == "alive" and qian.seen is not None and qian.seen.chapter == 2
        # the last reading is kept until anything it was read from changes: a blueprint edit
        assert await story.cast(CHAT) == await story.cast(CHAT)
        await room.novel.world.edit(admin, "characters.霍三.status", "已死亡", "edit")
        huo = next(m for m in (await story.cast(CHAT)).members if m.name == "霍三")
        assert huo.standing == "dead" and huo.blueprint_status == "已死亡"


def _lines(**by_chapter: list[str]) -> str:
    chapters = [{"number": int(n[1:]), "lines": lines} for n, lines in by_chapter.items()]
    return "好的：\n```json\n" + json.dumps({"chapters": chapters}, ensure_ascii=False) + "\n```"


async def test_a_written_recap_names_only_who_the_story_knows(tmp_path: Path) -> None:
    """The rule: a chapter whose written lines name someone the story state does not know is
    shown from its summary, and the names are reported."""
    llm = ScriptedLLM(
        [
            _lines(
                c2=["林远和苏晴上了江心岛，林远被霍三的人砍伤。"],
                c3=["钱七死了。王大锤冲进听潮阁，拔刀就砍。"],
            ),
            LLMError("unavailable"),
            "不是 JSON",
        ]
    )
    async with Room(tmp_path, llm) as room:
        await seed(room.repo, room.novel.memory, CHAT)
        recap = await room.story.recap(CHAT, 2)
        two, three = recap.chapters
        assert recap.source == "model"
        assert two.written and two.lines == ("林远和苏晴上了江心岛，林远被霍三的人砍伤。",)
        assert not three.written and three.unknown == ("王大锤",)
        assert "王大锤" not in "".join(three.lines)
        shown = recap_reply(recap, "zh").plain()
        assert "由模型根据各章摘要撰写" in shown
        assert "第 3 章：模型写到了故事中没有的人物（王大锤）" in shown
        prompt = llm.requests[0].messages[-1].content
        assert "人物表：" in prompt and "钱七" in prompt and "第3章《听潮》" in prompt
        for _ in range(2):  # a model error, then an answer that is not JSON
            failed = await room.story.recap(CHAT, 3)
            assert failed.source == "model_failed" and not any(c.written for c in failed.chapters)
            assert "改为摘自各章摘要" in recap_reply(failed, "zh").plain()


def test_a_summary_s_status_keeps_the_chapter_s_sentence_and_never_quotes_nothing() -> None:
    """A model (or extractive) summary reporting 受伤 adds no empty quote: a wound the chapters
    already told keeps its sentence, and one only a summary reports is said to be from it."""
    state, seen, _ = _cast()
    told = state.character("林远")
    assert told is not None and told.status is not None
    again = state.noting("林远", "hurt", state.chapters)
    assert again.character("林远") == told  # the sentence that told it stays
    reported = state.noting("苏晴", "hurt", state.chapters)
    member = {m.name: m for m in cast_of(reported, seen)}["苏晴"]
    assert member.status is not None and member.status.sentence == ""
    text = cast_reply(CastView("青岚渡", state.chapters, (member,)), "zh").plain()
    assert f"状态：受伤（第 {state.chapters} 章，据本章摘要）" in text and "「」" not in text
