"""Chapters on the real stack: a human relay with no model (/chapter submit), failures while
saving, revise edge cases, rollback/export edge cases, the consistency check after every
chapter, blueprint proposals with accept/reject and history, L3 summaries by similarity."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from bot.actor import Actor
from novel import api
from novel.consistency import JUDGE_SYSTEM
from novel.settings import NovelSettings
from novel.summary import SUMMARY_SYSTEM
from novel.writer import Goal
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import DenseAndSparseQuery, LLMError, LLMRequest
from retrieval.store.edge import EdgeStore
from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector
from tests.novel_room import ADMIN, Room, fake_model, member

MEMBERS_OPEN = NovelSettings(openers="members", proposal_minutes=60, vote_minutes=60)

RELAY = (
    "夜色沉沉，林远提着灯走到青岚渡口。江风很冷，苏晴在船头举着灯笼，等他上船。\n\n"
    "霍三死了。消息是一个名叫钱七的老船夫带来的，钱七说：“漕帮今夜要封江。”\n\n"
    "林远解开缆绳，小船慢慢离开了渡口。"
)


async def _winner_pending(room: Room, opener: Actor, title: str = "夜渡") -> None:
    s = room.service
    assert not (await s.handle(opener, api.NextRound())).is_error
    assert not (await s.handle(member(1), api.Propose(title, "林远夜里渡江"))).is_error
    assert (await s.handle(ADMIN, api.CloseRound())).poll is not None
    closed = await s.handle(ADMIN, api.CloseRound())
    assert "胜出" in closed.plain(), closed.plain()


async def test_no_model_says_so_at_once_and_members_submit_the_chapter(tmp_path: Path) -> None:
    async with Room(tmp_path, None, MEMBERS_OPEN) as room:
        s = room.service
        opened = await s.handle(member(2), api.NextRound())
        assert not opened.is_error and "没有可用的语言模型" in opened.plain()
        assert "/chapter submit" in opened.plain()
        assert "API_KEY" not in opened.plain()  # members get a plain sentence
        await s.handle(member(1), api.Propose("夜渡", "林远夜里渡江"))
        await s.handle(ADMIN, api.CloseRound())
        closed = await s.handle(ADMIN, api.CloseRound())
        assert "胜出：《夜渡》" in closed.plain() and "/chapter submit" in closed.plain()
        assert "LLM_BASE_URL" in closed.plain()  # the admin also sees the setting to fix

        early = await s.handle(member(1), api.SubmitChapter(RELAY))
        assert not early.is_error  # the winner's author may submit
        again = await s.handle(member(1), api.SubmitChapter(RELAY))
        assert again.is_error and "没有等待正文的一轮" in again.plain()
        assert "已收到第 1 章正文" in early.plain() and "情节记忆" in early.plain()
        # indexed, summarised extractively, tagged — exactly like a generated chapter
        [(number, version)] = await room.repo.book.current_versions("g1")
        assert number == 1 and version.summary.extractive is True
        assert "钱七" in version.summary.characters
        chunks = await s.service.memory.chunks_of("g1", version.chapter_id)
        assert chunks and {"林远", "苏晴"} <= {t for c in chunks for t in c.extra["tags"]}
        [l3] = await s.service.memory.summaries("g1", "夜渡 林远 钱七")
        assert l3.chapter_no == 1 and "夜渡" in l3.text
        # the blueprint follows the story: proposals from the chapter
        assert "世界设定更新建议" in early.plain()
        assert "霍三：状态 存活 → 已死亡" in early.plain() and "新人物：钱七" in early.plain()


async def test_admin_opens_without_model_and_sees_the_setting(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        opened = await room.service.handle(ADMIN, api.NextRound())
        assert "没有可用的语言模型" in opened.plain() and "ANTHROPIC_API_KEY" in opened.plain()


async def test_submit_rules(tmp_path: Path) -> None:
    settings = NovelSettings(proposal_minutes=60, vote_minutes=60, max_upload_chars=500)
    async with Room(tmp_path, None, settings) as room:
        s = room.service
        none = await s.handle(member(1), api.SubmitChapter("正文"))
        assert none.is_error and "没有等待正文的一轮" in none.plain()
        await s.handle(ADMIN, api.NextRound())
        not_yet = await s.handle(ADMIN, api.SubmitChapter("正文"))
        assert not_yet.is_error and "还没有结束投票" in not_yet.plain()
        await s.handle(member(1), api.Propose("夜渡"))
        await s.handle(ADMIN, api.CloseRound())
        await s.handle(ADMIN, api.CloseRound())
        stranger = await s.handle(member(7), api.SubmitChapter("正文"))
        assert stranger.is_error and "成员1" in stranger.plain()
        empty = await s.handle(member(1), api.SubmitChapter(" \n "))
        assert empty.is_error and "空的" in empty.plain()
        long = await s.handle(member(1), api.SubmitChapter("字" * 501))
        assert long.is_error and "501" in long.plain() and "500" in long.plain()
        assert await room.repo.book.chapters("g1") == []
        by_admin = await s.handle(ADMIN, api.SubmitChapter("林远过江。"))
        assert not by_admin.is_error


class Flaky:
    """The real store, failing the next `fail` calls of one method (a disk or network fault
    while saving — not a model error)."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner = inner
        self.fail = 0

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        if self.fail:
            self.fail -= 1
            raise OSError("disk full")
        await self.inner.upsert(items)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_a_non_llm_failure_while_saving_saves_nothing(tmp_path: Path) -> None:
    flaky: list[Flaky] = []

    def wrap(store: EdgeStore) -> Flaky:
        flaky.append(Flaky(store))
        return flaky[-1]

    llm = ScriptedLLM([fake_model], repeat_last=True)
    async with Room(tmp_path, llm, store_wrapper=wrap) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("夜渡"))
        await s.handle(ADMIN, api.CloseRound())
        flaky[0].fail = 1
        failed = await s.handle(ADMIN, api.CloseRound())
        assert failed.is_error and "写作或保存失败，没有保存任何内容" in failed.plain()
        assert await room.repo.book.chapters("g1") == [] and await room.store.count() == 0
        assert (await room.repo.rounds.open_round("g1")).phase == "pending"  # type: ignore[union-attr]
        retry = await s.handle(ADMIN, api.NextRound())
        assert not retry.is_error and "夜渡这一夜" in retry.plain()
        # a submitted text that fails to save is also kept out, and the round waits again
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("寻师"))
        await s.handle(ADMIN, api.CloseRound())
        llm.push(LLMError("timeout"))
        await s.handle(ADMIN, api.CloseRound())
        flaky[0].fail = 1
        lost = await s.handle(member(1), api.SubmitChapter("寻师之夜。"))
        assert lost.is_error and "保存失败" in lost.plain()
        assert len(await room.repo.book.chapters("g1")) == 1
        assert not (await s.handle(member(1), api.SubmitChapter("寻师之夜。"))).is_error


class FailingStore:
    """The real store behind the VectorStore protocol, failing the next `fail[method]` calls
    of a method with a disk error (a store fault while saving — not a model error)."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner = inner
        self.fail: dict[str, int] = {}

    def _trip(self, method: str) -> None:
        if self.fail.get(method):
            self.fail[method] -= 1
            raise OSError(f"disk full ({method})")

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        self._trip("upsert")
        await self.inner.upsert(items)

    async def delete(self, flt: Filter) -> None:
        self._trip("delete")
        await self.inner.delete(flt)

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        self._trip("set_extra")
        await self.inner.set_extra(flt, values)

    async def search_dense(
        self, vector: Sequence[float], *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        return await self.inner.search_dense(vector, flt=flt, limit=limit)

    async def search_sparse(
        self, query: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        return await self.inner.search_sparse(query, flt=flt, limit=limit)

    async def optimize(self) -> bool:
        return await self.inner.optimize()

    async def search_dense_and_sparse(
        self, query: DenseAndSparseQuery
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        return await self.inner.search_dense_and_sparse(query)

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        return await self.inner.scroll(flt, limit=limit, fields=fields)

    async def count(self, flt: Filter | None = None) -> int:
        return await self.inner.count(flt)

    async def close(self) -> None:
        await self.inner.close()


async def test_a_store_failure_while_saving_a_revision_keeps_the_current_version(
    tmp_path: Path,
) -> None:
    """A disk fault at any store step of a revision (hidden upsert, activation after the
    SQLite flip, deleting the old chunks) leaves version 1 current, whole and retrievable."""
    stores: list[FailingStore] = []

    def wrap(store: EdgeStore) -> FailingStore:
        stores.append(FailingStore(store))
        return stores[-1]

    english = Actor("console", "g1", "admin", "Admin", channel_id="c1", is_admin=True, lang="en")
    async with Room(tmp_path, None, MEMBERS_OPEN, store_wrapper=wrap) as room:
        s = room.service
        await _winner_pending(room, ADMIN)
        assert not (await s.handle(member(1), api.SubmitChapter(RELAY))).is_error
        chapter = await room.repo.book.chapter("g1", 1)
        assert chapter is not None
        stored = await room.store.scroll(limit=1000)
        assert stored and {c.extra["version"] for c in stored} == {1}

        for step, who in (("upsert", ADMIN), ("set_extra", english), ("delete", ADMIN)):
            stores[0].fail = {step: 1}
            failed = await s.handle(who, api.ReviseChapter(1, text="林远没有过江。"))
            assert failed.is_error, (step, failed.plain())
            if who is english:
                assert "Saving failed; chapter 1 is unchanged" in failed.plain()
                assert "version 1 is still current" in failed.plain()
            else:
                assert "保存失败，第 1 章没有改动，当前仍是第 1 版" in failed.plain(), step
            assert stores[0].fail == {step: 0}, step  # the fault was hit
            # SQLite: version 1 is current and the failed version is gone
            assert [v.version for v in await room.repo.book.versions(chapter.id)] == [1], step
            assert (await room.repo.book.current_map("g1"))[chapter.id] == (1, 1), step
            shown = await s.handle(member(2), api.ShowChapter(1))
            assert "霍三死了" in shown.plain() and "林远没有过江" not in shown.plain()
            # the store: only version 1's chunks, all current, and retrievable
            after = await room.store.scroll(limit=1000)
            assert len(after) == len(stored), step
            assert {(c.extra["version"], c.extra["current"]) for c in after} == {(1, True)}
            hits = await s.service.memory.search("g1", "钱七 漕帮 封江")
            assert hits and all(h.version == 1 for h in hits), step
            assert any("钱七" in h.text for h in hits), step

        ok = await s.handle(ADMIN, api.ReviseChapter(1, text="林远没有过江，钱七独自回了漕帮。"))
        assert not ok.is_error and "第 2 版" in ok.plain(), ok.plain()
        assert (await room.repo.book.current_map("g1"))[chapter.id] == (1, 2)
        after = await room.store.scroll(limit=1000)
        assert {(c.extra["version"], c.extra["current"]) for c in after} == {(2, True)}


async def test_revise_edge_cases(tmp_path: Path) -> None:
    settings = NovelSettings(proposal_minutes=60, vote_minutes=60, max_upload_chars=1000)
    llm = ScriptedLLM([fake_model], repeat_last=True)
    async with Room(tmp_path, llm, settings) as room:
        s = room.service
        await _winner_pending(room, ADMIN)
        assert len(await room.repo.book.chapters("g1")) == 1
        empty = await s.handle(ADMIN, api.ReviseChapter(1, text="   \n"))
        assert empty.is_error and "上传的文本是空的" in empty.plain()
        long = await s.handle(ADMIN, api.ReviseChapter(1, text="字" * 1001))
        assert long.is_error and "1001" in long.plain() and "1000" in long.plain()
        llm.push(LLMError("rate_limited", "429"))
        failed = await s.handle(ADMIN, api.ReviseChapter(1, "更紧张"))
        assert (
            failed.is_error
            and "写作失败" in failed.plain()
            and "没有保存任何内容" in failed.plain()
        )
        missing = await s.handle(ADMIN, api.ReviseChapter(5, "x"))
        assert missing.is_error and "没有第 5 章" in missing.plain()
        versions = await room.repo.book.versions((await room.repo.book.chapter("g1", 1)).id)  # type: ignore[union-attr]
        assert [v.version for v in versions] == [1]
    async with Room(tmp_path, None, settings) as room:
        no_model = await room.service.handle(ADMIN, api.ReviseChapter(1, "更紧张"))
        assert no_model.is_error and "上传文本修订仍可使用" in no_model.plain()
        # the admin sees the settings to fix, once
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LLM_BASE_URL"):
            assert no_model.plain().count(name) == 1, no_model.plain()
        admin_en = Actor(
            "console", "g1", "admin", "Admin", channel_id="c1", is_admin=True, lang="en"
        )
        en = (await room.service.handle(admin_en, api.ReviseChapter(1, "tenser"))).plain()
        assert "uploading a text still works" in en and en.count("ANTHROPIC_API_KEY") == 1, en


async def test_rollback_to_current_and_export_edge_cases(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        s = room.service
        nothing = await s.handle(member(1), api.Export("md"))
        assert nothing.is_error and "还没有任何章节" in nothing.plain()
        bad = await s.handle(member(1), api.Export("pdf"))
        assert bad.is_error and "pdf" in bad.plain() and "md 或 epub" in bad.plain()
        await _winner_pending(room, ADMIN)
        await s.handle(member(1), api.SubmitChapter("林远过江。"))
        current = await s.handle(ADMIN, api.RollbackChapter(1, 1))
        assert current.is_error and "已经是当前版本" in current.plain()
        md = await s.handle(member(2), api.Export("MD"))
        assert not md.is_error and md.attachments[0].filename.endswith(".md")


async def test_consistency_findings_after_submitted_revised_and_generated_chapters(
    tmp_path: Path,
) -> None:
    def model(request: LLMRequest) -> str:
        if request.system == JUDGE_SYSTEM:
            return json.dumps(
                {
                    "findings": [
                        {
                            "class": "timeline",
                            "quote": "第三天清晨，林远才出发。",
                            "rule": "上一章说他当夜就出发了",
                            "fix": "把出发时间改回当夜",
                        },
                        {"class": "facts", "quote": "这句话不在正文里", "rule": "捏造"},
                    ]
                },
                ensure_ascii=False,
            )
        return fake_model(request)

    async with Room(tmp_path, None) as room:
        s = room.service
        await s.handle(ADMIN, api.BlueprintEdit("characters.沈默.status", "已死亡"))
        await _winner_pending(room, ADMIN)
        text = "沈默站在船头，冷冷地说：“你来晚了。”林远没有回答。"
        saved = await s.handle(member(1), api.SubmitChapter(text))
        plain = saved.plain()
        assert "一致性检查：发现 1 处可能的问题" in plain
        assert "沈默站在船头" in plain and "“已死亡”" in plain
        assert "/chapter revise 1 沈默在世界设定中是“已死亡”，不能再行动或说话" in plain
        quote = next(b for b in saved.blocks if b.kind == "quote")
        assert quote.text.startswith("沈默站在船头")
        revised = await s.handle(ADMIN, api.ReviseChapter(1, text="林远独自撑船过江。"))
        assert "一致性检查：未发现问题" in revised.plain()

    def chapter(request: LLMRequest) -> str:
        if request.system in (JUDGE_SYSTEM, SUMMARY_SYSTEM):
            return model(request)
        return "夜里下起了雨。\n\n第三天清晨，林远才出发。"

    async with Room(tmp_path, ScriptedLLM([chapter], repeat_last=True)) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        await s.handle(member(1), api.Propose("第三天"))
        await s.handle(ADMIN, api.CloseRound())
        written = await s.handle(ADMIN, api.CloseRound())
        plain = written.plain()
        assert "第三天清晨，林远才出发。" in plain and "时间线" in plain
        assert "/chapter revise 2 把出发时间改回当夜" in plain
        assert "这句话不在正文里" not in plain  # an unverifiable quote is never shown


async def test_blueprint_changes_accept_reject_and_history(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        s = room.service
        await _winner_pending(room, ADMIN)
        await s.handle(member(1), api.SubmitChapter(RELAY))
        shown = await s.handle(member(2), api.BlueprintShow())
        assert "待处理的更新建议" in shown.plain()
        pending = await room.repo.world.pending_changes("g1")
        kinds = {(c.kind, c.payload["name"]) for c in pending}
        assert ("status", "霍三") in kinds and ("character", "钱七") in kinds
        status = next(c for c in pending if c.kind == "status")
        newcomer = next(c for c in pending if c.kind == "character")
        refused = await s.handle(member(2), api.BlueprintAccept((status.id,)))
        assert refused.is_error and "管理员" in refused.plain()
        unknown = await s.handle(ADMIN, api.BlueprintAccept((999,)))
        assert unknown.is_error and "999" in unknown.plain()
        ok = await s.handle(ADMIN, api.BlueprintAccept((status.id,)))
        assert not ok.is_error and "霍三：状态 存活 → 已死亡" in ok.plain()
        no = await s.handle(ADMIN, api.BlueprintReject((newcomer.id,)))
        assert "已拒绝" in no.plain() and "钱七" in no.plain()
        bp = json.loads((await s.handle(member(1), api.BlueprintShow())).attachments[0].data)
        huo = next(c for c in bp["characters"] if c["name"] == "霍三")
        assert huo["status"] == "已死亡"
        assert all(c["name"] != "钱七" for c in bp["characters"])
        none_left = await s.handle(ADMIN, api.BlueprintAccept())
        assert none_left.is_error and "没有待处理" in none_left.plain()
        history = await s.handle(member(1), api.BlueprintHistory())
        assert "已接受" in history.plain() and "admin" in history.plain()
        # rejected proposals are kept too, with their status
        assert "设定更新建议的处理记录" in history.plain()
        assert f"已拒绝 · #{newcomer.id} 新人物：钱七" in history.plain(), history.plain()
        assert f"已接受 · #{status.id} 霍三：状态 存活 → 已死亡" in history.plain()
        en = Actor("console", "g1", "u1", "Reader", channel_id="c1", lang="en")
        english = (await s.handle(en, api.BlueprintHistory())).plain()
        assert "Decided blueprint updates" in english
        assert f"rejected · #{newcomer.id} new character: 钱七" in english, english
        assert f"accepted · #{status.id} 霍三: status 存活 → 已死亡" in english
        # the next chapter is checked against the updated blueprint: 霍三 is dead now
        await _winner_pending(room, ADMIN, "封江")
        ghost = await s.handle(member(1), api.SubmitChapter("霍三推开门，大声说：“谁敢拦我？”"))
        assert "霍三推开门" in ghost.plain() and "一致性检查" in ghost.plain()


async def test_l3_summaries_by_similarity_with_the_previous_chapter_always_in(
    tmp_path: Path,
) -> None:
    async with Room(tmp_path, None, MEMBERS_OPEN) as room:
        s = room.service
        for n in range(1, 13):
            await _winner_pending(room, ADMIN, f"第{n}回")
            body = (
                "林远在旧货摊上买下一只青铜罗盘，指针总指向江心岛。"
                if n == 3
                else f"第{n}回里，苏晴在渡口晒药，江面平静。"
            )
            assert not (await s.handle(ADMIN, api.SubmitChapter(body))).is_error
        bp = await s.service.chapters.blueprint("g1")
        ctx = await s.service.chapters.context(
            "g1", bp, Goal("罗盘", "林远取出青铜罗盘寻找江心岛"), None
        )
        assert ctx.number == 13
        assert 3 in [p.number for p in ctx.summaries]  # the callback, 10 chapters back
        assert 12 not in [p.number for p in ctx.summaries]  # the previous one is in L4
        assert ctx.previous_summary is not None and "第12回" in str(ctx.previous_summary)
        assert 3 <= len(ctx.summaries) <= 5
        assert any("青铜罗盘" in h.text for h in ctx.plot)
