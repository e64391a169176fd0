"""The writers' room as a group uses it, on the real wire: the whole stack (`App`: Qdrant Edge,
SQLite, BM25, plot memory) behind python-telegram-bot's HTTPXRequest against the loopback Bot
API (getUpdates long polling) and `DiscordTransport`'s own client in SimCord; the model
through the real OpenAI SDK adapter against the loopback model server.

One ballot and one tally (native poll or keyboard, poll answers and retractions, button votes
and /chapter vote, the ballot message edited with the count), no dead rounds without a model
(/chapter submit, offline summary, consistency check, blueprint proposals), a long chapter as an
attachment, and Discord admins by NOVEL_ADMIN_ROLE with the roles the gateway sends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import simcord

from bot.app import App
from bot.transports.telegram import TelegramTransport
from retrieval.fakes import HashEmbedder
from tests.discord_sim import NOVEL_ROLE, answer_text, buttons, discord_app
from tests.reliability.helpers.stack import DIM, settings
from tests.stubs.fixtures import llm_settings, telegram_transport
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_stream
from tests.stubs.telegram_server import Call, TelegramServer

GROUP, CREATOR, ALICE, BOB, CAROL = -100, 7, 8, 9, 10
MARKERS = ("<b>百宝箱 · 可用命令", "<b>Baibao · commands")

CHAPTER = (
    "夜色沉沉，林远提着灯走到青岚渡口。江风很冷，苏晴在船头举着灯笼。\n\n"
    "沈默站在船头，冷冷地说：“你来晚了。”林远没有回答，解开了缆绳。"
)
SUMMARY = json.dumps(
    {
        "title": "夜渡",
        "summary": "林远夜里渡江，见到了沈默。",
        "characters": ["林远", "苏晴", "沈默"],
        "scenes": ["青岚渡"],
        "events": ["夜渡"],
        "status_changes": [{"name": "霍三", "status": "失踪"}],
        "new_characters": [],
        "relationships": [],
    },
    ensure_ascii=False,
)
JUDGE = json.dumps(
    {
        "findings": [
            {
                "class": "facts",
                "quote": "江风很冷，苏晴在船头举着灯笼。",
                "rule": "上一章说苏晴留在岸上",
                "fix": "让苏晴留在岸上",
            }
        ]
    },
    ensure_ascii=False,
)


@dataclass
class Tg:
    app: App
    server: TelegramServer

    async def settle(self) -> None:
        """Every update pushed so far has been handled (updates are handled one at a time:
        once the answer to a /help pushed after them is in, theirs are too)."""

        def marker(call: Call) -> bool:
            return str(call.params["text"]).startswith(MARKERS)

        before = len([c for c in self.server.named("sendMessage") if marker(c)])
        self.server.push_message("/help@baibao_bot", chat_id=GROUP, user_id=CREATOR)
        await self.server.wait_for("sendMessage", before + 1, where=marker)
        await self.app.novels.ballots.board.idle()

    def said(self) -> list[str]:
        return [
            str(c.params["text"])
            for c in self.server.named("sendMessage")
            if not str(c.params["text"]).startswith(MARKERS)
        ]

    def edits_of(self, message_id: int) -> list[str]:
        return [
            str(c.params["text"])
            for c in self.server.named("editMessageText")
            if int(c.params["message_id"]) == message_id
        ]


@pytest.fixture
async def llm_wire() -> AsyncIterator[LLMStubServer]:
    async with LLMStubServer() as server:
        yield server


async def _telegram(
    tmp_path: Path, server: TelegramServer, **overrides: Any
) -> tuple[App, TelegramTransport]:
    app = App(
        settings(
            tmp_path / "data",
            telegram_token=server.token,
            telegram_api_base=server.api_base,
            novel_ballot_edit_interval_s=0,
            llm_max_retries=0,
            **overrides,
        ),
        embedder=HashEmbedder(DIM),
    )
    await app.__aenter__()
    transport = telegram_transport(app.router, server)
    await transport.start()
    return app, transport


@pytest.fixture
async def tg_model(
    tmp_path: Path, telegram_wire: TelegramServer, llm_wire: LLMStubServer
) -> AsyncIterator[Tg]:
    telegram_wire.member_status[(GROUP, CREATOR)] = "creator"
    app, transport = await _telegram(tmp_path, telegram_wire, **llm_settings(llm_wire, "openai"))
    try:
        yield Tg(app, telegram_wire)
    finally:
        await transport.stop()
        await app.__aexit__(None, None, None)


@pytest.fixture
async def tg_offline(tmp_path: Path, telegram_wire: TelegramServer) -> AsyncIterator[Tg]:
    telegram_wire.member_status[(GROUP, CREATOR)] = "creator"
    app, transport = await _telegram(tmp_path, telegram_wire)
    try:
        yield Tg(app, telegram_wire)
    finally:
        await transport.stop()
        await app.__aexit__(None, None, None)


async def _propose_and_open_ballot(tg: Tg) -> None:
    s = tg.server
    s.push_message("/chapter next", chat_id=GROUP, user_id=CREATOR)
    s.push_message("/chapter propose 夜渡 | 林远夜里渡江", chat_id=GROUP, user_id=ALICE)
    s.push_message("/chapter propose 山火 | 山中起火", chat_id=GROUP, user_id=BOB)
    s.push_message("/chapter close", chat_id=GROUP, user_id=CREATOR)
    await tg.settle()


async def test_telegram_one_poll_one_tally_edited_count_and_a_written_chapter(
    tg_model: Tg, llm_wire: LLMStubServer
) -> None:
    tg, s = tg_model, tg_model.server
    await _propose_and_open_ballot(tg)
    [poll] = s.named("sendPoll")
    ballot = next(c for c in s.named("sendMessage") if "投票开始" in str(c.params["text"]))
    assert "reply_markup" not in ballot.params  # the native poll is the only ballot
    ballot_id = next(
        m.message_id for m in s.messages.values() if "投票开始" in m.text and m.chat_id == GROUP
    )
    poll_id = s.last_poll_id()
    s.push_poll_answer(poll_id, [0], user_id=ALICE)  # 夜渡
    s.push_poll_answer(poll_id, [1], user_id=BOB)  # 山火
    s.push_poll_answer(poll_id, [1], user_id=CAROL)  # 山火 …
    s.push_poll_answer(poll_id, [], user_id=CAROL)  # … withdrawn
    await tg.settle()
    # The native poll's answers alone move the running count (no command among them).
    edits = tg.edits_of(ballot_id)
    assert edits, "the poll's answers alone edited the ballot"
    shown = edits[-1]
    assert "1. 夜渡 — 1 票" in shown and "2. 山火 — 1 票" in shown and "共 2 票" in shown
    s.push_message("/chapter vote 1", chat_id=GROUP, user_id=CREATOR)  # 夜渡 by command
    await tg.settle()
    shown = tg.edits_of(ballot_id)[-1]
    assert "1. 夜渡 — 2 票" in shown and "2. 山火 — 1 票" in shown and "共 3 票" in shown
    assert poll.params["is_anonymous"] in (False, "false")

    # the chapter streams; the summary and the consistency judge are plain completions
    llm_wire.openai.append(Scripted.sse(openai_stream(CHAPTER)))
    llm_wire.openai.extend(Scripted.json(openai_completion(t)) for t in (SUMMARY, JUDGE))
    s.push_message("/chapter close", chat_id=GROUP, user_id=CREATOR)
    await tg.settle()
    said = "\n".join(s.texts().splitlines())
    assert "胜出：《夜渡》（得票最多）" in said and "夜渡 — 2 票" in said
    assert "林远提着灯" in said  # the chapter, written through the OpenAI SDK
    assert "一致性检查" in said
    assert "苏晴在船头举着灯笼" in said and "/chapter revise 1 让苏晴留在岸上" in said
    assert "世界设定更新建议" in said and "霍三：状态 存活 → 失踪" in said
    assert "投票已截止" in tg.edits_of(ballot_id)[-1]  # the final count, on the ballot
    [stopped] = s.named("stopPoll")
    assert int(stopped.params["message_id"]) == s.polls[poll_id][1]
    judged = [r for r in llm_wire.received if "审校" in json.dumps(r.body, ensure_ascii=False)]
    assert judged, "the LLM consistency pass went to the model"


async def test_telegram_keyboard_ballot_with_voters_named(tg_offline: Tg) -> None:
    tg, s = tg_offline, tg_offline.server
    s.push_message("/settings ballot keyboard shown", chat_id=GROUP, user_id=CREATOR)
    s.push_message("/settings ballot poll", chat_id=GROUP, user_id=ALICE)  # not an admin
    await tg.settle()
    said = tg.said()
    # Latin words only: the router answers in English
    assert "buttons" in said[0] and "names shown" in said[0]
    assert "管理员" in said[1]  # one Latin word says nothing of the language: Chinese
    await _propose_and_open_ballot(tg)
    assert s.named("sendPoll") == []
    ballot = next(m for m in s.messages.values() if "投票开始" in m.text)
    rows = ballot.markup["inline_keyboard"]
    s.push_callback(rows[1][0]["callback_data"], message=ballot, user_id=BOB)
    await tg.settle()
    [answer] = s.named("answerCallbackQuery")
    assert "山火" in str(answer.params.get("text", ""))  # the private confirmation
    shown = tg.edits_of(ballot.message_id)[-1]
    assert "2. 山火 — 1 票（林远）" in shown  # the chat shows who voted
    assert "inline_keyboard" in json.dumps(s.named("editMessageText")[-1].params)


async def test_telegram_relay_without_a_model_submit_long_chapter_and_blueprint(
    tg_offline: Tg,
) -> None:
    """No model: said at once (admins hear the setting), the winner submits the chapter as a
    file; it is summarised, indexed, tagged and checked like a generated one; a long chapter
    comes back as an attachment; the admin accepts the proposed blueprint change."""
    tg, s = tg_offline, tg_offline.server
    await _propose_and_open_ballot(tg)
    opened = next(t for t in tg.said() if "提议征集开始" in t)
    assert "没有可用的语言模型" in opened and "ANTHROPIC_API_KEY" in opened  # CREATOR is admin
    s.push_poll_answer(s.last_poll_id(), [0], user_id=BOB)
    s.push_message("/chapter close", chat_id=GROUP, user_id=CREATOR)
    await tg.settle()
    assert "/chapter submit" in tg.said()[-1] and "胜出：《夜渡》" in tg.said()[-1]
    s.push_message("/chapter submit 不是我写的", chat_id=GROUP, user_id=BOB)
    await tg.settle()
    assert "只有胜出提议的作者" in tg.said()[-1]
    body = (
        "夜色沉沉，林远提着灯走到青岚渡口。霍三死了。一个名叫钱七的老船夫摇着橹过来。\n\n"
        + "\n\n".join(f"第{i}段：江风很冷，苏晴在船头举着灯笼，林远撑船过江。" for i in range(200))
    )
    s.push_document(
        "/chapter submit",
        body.encode(),
        file_name="第1章.txt",
        mime_type="text/plain",
        chat_id=GROUP,
        user_id=ALICE,
    )
    await tg.settle()
    reply = "\n".join(tg.said()[-3:])
    assert "已收到第 1 章正文" in reply and "情节记忆" in reply
    [document] = [c for c in s.named("sendDocument")]
    assert document.files  # the long chapter went as a file …
    assert "全文较长" in reply  # … with its opening in the chat
    assert "霍三：状态 存活 → 已死亡" in reply and "新人物：钱七" in reply
    chapters = await tg.app.novels.service.repo.book.current_versions(str(GROUP))
    assert chapters[0][1].summary.extractive is True
    hits = await tg.app.novels.service.memory.search(str(GROUP), "钱七 老船夫")
    assert hits and hits[0].chapter_no == 1 and "钱七" in {t for h in hits for t in h.tags}
    pending = await tg.app.novels.service.repo.world.pending_changes(str(GROUP))
    status = next(c for c in pending if c.kind == "status")
    s.push_message(f"/novel blueprint accept {status.id}", chat_id=GROUP, user_id=CREATOR)
    await tg.settle()
    assert "已接受" in tg.said()[-1]
    bp = json.loads((await tg.app.novels.service.repo.world.blueprint_json(str(GROUP))) or "{}")
    assert next(c for c in bp["characters"] if c["name"] == "霍三")["status"] == "已死亡"


# ---- Discord (SimCord) ------------------------------------------------------------------------


def _ballot(result: simcord.InteractionResult) -> simcord.ResponseMessage:
    """The message of a reply that carries the ballot (its last)."""
    return [m for m in [result.response, *result.followups] if m is not None][-1]


async def test_discord_role_admins_buttons_and_counts_on_the_ballot(tmp_path: Path) -> None:
    """`DiscordTransport`'s own client in SimCord, over the real App; the ballot edits wait
    out their interval on SimCord's virtual clock."""
    app_settings = settings(
        tmp_path / "data",
        discord_token="simcord",
        novel_admin_role=NOVEL_ROLE,
        novel_round_openers="admins",
    )
    async with discord_app(app_settings) as (app, server):
        channel, interval = server.channel, app.settings.novel_ballot_edit_interval_s
        role = server.member("editor", server.editors)
        refused = await server.member("member").slash(channel, "chapter next")
        assert "只有管理员可以开启新一轮" in answer_text(refused) and refused.ephemeral
        assert "提议征集开始" in answer_text(await role.slash(channel, "chapter next"))
        for title in ("夜渡", "山火"):
            proposed = await server.member(title).slash(channel, "chapter propose", title=title)
            assert f"《{title}》" in answer_text(proposed)
        closed = await role.slash(channel, "chapter close")
        assert "投票开始" in answer_text(closed)
        ballot = _ballot(closed)
        for voter in ("甲", "乙"):
            await server.member(voter).click(ballot, label="1. 夜渡")
        await server.env.advance_time(interval)
        assert "1. 夜渡 — 2 票" in _ballot(closed).content
        edit = server.requests("PATCH", "/channels/")[-1]
        assert edit.path == f"/channels/{channel.id}/messages/{ballot.id}"  # the bot's ballot
        assert edit.json["components"], "the buttons stay while voting is open"
        result = await role.slash(channel, "chapter close")
        assert "胜出：《夜渡》" in answer_text(result)
        await server.env.advance_time(interval)
        assert "投票已截止" in _ballot(closed).content
        assert not server.requests("PATCH", "/channels/")[-1].json.get("components")  # closed


async def test_discord_relay_without_a_model_vote_close_and_submit_a_file(tmp_path: Path) -> None:
    """No model, on Discord (SimCord): the round says so at once (the role admin also hears the
    setting), a proposal, a button vote, the close names the winner and asks for /chapter
    submit; the winner uploads the chapter as a file and gets it back indexed, summarised and
    checked."""
    app_settings = settings(tmp_path / "data", discord_token="simcord", novel_admin_role=NOVEL_ROLE)
    async with discord_app(app_settings) as (app, server):
        channel = server.channel
        role = server.member("editor", server.editors)
        author, voter = server.member("author"), server.member("voter")
        opened = answer_text(await role.slash(channel, "chapter next"))
        assert "提议征集开始" in opened
        assert "没有可用的语言模型" in opened and "/chapter submit" in opened
        assert "ANTHROPIC\\_API\\_KEY" in opened  # a NOVEL_ADMIN_ROLE admin opened it
        proposed = await author.slash(
            channel, "chapter propose", title="夜渡", summary="林远夜里渡江"
        )
        assert "《夜渡》" in answer_text(proposed)
        closed = await role.slash(channel, "chapter close")
        ballot = _ballot(closed)
        assert "投票开始" in answer_text(closed)
        assert "在下方的投票中选择" not in ballot.content  # buttons, and it says so
        [button] = buttons(ballot)
        await voter.click(ballot, custom_id=button["custom_id"])
        assert "1. 夜渡 — 1 票" in _ballot(closed).content  # the first edit goes out at once
        result = answer_text(await role.slash(channel, "chapter close"))
        assert "胜出：《夜渡》" in result
        assert "/chapter submit" in result and "正在写作" not in result  # no dead write
        # someone else may not submit the winner's chapter
        other = await voter.slash(channel, "chapter submit", text="不是我写的")
        assert "只有胜出提议的作者" in answer_text(other)
        body = (
            "夜色沉沉，林远提着灯走到青岚渡口。霍三死了。一个名叫钱七的老船夫摇着橹过来。\n\n"
            "江风很冷，苏晴在船头举着灯笼，林远撑船过江，钱七说：“漕帮今夜要封江。”"
        )
        submitted = await author.slash(channel, "chapter submit", file=("第1章.txt", body.encode()))
        reply = answer_text(submitted)  # what the submit got back
        assert "已收到第 1 章正文" in reply and "一致性检查" in reply
        assert "钱七的老船夫" in reply and "情节记忆" in reply  # the chapter, indexed
        assert "霍三：状态 存活 → 已死亡" in reply and "新人物：钱七" in reply  # from its summary
        guild = str(server.guild.id)
        [(number, version)] = await app.novels.service.repo.book.current_versions(guild)
        assert number == 1 and version.summary.extractive is True
        assert version.text == body
        hits = await app.novels.service.memory.search(guild, "钱七 老船夫 封江")
        assert hits and hits[0].chapter_no == 1 and "钱七" in {t for h in hits for t in h.tags}
