"""Several stories in one server or group (issue 42, item 6), end to end over the whole product
(`App`: SQLite, Qdrant Edge, plot memory; the hash embedder):

- Discord through SimCord (`DiscordTransport`'s own client): two channels of one server, one
  holding the server's default story and one its own (`/novel new`), each with its round,
  ballot (buttons), count, chapters and memory; a thread writing its channel's story; the
  admin rule and the malformed cases of `/novel new`; `/chapter revise N 正文：…` inline.
- Telegram through python-telegram-bot against the loopback Bot API: a forum group whose
  topics hold two stories, each with its native poll and tally; the chapters written by the
  model (the real OpenAI SDK against the loopback model server), whose prompt for one story
  never holds the other's chapters; the General topic writing the group's default story.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import simcord

from bot.app import App
from novel.member import Place
from novel.summary import SUMMARY_SYSTEM
from retrieval.fakes import HashEmbedder
from tests.discord_sim import NOVEL_ROLE, answer_text, buttons, discord_app
from tests.reliability.helpers.stack import DIM, settings
from tests.stubs.fixtures import llm_settings, telegram_transport
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_stream
from tests.stubs.telegram_server import Call, TelegramServer

# ---- Discord ----------------------------------------------------------------------------------


def _ballot(result: simcord.InteractionResult) -> simcord.ResponseMessage:
    return [m for m in [result.response, *result.followups] if m is not None][-1]


def _thread(server: Any, parent: simcord.ChannelHandle, name: str) -> simcord.ChannelHandle:
    """A public thread in `parent`, announced on the gateway as Discord does."""
    owner = server.member("thread-owner")
    made = server.env.backend.create_thread(parent.id, name, owner.id)
    return simcord.ChannelHandle(server.env, server.guild, made)


async def _round(
    server: Any, channel: simcord.ChannelHandle, title: str, author: simcord.MemberActor
) -> simcord.InteractionResult:
    """An editor opens a round in `channel`, `author` proposes `title`, the editor closes the
    proposals: the ballot."""
    editor = server.member(f"editor-{channel.name}", server.editors)
    opened = await editor.slash(channel, "chapter next")
    assert "提议征集开始" in answer_text(opened), answer_text(opened)
    proposed = await author.slash(channel, "chapter propose", title=title)
    assert f"《{title}》" in answer_text(proposed)
    closed = await editor.slash(channel, "chapter close")
    assert "投票开始" in answer_text(closed)
    return closed


async def test_discord_two_stories_side_by_side_in_one_server(tmp_path: Path) -> None:
    app_settings = settings(tmp_path / "data", discord_token="simcord", novel_admin_role=NOVEL_ROLE)
    async with discord_app(app_settings) as (app, server):
        home, scifi = server.channel, server.guild.create_text_channel("科幻")
        editor, member = server.member("editor", server.editors), server.member("member")

        # Who may, and what is malformed: nothing is made.
        refused = await member.slash(scifi, "novel new", title="星海")
        assert refused.ephemeral and "只有管理员" in answer_text(refused)
        blank = await editor.slash(scifi, "novel new", title="   ")
        assert "缺少参数「标题」" in answer_text(blank) and "/novel new 星海" in answer_text(blank)
        long = await editor.slash(scifi, "novel new", title="星" * 101)
        assert "「标题」太长了（101 字），上限 100 字" in answer_text(long)
        assert await app.novels.service.repo.stories.stories() == []

        made = answer_text(await editor.slash(scifi, "novel new", title="星海"))
        assert "好的：#科幻从现在起写自己的故事《星海》" in made, made
        assert "/novel blueprint set" in made and "/chapter next" in made
        again = await editor.slash(scifi, "novel new", title="长夜")
        assert "这里已经有自己的故事《星海》了" in answer_text(again)
        guild = str(server.guild.id)
        directory = app.novels.service.repo.stories
        star = directory.story_at(Place(guild, str(scifi.id)))
        assert star.startswith("story:")

        # A round in each channel: two ballots, each counted on its own message.
        author_a, author_b = server.member("author-a"), server.member("author-b")
        ballot_home = _ballot(await _round(server, home, "夜渡", author_a))
        ballot_scifi = _ballot(await _round(server, scifi, "星门", author_b))
        assert [b["label"] for b in buttons(ballot_home)] == ["1. 夜渡"]
        assert [b["label"] for b in buttons(ballot_scifi)] == ["1. 星门"]
        status_home = answer_text(await member.slash(home, "chapter status"))
        status_scifi = answer_text(await member.slash(scifi, "chapter status"))
        assert "1. 夜渡" in status_home and "星门" not in status_home
        assert "1. 星门" in status_scifi and "夜渡" not in status_scifi
        for voter in ("甲", "乙"):
            await server.member(voter).click(ballot_scifi, label="1. 星门")
        await server.member("丙").click(ballot_home, label="1. 夜渡")
        await server.env.advance_time(app.settings.novel_ballot_edit_interval_s)
        assert "1. 星门 — 2 票" in _ballot_now(scifi, ballot_scifi).content
        assert "1. 夜渡 — 1 票" in _ballot_now(home, ballot_home).content
        # /chapter vote in a thread of #科幻 is a vote in 星海's round.
        thread = _thread(server, scifi, "星海讨论")
        voted = answer_text(await server.member("丁").slash(thread, "chapter vote", option=1))
        assert "已投给 1.《星门》" in voted, voted

        # Each round closes with its own winner; each author submits its own chapter.
        for channel, title, author, text in (
            (home, "夜渡", author_a, "夜色沉沉，林远提着灯走到青岚渡口。"),
            (scifi, "星门", author_b, "星门在轨道上缓缓打开，舰长沈星看见了另一片星海。"),
        ):
            closed = answer_text(await editor.slash(channel, "chapter close"))
            assert f"胜出：《{title}》" in closed and "/chapter submit" in closed
            submitted = await author.slash(channel, "chapter submit", text=text)
            assert "已收到第 1 章正文" in answer_text(submitted), answer_text(submitted)
        await server.env.advance_time(app.settings.novel_ballot_edit_interval_s)
        final = _ballot_now(scifi, ballot_scifi).content  # 2 buttons + 1 command, in a thread
        assert "投票已截止" in final and "1. 星门 — 3 票" in final, final
        assert "1. 夜渡 — 1 票" in _ballot_now(home, ballot_home).content
        shown_home = answer_text(await member.slash(home, "chapter show"))
        shown_scifi = answer_text(await member.slash(scifi, "chapter show"))
        shown_thread = answer_text(await member.slash(thread, "chapter show"))
        assert "林远提着灯" in shown_home and "星门" not in shown_home
        assert "舰长沈星" in shown_scifi and "林远" not in shown_scifi
        assert shown_thread == shown_scifi
        # The world is the story's own: 星海 has only its title; the server's keeps 青岚渡.
        world = answer_text(await member.slash(scifi, "novel blueprint", action="show"))
        assert "星海" in world and "林远" not in world
        assert "林远" in answer_text(await member.slash(home, "novel blueprint", action="show"))

        cast = answer_text(await member.slash(scifi, "novel characters"))
        assert "《星海》" in cast and "林远" not in cast, cast
        assert "《青岚渡》" in answer_text(await member.slash(home, "novel characters"))

        # Plot memory is scoped: neither story's search returns the other's chunks.
        memory = app.novels.service.memory
        hits = await memory.search(guild, "星门 轨道 舰长 星海")
        assert hits and all("星门" not in h.text for h in hits)
        hits = await memory.search(star, "林远 青岚渡口 夜色")
        assert hits and all("林远" not in h.text for h in hits)

        # Item 7 on Discord: the new text inline (the text option, and 正文：) with no model.
        revised = await editor.slash(scifi, "chapter revise", chapter=1, text="星门关上了。")
        assert "第 2 版" in answer_text(revised), answer_text(revised)
        marked = await editor.slash(
            scifi, "chapter revise", chapter=1, instructions="正文：星门又打开了。"
        )
        assert "第 3 版" in answer_text(marked)
        no_model = await editor.slash(scifi, "chapter revise", chapter=1, instructions="更紧凑")
        assert "正文：" in answer_text(no_model) and "上传文本修订仍可使用" in answer_text(no_model)
        [(_, current)] = await app.novels.service.repo.book.current_versions(star)
        assert current.text == "星门又打开了。"
        [(_, untouched)] = await app.novels.service.repo.book.current_versions(guild)
        assert untouched.text == "夜色沉沉，林远提着灯走到青岚渡口。"

        listed = answer_text(await member.slash(home, "novel list"))
        assert "本聊天的故事（共 2 个）" in listed
        assert "1. 《青岚渡》 — 默认故事 · 1 章 ← 这里用的故事" in listed
        assert "2. 《星海》 — #科幻 · 1 章" in listed
        in_thread = answer_text(await member.slash(thread, "novel list"))
        assert "2. 《星海》 — #科幻 · 1 章 ← 这里用的故事" in in_thread


def _ballot_now(channel: simcord.ChannelHandle, ballot: simcord.ResponseMessage) -> Any:
    """The ballot message as the channel shows it now (edits applied)."""
    return next(m for m in channel.history() if m.id == ballot.id)


# ---- Telegram forum ---------------------------------------------------------------------------

FORUM, CREATOR, ALICE, BOB = -100600, 7, 8, 9
MARKERS = ("<b>百宝箱 · 可用命令", "<b>Baibao · commands")


def _goal(body: dict[str, Any]) -> str:
    """The chapter's title as the writer's prompt states it (the goal)."""
    prompt = json.dumps(body, ensure_ascii=False)
    start = prompt.index("标题：") + len("标题：")
    return prompt[start:].split("\\n", 1)[0]


def _summary(title: str) -> str:
    return json.dumps(
        {"title": title, "summary": f"{title}的摘要", "characters": [], "scenes": []},
        ensure_ascii=False,
    )


async def _model(body: dict[str, Any]) -> Scripted:
    """The loopback model: a chapter for the goal it is asked to write (its words name the
    goal), a summary, no findings."""
    said = json.dumps(body, ensure_ascii=False)
    if body.get("stream"):
        title = _goal(body)
        return Scripted.sse(openai_stream(f"{title}之章：{title}这一夜，风从江上来。" * 8))
    if SUMMARY_SYSTEM[:20] in said:
        return Scripted.json(openai_completion(_summary("章")))
    return Scripted.json(openai_completion(json.dumps({"findings": []})))


class Forum:
    def __init__(self, app: App, server: TelegramServer, a: int, b: int) -> None:
        self.app, self.server, self.a, self.b = app, server, a, b

    def say(self, text: str, topic: int | None, user: int = CREATOR) -> None:
        self.server.push_message(text, chat_id=FORUM, user_id=user, thread_id=topic)

    async def settle(self) -> None:
        """Every update so far handled (a /help pushed after them is answered last)."""

        def marker(call: Call) -> bool:
            return str(call.params["text"]).startswith(MARKERS)

        before = len([c for c in self.server.named("sendMessage") if marker(c)])
        self.server.push_message("/help", chat_id=FORUM, user_id=CREATOR)
        await self.server.wait_for("sendMessage", before + 1, where=marker)
        await self.app.novels.ballots.board.idle()

    def said_in(self, topic: int | None) -> list[str]:
        """What the group shows in `topic` (None: the General topic), oldest first, edits
        applied: a streamed chapter is its last edit."""
        shown = sorted(
            (m for (chat, _), m in self.server.messages.items() if chat == FORUM),
            key=lambda m: m.message_id,
        )
        return [m.text for m in shown if m.thread_id == topic and not m.text.startswith(MARKERS)]


@pytest.fixture
async def llm_wire() -> AsyncIterator[LLMStubServer]:
    async with LLMStubServer() as server:
        yield server


@pytest.fixture
async def forum(
    tmp_path: Path, telegram_wire: TelegramServer, llm_wire: LLMStubServer
) -> AsyncIterator[Forum]:
    telegram_wire.join(FORUM, "写作群", forum=True)
    a = telegram_wire.open_topic(FORUM, "青岚渡")
    b = telegram_wire.open_topic(FORUM, "星海")
    telegram_wire.member_status[(FORUM, CREATOR)] = "creator"
    llm_wire.openai_responder = _model
    values = {
        "telegram_token": telegram_wire.token,
        "telegram_api_base": telegram_wire.api_base,
        "novel_ballot_edit_interval_s": 0,
        "llm_max_retries": 0,
        **llm_settings(llm_wire, "openai"),
    }
    async with App(settings(tmp_path / "data", **values), embedder=HashEmbedder(DIM)) as app:
        transport = telegram_transport(app.router, telegram_wire)
        async with transport:
            yield Forum(app, telegram_wire, a, b)


def _prompts(llm_wire: LLMStubServer) -> list[str]:
    """Every chapter the model was asked to write: its whole request, as text."""
    return [
        json.dumps(r.body, ensure_ascii=False)
        for r in llm_wire.requests_to("/v1/chat/completions")
        if r.body.get("stream")
    ]


async def test_telegram_forum_topics_hold_two_stories_and_the_model_sees_one(
    forum: Forum, llm_wire: LLMStubServer
) -> None:
    f, s = forum, forum.server
    f.say("/novel new 星海", f.b, user=ALICE)  # a member: refused, in the topic
    f.say("/novel new 星海", None)  # the General topic is the group itself: one story
    f.say("/novel new 星海", f.b)
    await f.settle()
    refused, made = f.said_in(f.b)
    assert "只有管理员" in refused
    assert "好的：话题「星海」从现在起写自己的故事《星海》" in made, made
    [general] = [t for t in f.said_in(None) if "只能写一个故事" in t]
    assert "话题里使用 /novel new" in general
    star = f.app.novels.service.repo.stories.story_at(Place(str(FORUM), str(f.b)))
    assert star.startswith("story:")

    # Two rounds side by side, each with its native poll in its topic.
    for topic, title in ((f.a, "夜渡"), (f.b, "星门")):
        f.say("/chapter next", topic)
        f.say(f"/chapter propose {title} | {title}的摘要", topic, user=ALICE)
        f.say(f"/chapter propose {title}二 | 另一个", topic, user=BOB)
        f.say("/chapter close", topic)
    await f.settle()
    polls = s.named("sendPoll")
    assert [p.params["message_thread_id"] for p in polls] == [f.a, f.b]
    poll_a, poll_b = (c for c in s.named("sendPoll"))
    assert "夜渡" in json.dumps(poll_a.params, ensure_ascii=False)
    assert "星门" in json.dumps(poll_b.params, ensure_ascii=False)
    ids = list(s.polls)
    s.push_poll_answer(ids[0], [1], user_id=ALICE)  # the default story: 夜渡二
    s.push_poll_answer(ids[1], [0], user_id=ALICE)  # 星海: 星门
    f.say("/chapter vote 1", f.b, user=BOB)  # 星海's round, by command in its topic
    await f.settle()
    f.say("/chapter close", f.a)
    f.say("/chapter close", f.b)
    await f.settle()
    said_a, said_b = "\n".join(f.said_in(f.a)), "\n".join(f.said_in(f.b))
    assert "胜出：《夜渡二》" in said_a and "星门" not in said_a
    assert "胜出：《星门》" in said_b and "夜渡" not in said_b
    assert "星门之章" in said_b and "夜渡二之章" in said_a

    # A second chapter of 星海: the model's prompt holds 星海's story only.
    f.say("/chapter next", f.b)
    f.say("/chapter propose 归航 | 舰队归航", f.b, user=ALICE)
    f.say("/chapter propose 远征 | 舰队远征", f.b, user=BOB)
    f.say("/chapter close", f.b)
    await f.settle()
    s.push_poll_answer(list(s.polls)[-1], [0], user_id=BOB)
    f.say("/chapter close", f.b)
    await f.settle()
    *_, second = _prompts(llm_wire)
    assert "归航" in second and "星门之章" in second  # its own chapter 1 (the bridge, memory)
    assert "夜渡" not in second and "林远" not in second  # nothing of the group's story
    book = f.app.novels.service.repo.book
    assert [c.title for c in await book.chapters(star)] == ["星门", "归航"]
    assert [c.title for c in await book.chapters(str(FORUM))] == ["夜渡二"]

    f.say("/chapter show", f.a)
    f.say("/novel list", None)
    await f.settle()
    assert "夜渡二之章" in f.said_in(f.a)[-1] and "星门" not in f.said_in(f.a)[-1]
    listed = next(t for t in f.said_in(None) if "本聊天的故事" in t)
    assert "1. 《青岚渡》 — 默认故事 · 1 章 ← 这里用的故事" in listed
    assert "2. 《星海》 — 话题「星海」 · 2 章" in listed


# ---- a data directory from before stories had places ------------------------------------------


async def test_a_data_directory_from_before_stories_had_places_opens_and_goes_on(
    tmp_path: Path,
) -> None:
    """The writers' room's tables as they were (one story per chat, keyed by the chat), with
    a chapter and no plot memory yet: the App migrates them, re-indexes the chapter, and the
    console's story is the one it had."""
    from bot.transports.console import ConsoleTransport
    from tests.unit.test_novel_stories import old_data_directory

    data = tmp_path / "data"
    data.mkdir()
    old_data_directory(data / "baibao.sqlite3", chat="console")
    async with App(settings(data), embedder=HashEmbedder(DIM)) as app:
        console = ConsoleTransport(app.router, stdin=io.StringIO(), stdout=io.StringIO())
        shown = await console.handle_line("/chapter show 1")
        assert "旧章" in shown and "林远过江。" in shown, shown
        assert "提议阶段" in await console.handle_line("/chapter status")
        listed = await console.handle_line("/novel list")
        assert "1. 《旧书》 — 默认故事 · 1 章 · 提议阶段 ← 这里用的故事" in listed, listed
        hits = await app.novels.service.memory.search("console", "林远过江")
        assert hits and hits[0].title == "旧章"  # reconciled into plot memory on opening
