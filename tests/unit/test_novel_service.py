"""The writers' room at the service seam: NovelService on real SQLite + Qdrant Edge, a scripted
model, deadlines on an injected clock (moved forward by the test, never slept on)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.presenters.novel import changes_decided
from novel import api
from novel.service import NovelService
from novel.summary import SUMMARY_SYSTEM
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMError
from tests.novel_room import ADMIN, SLOW, FakeClock, Room, fake_model, member


@pytest.fixture
async def room(tmp_path: Path) -> AsyncIterator[Room]:
    async with Room(tmp_path, ScriptedLLM([fake_model], repeat_last=True), SLOW) as r:
        yield r


async def test_whole_round_with_deadlines(tmp_path: Path) -> None:
    async with Room(tmp_path, ScriptedLLM([fake_model], repeat_last=True), SLOW) as room:
        s = room.service
        refused = await s.handle(member(1), api.NextRound())
        assert refused.is_error and "管理员" in refused.plain()
        opened = await s.handle(ADMIN, api.NextRound())
        assert not opened.is_error and "第 1 章" in opened.plain()
        for i, title in enumerate(["夜渡", "寻师", "古钟"], start=1):
            r = await s.handle(member(i), api.Propose(title, f"{title}的摘要", "多写环境"))
            assert not r.is_error, r.plain()
        updated = await s.handle(member(3), api.Propose("江心岛", "去江心岛"))
        assert "更新" in updated.plain()
        early = await s.handle(member(1), api.ChooseOption(1))
        assert early.is_error and "投票尚未开始" in early.plain()

        assert await room.fire(minutes=59) == []  # not yet
        assert len(await room.fire(minutes=1)) == 1
        target, ballot = await room.next_announcement()
        assert target.chat_id == "g1" and target.channel_id == "c1"
        assert ballot.poll is not None and ballot.poll.labels == ("夜渡", "寻师", "江心岛")
        round_id = ballot.poll.round_id
        assert [o.action for o in ballot.poll.options] == [
            f"vote:{round_id}:{i}" for i in (1, 2, 3)
        ]

        votes = await asyncio.gather(
            s.vote(member(1), 2, round_id),
            s.vote(member(2), 2, round_id),
            s.vote(member(3), 3, round_id),
            s.vote(member(4), 1, round_id),
        )
        assert not any(v.is_error for v in votes)
        changed = await s.vote(member(4), 3, round_id)
        assert "改投" in changed.plain() and "寻师 — 2 票" in changed.plain()
        stale = await s.vote(member(5), 1, "oldround")
        assert stale.is_error and "已经结束的一轮" in stale.plain()
        bad = await s.vote(member(5), 9, round_id)
        assert bad.is_error and "1–3" in bad.plain()

        # Tie 2:2 between 寻师 (earlier) and 江心岛 → the earliest wins, announced.
        await room.fire(minutes=60)
        result = await room.next_announcement()
        assert "胜出：《寻师》" in result[1].plain() and "平票" in result[1].plain()
        progress = await room.next_announcement()
        assert "正在写作第 1 章" in progress[1].plain()
        _, chapter = await room.next_announcement()
        assert not chapter.is_error, chapter.plain()
        assert "寻师这一夜" in chapter.plain() and "情节记忆" in chapter.plain()

        hits = await s.service.memory.search("g1", "寻师 林远 渡口")
        assert hits and hits[0].chapter_no == 1 and hits[0].title == "寻师"
        # The prompt carried the layers.
        write_prompt = next(q for q in room.llm.requests if q.system != SUMMARY_SYSTEM)  # type: ignore[union-attr]
        text = write_prompt.messages[0].content
        assert (
            "【世界设定（L1）】" in text and "【本章目标（L5）：第1章】" in text and "寻师" in text
        )

        shown = await s.handle(member(1), api.ShowChapter())
        assert "寻师" in shown.plain()
        md = await s.handle(member(2), api.Export("md"))
        assert md.attachments[0].data.decode().startswith("# 青岚渡")
        epub = await s.handle(member(2), api.Export("epub"))
        assert epub.attachments[0].data[:2] == b"PK"
        late = await s.vote(member(1), 1, round_id)
        assert late.is_error


async def test_deadline_fires_after_restart(tmp_path: Path) -> None:
    llm = ScriptedLLM([fake_model], repeat_last=True)
    clock = FakeClock()
    async with Room(tmp_path, llm, SLOW, clock) as room:
        await room.service.handle(ADMIN, api.NextRound())
        await room.service.handle(member(1), api.Propose("夜渡"))
        await room.service.handle(member(2), api.Propose("寻师"))
    clock.advance(minutes=90)  # the proposal deadline passes while the service is down
    async with Room(tmp_path, llm, SLOW, clock) as room:
        _, ballot = await room.next_announcement()  # fires at once on start-up
        assert ballot.poll is not None and ballot.poll.labels == ("夜渡", "寻师")
        # No votes → the earliest proposal wins.
        await room.fire(minutes=60)
        _, result = await room.next_announcement()
        assert "胜出：《夜渡》" in result.plain() and "无人投票" in result.plain()
        await room.wait_for(lambda r: "第 1 章" in r.plain() and "正在" not in r.plain())
        assert (await room.novel.repo.book.chapters("g1"))[0].title == "夜渡"


async def test_concurrency_one_round_many_votes(room: Room) -> None:
    s = room.service
    opened = await asyncio.gather(*(s.handle(ADMIN, api.NextRound()) for _ in range(5)))
    assert sum(not r.is_error for r in opened) == 1
    assert all("已有进行中的一轮" in r.plain() for r in opened if r.is_error)
    await s.handle(member(1), api.Propose("夜渡"))
    await s.handle(member(2), api.Propose("寻师"))
    ballot = await s.handle(ADMIN, api.CloseRound())
    assert ballot.poll is not None
    rid = ballot.poll.round_id
    replies = await asyncio.gather(*(s.vote(member(i), 1 + i % 2, rid) for i in range(40)))
    assert not any(r.is_error for r in replies)
    assert await s.service.repo.rounds.tally(rid) == {
        p.id: 20 for p in await s.service.repo.rounds.proposals(rid)
    }
    # Admin closes the vote early: result + chapter in one reply, progress streamed.
    seen: list[str] = []

    async def progress(text: str) -> None:
        seen.append(text)

    done = await s.handle(ADMIN, api.CloseRound(), progress)
    assert "胜出" in done.plain() and "第 1 章" in done.plain()
    assert seen and seen[0] == "正在写作第 1 章…"


async def test_empty_round_and_permissions(room: Room) -> None:
    s = room.service
    await s.handle(ADMIN, api.NextRound())
    assert (await s.handle(member(1), api.CloseRound())).is_error
    closed = await s.handle(ADMIN, api.CloseRound())
    assert "没有收到任何提议" in closed.plain() and closed.poll is None
    assert await s.service.repo.book.chapters("g1") == []
    assert (await s.handle(member(1), api.Propose("迟到"))).is_error
    for req in (
        api.ReviseChapter(1, text="x"),
        api.RollbackChapter(1, 1),
        api.DeleteChapter(),
        api.BlueprintEdit("title", "新"),
        api.BlueprintSet(b"{}"),
    ):
        r = await s.handle(member(1), req)
        assert r.is_error and "管理员" in r.plain(), req
    en = await s.handle(Actor("console", "g1", "u9", lang="en"), api.ShowChapter())
    assert en.is_error and "no chapters" in en.plain()


async def test_blueprint_files_and_edits(room: Room) -> None:
    s = room.service
    shown = await s.handle(member(1), api.BlueprintShow())
    assert "林远" in shown.plain() and shown.attachments[0].filename == "blueprint.json"
    original = shown.attachments[0].data
    cases = {
        b"{not json": "JSON 格式错误",
        "{}".encode("utf-16-le"): "UTF-8",
        b"\xb2\xe2\xca\xd4{": "UTF-8",
        b"[1, 2]": "JSON 对象",
        b'{"setting": "x"}': "title：缺少必填字段",
        b'{"title": 5}': "title：应为文字",
        '{"title": "t", "characters": [{"name": "甲", "traits": "x"}]}'.encode(): "characters.甲.traits：应为列表",
        b'{"title": "t", "bogus": 1}': "bogus：不是可识别的字段",
        b" " * 10: "空的",
        b"{" + b" " * 300_000 + b"}": "文件过大",
    }
    for data, expected in cases.items():
        r = await s.handle(ADMIN, api.BlueprintSet(data))
        assert r.is_error and expected in r.plain(), (data[:20], r.plain())
    after = await s.handle(member(1), api.BlueprintShow())
    assert after.attachments[0].data == original  # nothing half-saved

    ok = await s.handle(ADMIN, api.BlueprintEdit("characters.林远.status", "已死亡"))
    assert not ok.is_error, ok.plain()
    ok = await s.handle(ADMIN, api.BlueprintEdit("characters.阿远.traits", "沉稳，固执"))
    assert not ok.is_error
    data = json.loads((await s.handle(member(1), api.BlueprintShow())).attachments[0].data)
    lin = next(c for c in data["characters"] if c["name"] == "林远")
    assert lin["status"] == "已死亡" and lin["traits"] == ["沉稳", "固执"]
    for field, value, expected in [
        ("characters.无名.status", "x", "没有名为“无名”"),
        ("characters.林远.age", "3", "不是可识别的字段"),
        ("characters.林远.status", " ", "不能为空"),
        ("title", "", "不能为空"),
    ]:
        r = await s.handle(ADMIN, api.BlueprintEdit(field, value))
        assert r.is_error and expected in r.plain(), (field, r.plain())

    upload = json.dumps({"title": "新书", "characters": [{"name": "甲"}]}, ensure_ascii=False)
    r = await s.handle(ADMIN, api.BlueprintSet(upload.encode("utf-8-sig")))
    assert not r.is_error and "新书" in r.plain()


async def _write_chapters(s: NovelService, titles: list[str]) -> None:
    for t in titles:
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose(t))
        await s.handle(ADMIN, api.CloseRound())
        r = await s.handle(ADMIN, api.CloseRound())
        assert not r.is_error, r.plain()


async def _titles(s: NovelService, query: str) -> set[tuple[int, int, str]]:
    return {
        (h.chapter_no, h.version, h.title)
        for h in await s.service.memory.search("g1", query, limit=50)
    }


async def test_revise_rollback_delete_history(room: Room) -> None:
    s = room.service
    await _write_chapters(s, ["夜渡", "寻师", "古钟"])
    up = await s.handle(
        ADMIN, api.ReviseChapter(2, text="寻师之后，" + "苏晴独自留在渡口等消息。" * 60)
    )
    assert "第 2 版" in up.plain(), up.plain()
    regen = await s.handle(ADMIN, api.ReviseChapter(2, "让结尾更有悬念"))
    assert "第 3 版" in regen.plain()
    hist = await s.handle(member(1), api.ChapterHistory(2))
    lines = hist.plain()
    assert "v1" in lines and "v2" in lines and "v3" in lines and "← 当前" in lines
    assert "上传文本" in lines and "让结尾更有悬念" in lines
    chunks = await s.service.memory.chunks_of("g1", (await s.service.repo.book.chapter("g1", 2)).id)  # type: ignore[union-attr]
    assert {c.extra["version"] for c in chunks} == {3}

    rb = await s.handle(ADMIN, api.RollbackChapter(2, 2))
    assert "回滚到第 2 版" in rb.plain()
    hits = await s.service.memory.search("g1", "苏晴独自留在渡口等消息", limit=50)
    assert any(h.chapter_no == 2 and h.version == 2 for h in hits)
    assert all(h.version == 1 for h in hits if h.chapter_no != 2)
    assert (await s.handle(ADMIN, api.RollbackChapter(2, 9))).is_error

    need = await s.handle(ADMIN, api.DeleteChapter(1))
    assert need.is_error and "confirm" in need.plain()
    gone = await s.handle(ADMIN, api.DeleteChapter(1, confirm=True))
    assert "重新编号" in gone.plain()
    seen = await _titles(s, "夜渡 寻师 古钟 林远 渡口")
    assert {t for _, _, t in seen} == {"寻师", "古钟"}
    assert (1, 2, "寻师") in seen and (2, 1, "古钟") in seen
    last = await s.handle(ADMIN, api.DeleteChapter())
    assert "已删除第 2 章" in last.plain()
    assert {t for _, _, t in await _titles(s, "夜渡 寻师 古钟 林远")} == {"寻师"}


async def test_generation_failure_saves_nothing_and_retries(tmp_path: Path) -> None:
    llm = ScriptedLLM([LLMError("timeout", "slow")])
    async with Room(tmp_path, llm, SLOW) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("夜渡"))
        await s.handle(ADMIN, api.CloseRound())
        failed = await s.handle(ADMIN, api.CloseRound())
        assert (
            failed.is_error
            and "没有保存任何内容" in failed.plain()
            and "/chapter next" in failed.plain()
        )
        assert await s.service.repo.book.chapters("g1") == []
        assert await room.store.count() == 0
        llm.push(fake_model)
        retry = await s.handle(ADMIN, api.NextRound())
        assert not retry.is_error and "夜渡这一夜" in retry.plain()
        assert len(await s.service.repo.book.chapters("g1")) == 1


async def test_without_model_pending_then_upload(tmp_path: Path) -> None:
    async with Room(tmp_path, None, SLOW) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("夜渡"))
        await s.handle(ADMIN, api.CloseRound())
        r = await s.handle(ADMIN, api.CloseRound())
        # Issue 12: the result is no longer an error (the group can submit the chapter).
        assert not r.is_error and "ANTHROPIC_API_KEY" in r.plain() and "已保存" in r.plain()
        again = await s.handle(ADMIN, api.NextRound())
        assert again.is_error and "LLM_BASE_URL" in again.plain()
        abandoned = await s.handle(ADMIN, api.CloseRound())
        assert "放弃" in abandoned.plain()
        assert not (await s.handle(ADMIN, api.NextRound())).is_error


async def test_one_generation_at_a_time(tmp_path: Path) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    class SlowLLM(ScriptedLLM):
        async def complete(self, request, on_delta=None):  # type: ignore[no-untyped-def]
            if request.system != SUMMARY_SYSTEM:
                started.set()
                await gate.wait()
            return await super().complete(request, on_delta)

    async with Room(tmp_path, SlowLLM([fake_model], repeat_last=True)) as room:
        s = room.service
        await _write_chapters(s, [])
        gate.set()
        await _write_chapters(s, ["夜渡"])
        gate.clear()
        started.clear()
        task = asyncio.create_task(s.handle(ADMIN, api.ReviseChapter(1, "更紧张")))
        await started.wait()
        busy = await s.handle(ADMIN, api.ReviseChapter(1, text="另一个版本的正文。"))
        assert busy.is_error and "正在写作中，请稍候" in busy.plain()
        gate.set()
        assert "第 2 版" in (await task).plain()


def test_only_the_presenter_builds_replies() -> None:
    """The services return typed results; no Reply of the writers' room is built in novel/
    (bot/presenters/novel.py builds them all)."""
    import ast

    root = Path(__file__).resolve().parents[2] / "novel"
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        built = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "Reply")
                or (
                    isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "Reply"
                )
            )
        ]
        assert not built, (path.name, built)


async def test_a_change_that_no_longer_applies_is_worded_by_the_presenter(tmp_path: Path) -> None:
    """WorldService.decide returns why a change was skipped (the error itself); the presenter
    says it in the reader's language."""
    from novel.blueprint import default_blueprint

    async with Room(tmp_path, None, SLOW) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("夜渡"))
        await s.handle(ADMIN, api.CloseRound())
        await s.handle(ADMIN, api.CloseRound())
        text = "霍三死了。一个名叫钱七的老船夫说：“漕帮今夜要封江。”钱七解开缆绳。"
        assert not (await s.handle(member(1), api.SubmitChapter(text))).is_error
        newcomer = next(
            c for c in await room.repo.world.pending_changes("g1") if c.kind == "character"
        )
        # meanwhile an admin adds the newcomer by hand: the proposal no longer applies
        bp = default_blueprint().model_dump()
        bp["characters"].append({"name": newcomer.payload["name"], "description": "老船夫"})
        uploaded = await s.handle(ADMIN, api.BlueprintSet(json.dumps(bp).encode()))
        assert not uploaded.is_error, uploaded.plain()
        decided = await s.service.world.decide(ADMIN, (newcomer.id,), True)
        assert [c.id for c, _ in decided.skipped] == [newcomer.id]
        zh = changes_decided(decided, ADMIN).plain()
        en = changes_decided(decided, dataclasses.replace(ADMIN, lang="en")).plain()
        assert f"未能应用 #{newcomer.id}：人物“钱七”已在世界设定中" in zh, zh
        assert f"Could not apply #{newcomer.id}: “钱七” is already in the blueprint" in en, en
