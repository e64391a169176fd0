"""Telegram transport end to end: python-telegram-bot's own request/response code against a
loopback Bot API stand-in (`TelegramStub`), updates fed through `Application.process_update`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from telegram import Update

from bot.chats import ChatSettings
from bot.ratelimit import RateLimiter
from bot.settings import load_settings
from bot.transports.telegram import TelegramTransport
from novel import api as novel_api
from retrieval.reply import Block, Button, Poll, Reply
from retrieval.requests import Actor, AskRequest
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.telegram_stub import (
    TelegramStub,
    callback_update,
    command_update,
    document_update,
    poll_answer_update,
)

FakeScholar = RecordingScholar
FakeNovels = RecordingNovels


@pytest.fixture
async def env(
    tmp_path: Path,
) -> AsyncIterator[tuple[TelegramTransport, TelegramStub, FakeScholar, FakeNovels]]:
    stub, scholar, novels = TelegramStub(), FakeScholar(), FakeNovels()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, limiter=RateLimiter(0, 0), chats=chats)
        settings = load_settings(telegram_token="123:TEST")
        transport = TelegramTransport(router, settings, request=stub, edit_interval_s=0.0)
        async with transport:
            yield transport, stub, scholar, novels


async def feed(transport: TelegramTransport, data: dict[str, object]) -> None:
    await transport.app.process_update(Update.de_json(data, transport.app.bot))


async def test_start_sets_commands_and_polls(env: tuple) -> None:
    _transport, stub, _, _ = env
    commands = stub.named("setMyCommands")
    assert len(commands) == 2
    zh = {c["command"]: c["description"] for c in commands[0].params["commands"]}
    assert zh["ask"] == "向职事语料提问，回答附出处" and "chapter" in zh and "novel" in zh
    assert commands[1].params["language_code"] == "en"
    for _ in range(100):
        if stub.named("getUpdates"):
            break
        await asyncio.sleep(0.01)
    assert stub.named("getUpdates")


async def test_stop_is_idempotent() -> None:
    stub = TelegramStub()
    router = fake_router(FakeScholar(), FakeNovels(), limiter=RateLimiter(0, 0))
    transport = TelegramTransport(router, load_settings(telegram_token="1:x"), request=stub)
    await transport.start()
    await transport.stop()
    await transport.stop()
    assert not transport.app.running


async def test_ask_sends_escaped_html(env: tuple) -> None:
    transport, stub, scholar, _ = env
    scholar.reply = Reply(
        lang="zh",
        blocks=[Block("经纶 <b>&</b>", "heading"), Block("a < b & c"), Block("引文", "quote")],
    )
    await feed(transport, command_update("/ask 什么是经纶？"))
    assert [c[1] for c in scholar.calls] == [AskRequest("什么是经纶？")]
    actor = scholar.calls[0][0]
    assert actor.platform == "telegram" and actor.chat_id == "42"
    [sent] = stub.named("sendMessage")
    assert sent.params["parse_mode"] == "HTML"
    text = sent.params["text"]
    assert "<b>经纶 &lt;b&gt;&amp;&lt;/b&gt;</b>" in text
    assert "a &lt; b &amp; c" in text and "<blockquote>引文</blockquote>" in text
    assert stub.named("sendChatAction")[0].params["action"] == "typing"


async def test_group_command_with_bot_suffix_and_admin_lookup(env: tuple) -> None:
    transport, stub, scholar, novels = env
    stub.member_status[(-100, 7)] = "administrator"
    await feed(transport, command_update("/ask@baibao_bot 神圣分赐", chat_id=-100, user_id=7))
    await feed(transport, command_update("/ask@baibao_bot 再问", chat_id=-100, user_id=7))
    assert [c[1] for c in scholar.calls] == [AskRequest("神圣分赐"), AskRequest("再问")]
    assert scholar.calls[0][0].chat_id == "-100"
    assert stub.named("getChatAdministrators") == []  # /ask needs no admin
    assert stub.named("sendMessage")[0].params["chat_id"] == -100
    for _ in range(2):
        await feed(transport, command_update("/chapter close", chat_id=-100, user_id=7))
    assert [a.is_admin for a, _ in novels.calls] == [True, True]
    assert len(stub.named("getChatAdministrators")) == 1  # cached
    assert stub.named("getChatMember") == []


async def test_command_for_another_bot_is_ignored(env: tuple) -> None:
    transport, stub, scholar, _ = env
    await feed(transport, command_update("/ask@other_bot 你好", chat_id=-100, user_id=7))
    assert scholar.calls == [] and stub.named("sendMessage") == []


async def test_the_chats_language_decides_not_the_senders_app(env: tuple) -> None:
    transport, stub, _, _ = env
    stub.member_status[(-100, 7)] = "creator"
    await feed(transport, command_update("/chapter rollback 3", chat_id=-100, lang="en"))
    assert "缺少参数「版本号」" in stub.named("sendMessage")[0].params["text"]
    await feed(transport, command_update("/settings language en", chat_id=-100, user_id=7))
    assert stub.named("sendMessage")[1].params["text"].startswith("Done: this chat now")
    await feed(transport, command_update("/chapter rollback 3", chat_id=-100))  # a zh app
    assert "Missing argument" in stub.named("sendMessage")[2].params["text"]
    await feed(transport, command_update("/chapter rollback 3"))  # another chat: default
    assert "缺少参数「版本号」" in stub.named("sendMessage")[3].params["text"]


async def test_callback_query_presses_and_answers(env: tuple) -> None:
    transport, stub, _, novels = env
    novels.reply = Reply.text("已投给第 2 项", lang="zh")
    await feed(transport, callback_update("vote:r1:2"))
    assert [c[1] for c in novels.calls] == [novel_api.Vote(2, "r1")]
    [answer] = stub.named("answerCallbackQuery")
    assert answer.params["text"] == "已投给第 2 项"


async def test_long_callback_data_goes_through_the_table(env: tuple) -> None:
    transport, stub, _, novels = env
    round_id = "r" * 80
    novels.reply = Reply(
        lang="zh", blocks=[Block("投票")], buttons=[Button("二", f"vote:{round_id}:2")]
    )
    await feed(transport, command_update("/chapter next"))
    markup = stub.named("sendMessage")[0].params["reply_markup"]
    data = markup["inline_keyboard"][0][0]["callback_data"]
    assert len(data.encode()) <= 64
    novels.reply = Reply.text("ok", lang="zh")
    await feed(transport, callback_update(data))
    assert novels.calls[-1][1] == novel_api.Vote(2, round_id)


async def test_long_reply_split_in_order(env: tuple) -> None:
    transport, stub, scholar, _ = env
    paragraphs = [f"第{i:03d}段。" + "道" * 240 for i in range(40)]  # ~10,000 characters
    scholar.reply = Reply(lang="zh", blocks=[Block(p) for p in paragraphs])
    await feed(transport, command_update("/ask 长回答"))
    texts = [c.params["text"] for c in stub.named("sendMessage")]
    assert len(texts) >= 3 and all(len(t) <= 4096 for t in texts)
    numbers = [int(n) for t in texts for n in re.findall(r"第(\d{3})段", t)]
    assert numbers == list(range(40))


async def test_one_ballot_native_poll_or_keyboard_and_answers_come_back(env: tuple) -> None:
    """Issue 12: per chat either the native poll or the keyboard, never both; the transport
    reports where the ballot went; poll answers (retractions too) reach the router by poll id."""
    transport, stub, _, novels = env
    novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 3 章投票开始")],
        poll=Poll("下一章写什么？", ("夜渡", "山门"), "vote:r9:", "r9", native=True),
    )
    stub.member_status[(-100, 7)] = "creator"  # opening a round takes an admin
    await feed(transport, command_update("/chapter next", chat_id=-100, user_id=7))
    [message] = stub.named("sendMessage")
    assert "reply_markup" not in message.params  # no keyboard next to the native poll
    [poll] = stub.named("sendPoll")
    assert poll.params["is_anonymous"] is False
    assert [o["text"] if isinstance(o, dict) else o for o in poll.params["options"]] == [
        "夜渡",
        "山门",
    ]
    where, posted = novels.calls[-1]
    assert isinstance(posted, novel_api.BallotPosted) and posted.round_id == "r9"
    assert posted.poll_id == "poll1" and posted.message_id and posted.poll_message_id
    assert where.chat_id == "-100"
    novels.reply = Reply.text("已投票", lang="zh")
    await feed(transport, poll_answer_update("poll1", 1, user_id=8))
    actor, request = novels.calls[-1]
    assert request == novel_api.PollAnswer("poll1", (2,))
    assert actor.chat_id == "-100" and actor.user_id == "8"
    assert len(stub.named("sendMessage")) == 1  # a successful poll vote stays silent
    retracted = poll_answer_update("poll1", 0, user_id=8)
    retracted["poll_answer"]["option_ids"] = []
    retracted["poll_answer"]["option_persistent_ids"] = []
    await feed(transport, retracted)
    assert novels.calls[-1][1] == novel_api.PollAnswer("poll1", ())

    novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 4 章投票开始")],
        poll=Poll("下一章写什么？", ("夜渡", "山门"), "vote:r10:", "r10", native=False),
    )
    await feed(transport, command_update("/chapter next", chat_id=-100, user_id=7))
    assert len(stub.named("sendPoll")) == 1  # a keyboard ballot sends no poll
    keyboard = stub.named("sendMessage")[-1].params["reply_markup"]["inline_keyboard"]
    assert [row[0]["callback_data"] for row in keyboard] == ["vote:r10:1", "vote:r10:2"]


async def test_document_with_caption_reaches_router_as_attachment(env: tuple) -> None:
    transport, stub, _, novels = env
    stub.files["f1"] = b'{"setting": "\xe5\xb1\xb1"}'
    await feed(transport, document_update("/novel blueprint set", "f1", 20))
    assert [c[1] for c in novels.calls] == [novel_api.BlueprintSet(stub.files["f1"])]


async def test_oversized_document_is_refused(env: tuple) -> None:
    transport, stub, _, novels = env
    await feed(transport, document_update("/chapter revise 3", "big", 3 * 1024 * 1024))
    assert novels.calls == []
    assert "文件太大" in stub.named("sendMessage")[0].params["text"]
    assert stub.named("getFile") == []


async def test_streaming_edits_honour_retry_after(env: tuple) -> None:
    transport, stub, scholar, _ = env
    scholar.partials = ["神圣", "神圣的分赐"]
    scholar.reply = Reply.text("神圣的分赐是三一神的工作。", lang="zh")
    stub.flood("editMessageText", retry_after=1)
    await feed(transport, command_update("/ask 分赐"))
    assert stub.named("sendMessage")[0].params["text"] == "神圣"
    edits = [c.params["text"] for c in stub.named("editMessageText")]
    # first edit hit flood control (answered 429), was slept off; the final text arrived
    assert edits[-1] == "神圣的分赐是三一神的工作。"
    assert len(stub.named("sendMessage")) == 1


async def test_send_posts_to_the_chat(env: tuple) -> None:
    transport, stub, _, _ = env
    await transport.send(Actor("telegram", "-100", "0"), Reply.text("第 3 章已完成", lang="zh"))
    [sent] = stub.named("sendMessage")
    assert sent.params["chat_id"] == -100 and sent.params["text"] == "第 3 章已完成"
