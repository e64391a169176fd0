"""Telegram transport end to end, on the real wire (chat behaviour, admins and language are in
test_chats_wire.py): python-telegram-bot's own `HTTPXRequest`
against the loopback Bot API (`telegram_wire`, configured through `TELEGRAM_API_BASE`); every
update arrives by `getUpdates` long polling. The server refuses what Telegram refuses, and the
fixture fails a test whose transport made a request Telegram would have refused."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.ballot.codec import PollVote, VoteButton
from bot.ballot.store import PostedBallot
from bot.chats import ChatSettings
from bot.ratelimit import RateLimiter
from bot.registry import PollAnswer
from bot.reply import Block, Button, Reply
from bot.transports.telegram import TelegramTransport
from novel import api as novel_api
from retrieval.requests import AskRequest
from tests.service_fakes import (
    RecordingBallots,
    RecordingNovels,
    RecordingScholar,
    ballot_poll,
    fake_router,
)
from tests.stubs.fixtures import telegram_settings, telegram_transport
from tests.stubs.telegram_server import TelegramServer

GROUP = -100


@dataclass
class Env:
    transport: TelegramTransport
    server: TelegramServer
    scholar: RecordingScholar
    novels: RecordingNovels
    votes: RecordingBallots  # the ballot room: button votes, poll answers, posted ballots

    @property
    def ballots(self) -> list[PostedBallot]:
        """Where each ballot went, as the router's `posted` hook saw it."""
        return self.votes.posted_ballots


@pytest.fixture
async def env(telegram_wire: TelegramServer, tmp_path: Path) -> AsyncIterator[Env]:
    scholar, novels, votes = RecordingScholar(), RecordingNovels(), RecordingBallots()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, ballots=votes, limiter=RateLimiter(0, 0), chats=chats)
        settings = telegram_settings(telegram_wire)
        transport = TelegramTransport(
            router, settings, edit_interval_s=0.0, clock=telegram_wire.clock
        )
        async with transport:
            yield Env(transport, telegram_wire, scholar, novels, votes)


async def test_start_sets_commands_and_long_polls(env: Env) -> None:
    commands = env.server.named("setMyCommands")
    assert len(commands) == 2
    zh = {c["command"]: c["description"] for c in commands[0].params["commands"]}
    assert zh["ask"] == "向职事语料提问，回答附出处" and "chapter" in zh and "novel" in zh
    assert commands[1].params["language_code"] == "en"
    [poll] = await env.server.wait_for("getUpdates")
    assert poll.params["timeout"] > 0  # a long poll, not a busy loop


async def test_stop_is_idempotent(telegram_wire: TelegramServer) -> None:
    router = fake_router(RecordingScholar(), RecordingNovels(), limiter=RateLimiter(0, 0))
    transport = TelegramTransport(
        router, telegram_settings(telegram_wire), clock=telegram_wire.clock
    )
    await transport.start()
    await transport.stop()
    await transport.stop()
    assert not transport.app.running


async def test_ask_sends_escaped_html(env: Env) -> None:
    env.scholar.reply = Reply(
        lang="zh",
        blocks=[Block("经纶 <b>&</b>", "heading"), Block("a < b & c"), Block("引文", "quote")],
    )
    env.server.push_command("/ask 什么是经纶？")
    [sent] = await env.server.wait_for("sendMessage")
    assert [c[1] for c in env.scholar.calls] == [AskRequest("什么是经纶？")]
    actor = env.scholar.calls[0][0]
    assert actor.platform == "telegram" and actor.chat_id == "42"
    assert sent.params["parse_mode"] == "HTML"
    text = sent.params["text"]
    assert "<b>经纶 &lt;b&gt;&amp;&lt;/b&gt;</b>" in text
    assert "a &lt; b &amp; c" in text and "<blockquote>引文</blockquote>" in text
    assert env.server.named("sendChatAction")[0].params["action"] == "typing"


async def test_group_command_with_bot_suffix_and_admin_lookup(env: Env) -> None:
    server = env.server
    server.member_status[(GROUP, 7)] = "administrator"
    server.push_command("/ask@baibao_bot 神圣分赐", chat_id=GROUP, user_id=7)
    await server.wait_for("sendMessage")
    server.push_command("/ask@baibao_bot 再问", chat_id=GROUP, user_id=7)
    await server.wait_for("sendMessage", 2)
    assert [c[1] for c in env.scholar.calls] == [AskRequest("神圣分赐"), AskRequest("再问")]
    assert env.scholar.calls[0][0].chat_id == str(GROUP)
    assert server.named("getChatAdministrators") == []  # /ask needs no admin
    assert server.named("sendMessage")[0].params["chat_id"] == GROUP
    for n in (1, 2):
        server.push_command("/chapter close", chat_id=GROUP, user_id=7)
        await env.novels.wait_calls(n)
    assert [a.is_admin for a, _ in env.novels.calls] == [True, True]
    assert len(server.named("getChatAdministrators")) == 1  # cached
    assert server.named("getChatMember") == []


async def test_command_for_another_bot_is_ignored(telegram_wire: TelegramServer) -> None:
    scholar = RecordingScholar()
    router = fake_router(scholar, RecordingNovels(), limiter=RateLimiter(0, 0))
    # One update at a time, in order: once /help is answered, the update before it was
    # handled (and stayed silent), not merely still running.
    transport = telegram_transport(router, telegram_wire)
    async with transport:
        telegram_wire.push_command("/ask@other_bot 你好", chat_id=GROUP, user_id=7)
        telegram_wire.push_command("/help@baibao_bot", chat_id=GROUP, user_id=7)
        [sent] = await telegram_wire.wait_for("sendMessage")
        assert "/ask" in sent.params["text"]  # /help answered …
        assert scholar.calls == []  # … and the other bot's /ask was never run
    assert len(telegram_wire.named("sendMessage")) == 1


async def test_callback_query_presses_and_answers(env: Env) -> None:
    env.novels.reply = Reply(lang="zh", blocks=[Block("投票")], buttons=[Button("二", "vote:r1:2")])
    env.server.push_command("/chapter vote 2")
    [ballot] = await env.server.wait_for("sendMessage")
    data = ballot.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    env.votes.reply = Reply.text("已投给第 2 项", lang="zh")
    env.server.push_callback(data)
    [answer] = await env.server.wait_for("answerCallbackQuery")
    assert env.votes.calls[-1][1] == VoteButton("r1", 2)
    assert answer.params["text"] == "已投给第 2 项"


async def test_long_callback_data_goes_through_the_table(env: Env) -> None:
    round_id = "r" * 80
    env.novels.reply = Reply(
        lang="zh", blocks=[Block("投票")], buttons=[Button("二", f"vote:{round_id}:2")]
    )
    env.server.push_command("/chapter next")
    [sent] = await env.server.wait_for("sendMessage")  # accepted: ≤ 64 bytes on the wire
    data = sent.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    env.votes.reply = Reply.text("ok", lang="zh")
    env.server.push_callback(data)
    await env.server.wait_for("answerCallbackQuery")
    assert env.votes.calls[-1][1] == VoteButton(round_id, 2)


async def test_long_reply_split_in_order(env: Env) -> None:
    paragraphs = [f"第{i:03d}段。" + "道" * 240 for i in range(40)]  # ~10,000 characters
    env.scholar.reply = Reply(lang="zh", blocks=[Block(p) for p in paragraphs])
    env.server.push_command("/ask 长回答")
    await env.server.wait_until(lambda: "第039段" in env.server.texts())
    texts = [c.params["text"] for c in env.server.named("sendMessage")]
    assert len(texts) >= 3  # each one accepted by the server's 4096 limit
    numbers = [int(n) for t in texts for n in re.findall(r"第(\d{3})段", t)]
    assert numbers == list(range(40))


async def test_one_ballot_native_poll_or_keyboard_and_answers_come_back(env: Env) -> None:
    """Issue 12: per chat either the native poll or the keyboard, never both; the router's
    posted hook learns where the ballot went; poll answers (retractions too) reach the ballot
    room by poll id, as the platform numbers the options (the room reads them as the ballot's)."""
    server = env.server
    env.novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 3 章投票开始")],
        poll=ballot_poll("下一章写什么？", ("夜渡", "山门"), "r9", native=True),
    )
    server.member_status[(GROUP, 7)] = "creator"  # opening a round takes an admin
    server.push_command("/chapter next", chat_id=GROUP, user_id=7)
    [poll] = await server.wait_for("sendPoll")
    await env.novels.wait_calls(1)
    await server.wait_until(lambda: len(env.ballots) == 1)  # where the ballot went
    [message] = server.named("sendMessage")
    assert "reply_markup" not in message.params  # no keyboard next to the native poll
    assert poll.params["is_anonymous"] is False
    assert [o["text"] if isinstance(o, dict) else o for o in poll.params["options"]] == [
        "夜渡",
        "山门",
    ]
    [posted] = env.ballots
    assert posted.round_id == "r9" and posted.platform == "telegram"
    assert posted.poll_id == server.last_poll_id()
    ballot = server.messages[(GROUP, int(posted.message_id))]  # the message with the count
    assert ballot.text == message.params["text"] and posted.poll_message_id
    assert posted.chat_id == str(GROUP)
    env.votes.reply = Reply.text("已投票", lang="zh")
    server.push_poll_answer(server.last_poll_id(), [1], user_id=8)
    await env.votes.wait_calls(1)
    actor, request = env.votes.calls[-1]
    assert request == PollAnswer(server.last_poll_id(), (1,))
    assert isinstance(request, PollAnswer) and PollVote.of(request).options == (2,)
    assert actor.chat_id == str(GROUP) and actor.user_id == "8"
    server.push_poll_answer(server.last_poll_id(), [], user_id=8)  # retracted
    await env.votes.wait_calls(2)
    assert env.votes.calls[-1][1] == PollAnswer(server.last_poll_id(), ())

    env.novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 4 章投票开始")],
        poll=ballot_poll("下一章写什么？", ("夜渡", "山门"), "r10", native=False),
    )
    server.push_command("/chapter next", chat_id=GROUP, user_id=7)
    sent = (await server.wait_for("sendMessage", 2))[-1]
    assert "已投票" not in server.texts()  # a successful poll vote stayed silent
    keyboard = sent.params["reply_markup"]["inline_keyboard"]
    assert [row[0]["callback_data"] for row in keyboard] == ["vote:r10:1", "vote:r10:2"]
    assert len(server.named("sendPoll")) == 1  # a keyboard ballot sends no poll


async def test_document_with_caption_reaches_router_as_attachment(env: Env) -> None:
    content = '{"setting": "山"}'.encode()
    env.server.push_document("/novel blueprint set", content)
    await env.novels.wait_calls(1)
    assert [c[1] for c in env.novels.calls] == [novel_api.BlueprintSet(content)]
    assert env.server.named("getFile")  # downloaded over the Bot API's file URL


async def test_oversized_document_is_refused(env: Env) -> None:
    env.server.push_document(
        "/chapter revise 3", b"x", file_name="第3章.txt", declared_size=3 * 1024 * 1024
    )
    [sent] = await env.server.wait_for("sendMessage")
    assert env.novels.calls == []
    assert "文件太大" in sent.params["text"]
    assert env.server.named("getFile") == []


async def test_streaming_edits_honour_retry_after(env: Env) -> None:
    env.scholar.partials = ["神圣", "神圣的分赐"]
    env.scholar.reply = Reply.text("神圣的分赐是三一神的工作。", lang="zh")
    env.server.flood("editMessageText", retry_after=1)
    env.server.push_command("/ask 分赐")
    final = "神圣的分赐是三一神的工作。"
    await env.server.wait_for("editMessageText", where=lambda c: c.params["text"] == final)
    assert env.server.named("sendMessage")[0].params["text"] == "神圣"
    # the first edit hit flood control (429), was slept off; the final text arrived
    assert next(c.status for c in env.server.calls if c.method == "editMessageText") == 429
    assert len(env.server.named("sendMessage")) == 1


async def test_send_posts_to_the_chat(env: Env) -> None:
    env.server.join(GROUP)
    await env.transport.send(
        Actor("telegram", str(GROUP), "0"), Reply.text("第 3 章已完成", lang="zh")
    )
    [sent] = env.server.named("sendMessage")
    assert sent.params["chat_id"] == GROUP and sent.params["text"] == "第 3 章已完成"
