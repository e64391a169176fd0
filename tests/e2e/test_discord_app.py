"""The whole product through Discord as people use it, judged by SimCord (`tests/discord_sim.py`):
`DiscordTransport`'s own client, unmodified, in SimCord's in-memory Discord, over the real `App`
(Qdrant Edge, SQLite, jieba BM25, the graph, the bundled sample corpus; the hash embedder), with
the model through the real OpenAI SDK adapter against the loopback model server.

Time is SimCord's virtual clock everywhere: the streaming editor's throttle, the ballot editor,
the rate limiter and the round deadlines wait until a test calls `env.advance_time`, and a
model's answer takes virtual time (`VirtualTime.elapse`), so an interaction acknowledged only
after the work would miss Discord's 3-second window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import simcord

from bot.app import App
from bot.transports.discord import DiscordTransport
from retrieval.clock import Clock
from retrieval.fakes import HashEmbedder
from tests.discord_sim import (
    DIM,
    Server,
    VirtualTime,
    answer_text,
    app_settings,
    buttons,
    discord_app,
    simulated,
)
from tests.stubs.fixtures import llm_settings
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_stream

PNG = b"\x89PNG\r\n\x1a\n"
QUESTION = "神圣分赐与召会有什么关系？"
MODEL_TAKES_S = 5.0  # a model's answer, in virtual seconds: longer than the 3-s window


def acknowledgements(server: Server, since: int) -> list[Any]:
    """The interaction callbacks (acknowledgements) among the requests from `since` on."""
    return [r for r in server.env.http_requests[since:] if r.path.endswith("/callback")]


# ---- start, help, DMs ---------------------------------------------------------------------


async def test_start_and_help_in_a_server_and_in_a_dm(data_dir: Path) -> None:
    async with discord_app(app_settings(data_dir)) as (_, server):
        alice = server.member("alice")
        start = await alice.slash(server.channel, "start")
        assert "百宝箱" in answer_text(start) and "/ask" in answer_text(start)
        helped = await alice.slash(server.channel, "help")
        assert answer_text(helped).startswith("**百宝箱 · 可用命令**")
        assert "/chapter" in answer_text(helped) and "/sources" in answer_text(helped)
        one = await alice.slash(server.channel, "help", command="cite")
        assert "/cite 弗1:10" in answer_text(one)
        # In a DM: the slash commands work there too, and typed text gets a pointer to /help.
        dm = await alice.user.slash("help")
        assert answer_text(dm).startswith("**百宝箱 · 可用命令**")
        private = await alice.user.slash("ask", question=QUESTION)
        assert "【" in answer_text(private) and not private.ephemeral
        await alice.send_dm("你好")
        *_, typed, pointer = [m.content for m in alice.user.dm_channel.history()]
        assert typed == "你好" and pointer.startswith("请以 / 开头输入命令") and "/help" in pointer


# ---- /ask --------------------------------------------------------------------------------


async def test_ask_with_a_model_is_acknowledged_first_then_streamed_and_cited(
    data_dir: Path, llm_wire: LLMStubServer
) -> None:
    time: list[VirtualTime] = []

    async def model(body: dict[str, Any]) -> Scripted:
        time[0].elapse(MODEL_TAKES_S)  # the model takes its time
        text = "职事明确教导\n召会是神圣分赐的结果。[1]\n\n推论\n无"
        if body.get("stream"):
            return Scripted.sse(openai_stream(text))
        return Scripted.json(openai_completion(text))

    llm_wire.openai_responder = model
    settings = app_settings(data_dir, **llm_settings(llm_wire, "openai"))
    async with discord_app(settings, use_settings_llm=True) as (_, server):
        time.append(server.time)
        before = len(server.env.http_requests)
        asked = await server.member("alice").slash(server.channel, "ask", question=QUESTION)
        [ack] = acknowledgements(server, before)
        assert ack.json == {"type": 5}  # deferred ("thinking…") before the model was asked
        streamed = asked.response
        assert streamed is not None and streamed.content == "职事明确"  # the first delta
        # The final text waits out the edit throttle (1 s) on the virtual clock.
        await server.env.advance_time(1)
        final = answer_text(asked)
    assert "召会是神圣分赐的结果【神圣的分赐与召会，" in final
    assert "**出处**" in final and "未使用语言模型" not in final
    assert len(llm_wire.requests_to("/v1/chat/completions")) == 1


async def test_ask_without_a_model_is_answered_at_once(data_dir: Path) -> None:
    async with discord_app(app_settings(data_dir)) as (_, server):
        asked = await server.member("alice").slash(server.channel, "ask", question=QUESTION)
        answer = answer_text(asked)  # complete when the action returns: nothing waits on time
        assert "未使用语言模型" in answer and "【" in answer and "**出处**" in answer
        assert asked.followups == [] and not asked.ephemeral


# ---- /cite, /graph --------------------------------------------------------------------------


async def test_cite_and_the_graph_picture(data_dir: Path) -> None:
    async with discord_app(app_settings(data_dir)) as (_, server):
        alice = server.member("alice")
        cited = answer_text(await alice.slash(server.channel, "cite", reference="弗1:10"))
        assert cited.count("要照所安排的，在日期满足的时候") == 1 and "和合本（1919）" in cited
        assert "职事段落" in cited
        graph = await alice.slash(server.channel, "graph", concept="神圣分赐")
        assert "「神圣分赐」在知识图谱中的关系" in answer_text(graph)
        pictures = [a for m in [graph.response, *graph.followups] if m for a in m.attachments]
        assert [p.filename for p in pictures] == ["graph.png"]
        assert (await pictures[0].read()).startswith(PNG)


# ---- /ingest, /sources ----------------------------------------------------------------------

DOC = """# 测试之书

## 第一章 神圣的分赐

神圣的分赐是神将祂自己分赐到人里面，使召会成为基督的身体。

## 第二章 新耶路撒冷

新耶路撒冷是神经纶的终极完成。
"""


async def test_ingest_add_then_sources_then_delete(data_dir: Path) -> None:
    async with discord_app(app_settings(data_dir)) as (app, server):
        admin = server.member("admin", server.mods)
        member = server.member("member")
        refused = await member.slash(
            server.channel, "ingest add", file=("d.md", DOC.encode()), title="测试之书"
        )
        assert refused.ephemeral and "只有管理员" in answer_text(refused)
        added = await admin.slash(
            server.channel, "ingest add", file=("d.md", DOC.encode()), title="测试之书"
        )
        assert answer_text(added).startswith(("正在读取", "正在导入"))  # progress, streamed
        await server.env.advance_time(1)  # the throttled final edit
        assert "已导入《测试之书》" in answer_text(added)
        assert "测试之书" in {d.source for d in await app.indexer.documents()}
        listed = answer_text(await member.slash(server.channel, "sources"))
        assert "测试之书" in listed
        deleted = await admin.slash(server.channel, "ingest delete", source="测试之书")
        assert "已删除《测试之书》" in answer_text(deleted)
        assert "测试之书" not in {d.source for d in await app.indexer.documents()}
        assert "测试之书" not in answer_text(await member.slash(server.channel, "sources"))


# ---- /settings: who is an admin -------------------------------------------------------------


async def test_settings_by_a_member_a_manage_server_admin_and_a_novel_role_holder(
    data_dir: Path,
) -> None:
    async with discord_app(app_settings(data_dir)) as (_, server):
        member = server.member("member")
        mod = server.member("mod", server.mods)
        editor = server.member("editor", server.editors)
        refused = await member.slash(server.channel, "settings language", value="en")
        assert refused.ephemeral and answer_text(refused) == "只有管理员可以这样做。"
        asked = await member.slash(server.channel, "ask", question=" ")
        assert "缺少参数「问题」" in answer_text(asked)  # nothing changed
        done = await mod.slash(server.channel, "settings language", value="en")
        assert answer_text(done).startswith("Done: this chat now gets replies in English")
        back = await editor.slash(server.channel, "settings language", value="zh")
        assert answer_text(back).startswith("好的，本聊天今后用中文回复")
        assert not back.ephemeral


# ---- the writers' room ----------------------------------------------------------------------


async def _ballot_after(server: Server, proposals: dict[str, simcord.MemberActor]) -> Any:
    """Proposals in, the proposal phase closed by an admin: the ballot message."""
    editor = server.member("editor", server.editors)
    opened = await editor.slash(server.channel, "chapter next")
    assert "提议征集开始" in answer_text(opened)
    for title, who in proposals.items():
        proposed = await who.slash(server.channel, "chapter propose", title=title)
        assert f"《{title}》" in answer_text(proposed)
    closed = await editor.slash(server.channel, "chapter close")
    assert "投票开始" in answer_text(closed)
    return closed


def _ballot(result: simcord.InteractionResult) -> simcord.ResponseMessage:
    """The ballot message as the channel shows it now: the last message of the reply."""
    messages = [m for m in [result.response, *result.followups] if m is not None]
    return messages[-1]


async def test_a_round_with_buttons_the_running_count_then_submit_and_revise(
    data_dir: Path,
) -> None:
    async with discord_app(app_settings(data_dir)) as (app, server):
        author, other = server.member("author"), server.member("other")
        voters = [server.member(f"voter{i}") for i in range(3)]
        closed = await _ballot_after(server, {"夜渡": author, "山火": other})
        message = _ballot(closed)
        assert "共 0 票" in message.content
        assert [b["label"] for b in buttons(message)] == ["1. 夜渡", "2. 山火"]
        interval = app.settings.novel_ballot_edit_interval_s
        for count, voter in enumerate(voters, start=1):
            click = await voter.click(message, label="1. 夜渡")
            assert click.ephemeral and "已投给 1.《夜渡》" in answer_text(click)
            if count > 1:  # at most one edit per interval: this count waits its turn …
                assert f"共 {count - 1} 票" in _ballot(closed).content
                await server.env.advance_time(interval)
            shown = _ballot(closed).content  # … and then shows
            assert f"共 {count} 票" in shown and f"1. 夜渡 — {count} 票" in shown, shown
        edits = server.requests("PATCH", f"/channels/{server.channel.id}/messages/{message.id}")
        assert len(edits) == 3  # one per count, never an identical one
        editor = server.member("editor2", server.editors)
        result = await editor.slash(server.channel, "chapter close")
        assert "胜出：《夜渡》" in answer_text(result) and "/chapter submit" in answer_text(result)
        await server.env.advance_time(interval)
        assert "投票已截止" in _ballot(closed).content and buttons(_ballot(closed)) == []
        # No model: the winner writes the chapter, then an admin replaces it with a file.
        body = (
            "夜色沉沉，林远提着灯走到青岚渡口。江风很冷，苏晴在船头举着灯笼。\n\n林远解开了缆绳。"
        )
        submitted = await author.slash(server.channel, "chapter submit", text=body)
        assert "已收到第 1 章正文" in answer_text(submitted)
        revised_text = body.replace("江风很冷", "江风刺骨")
        revised = await editor.slash(
            server.channel, "chapter revise", chapter=1, file=("第1章.txt", revised_text.encode())
        )
        assert "第 2 版" in answer_text(revised)
        [(number, version)] = await app.novels.service.repo.book.current_versions(
            str(server.guild.id)
        )
        assert number == 1 and version.text == revised_text


async def test_deadlines_follow_the_virtual_clock_and_a_posted_ballot_counts(
    data_dir: Path,
) -> None:
    """Nobody closes anything: the proposal deadline posts the ballot in the channel (a plain
    channel message, not an interaction's), a click's count shows on it, and the vote
    deadline announces the winner."""
    settings = app_settings(data_dir, novel_proposal_minutes=30, novel_vote_minutes=30)
    async with discord_app(settings) as (_, server):
        editor, author = server.member("editor", server.editors), server.member("author")
        await editor.slash(server.channel, "chapter next")
        await author.slash(server.channel, "chapter propose", title="夜渡")
        await server.env.advance_time(29 * 60)
        assert not any("投票开始" in s for s in server.said())
        await server.env.advance_time(60)
        [ballot] = [m for m in server.channel.history() if "投票开始" in m.content]
        assert ballot.interaction_metadata is None  # posted by the deadline, not a command
        assert "共 0 票" in ballot.content
        await server.member("voter").click(ballot, label="1. 夜渡")
        await server.env.advance_time(1)
        [ballot] = [m for m in server.channel.history() if m.id == ballot.id]
        assert "共 1 票" in ballot.content
        await server.env.advance_time(30 * 60)
        assert any("胜出：《夜渡》" in s for s in server.said())
        [ballot] = [m for m in server.channel.history() if m.id == ballot.id]
        assert "投票已截止" in ballot.content and not ballot.components


async def test_chapter_status_follows_the_round_on_the_virtual_clock(data_dir: Path) -> None:
    """`/chapter status` (issue 41): the phase, the proposals, the minutes left on the clock,
    then the running count once voting opens, in the server's language; with no round, the
    way to open one (privately)."""
    settings = app_settings(data_dir, novel_proposal_minutes=30, novel_vote_minutes=30)
    async with discord_app(settings) as (_, server):
        editor, author = server.member("editor", server.editors), server.member("author")
        none = await author.slash(server.channel, "chapter status")
        assert "当前没有进行中的一轮，先用 /chapter next 开启" in answer_text(none)
        assert none.followups and all(m.ephemeral for m in none.followups)
        await editor.slash(server.channel, "chapter next")
        await author.slash(server.channel, "chapter propose", title="夜渡", summary="林远渡河")
        await server.env.advance_time(10 * 60)
        shown = answer_text(await server.member("reader").slash(server.channel, "chapter status"))
        assert "第 1 章　提议阶段" in shown and "1. 夜渡 · 提议：author" in shown
        assert "目前共 1 个提议，约 20 分钟后开始投票" in shown
        await server.member("other").slash(server.channel, "chapter propose", title="山火")
        ballot = _ballot(await editor.slash(server.channel, "chapter close"))
        await server.member("voter").click(ballot, label="2. 山火")
        await server.env.advance_time(5 * 60)
        shown = answer_text(await author.slash(server.channel, "chapter status"))
        assert "第 1 章　投票阶段" in shown and "2. 山火 — 1 票 · 提议：other" in shown
        assert "共 1 票。" in shown and "25 分钟后截止" in shown
        await editor.slash(server.channel, "settings language", value="en")
        english = answer_text(await author.slash(server.channel, "chapter status"))
        assert "Chapter 1: voting" in english and "2. 山火 — 1 vote(s)" in english
        await editor.slash(server.channel, "chapter close")  # no model: waits for its text
        shown = answer_text(await author.slash(server.channel, "chapter status"))
        assert "The winner “山火” (chapter 1) is waiting for its text" in shown


# ---- limits and autocomplete ----------------------------------------------------------------


async def test_rate_limits_follow_the_virtual_clock(data_dir: Path) -> None:
    settings = app_settings(data_dir, rate_limit_user_per_min=1)
    async with discord_app(settings) as (_, server):
        alice = server.member("alice")
        first = await alice.slash(server.channel, "ask", question=QUESTION)
        assert "【" in answer_text(first)
        again = await alice.slash(server.channel, "ask", question=QUESTION)
        assert again.ephemeral and "请求太频繁了，请 60 秒后再试" in answer_text(again)
        await server.env.advance_time(60)
        third = await alice.slash(server.channel, "ask", question=QUESTION)
        assert "【" in answer_text(third) and not third.ephemeral


async def test_the_rate_limiter_reads_the_injected_clock_not_the_process_clock(
    data_dir: Path,
) -> None:
    """SimCord replaces `time.monotonic` for the whole process while it runs, so a limiter
    that read it would follow SimCord's time too. Here the App's clock is a counter of the
    test's own: SimCord's time moving two minutes releases nothing; the counter's minute does."""
    time = VirtualTime()
    ticks = [0.0]
    clock = Clock(now=time.now, monotonic=lambda: ticks[0], sleep=time.sleep)
    settings = app_settings(data_dir, rate_limit_user_per_min=1)
    async with App(settings, embedder=HashEmbedder(DIM), clock=clock, llm=None) as app:
        transport = DiscordTransport(app.router, settings, clock=time.clock())
        async with simulated(transport, time) as server:
            alice = server.member("alice")
            assert "【" in answer_text(await alice.slash(server.channel, "ask", question=QUESTION))
            limited = "请求太频繁了"
            again = await alice.slash(server.channel, "ask", question=QUESTION)
            assert limited in answer_text(again)
            await server.env.advance_time(120)  # SimCord's clock (and time.monotonic) moves
            still = await alice.slash(server.channel, "ask", question=QUESTION)
            assert limited in answer_text(still)
            ticks[0] += 60  # the injected clock's minute
            later = await alice.slash(server.channel, "ask", question=QUESTION)
            assert "【" in answer_text(later) and not later.ephemeral


async def test_autocomplete_offers_sources_and_books(data_dir: Path) -> None:
    async with discord_app(app_settings(data_dir)) as (app, server):
        alice = server.member("alice")
        sources = await alice.autocomplete(server.channel, "ask", "source", "神圣", question="?")
        offered = {c["value"] for c in sources}
        assert offered and all("神圣" in v for v in offered)
        assert offered <= {d.source for d in await app.indexer.documents()}
        books = await alice.autocomplete(server.channel, "cite", "reference", "弗")
        assert "弗" in {c["value"] for c in books}
