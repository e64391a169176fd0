"""Forum topics on the real wire: in a supergroup with topics, the bot answers in the topic it
was asked in — commands, streamed edits, ballots (native poll and keyboard), pictures and
files, errors, and what it posts later for a round opened there. The loopback Bot API refuses
a message_thread_id that names no open topic ("message thread not found", the General topic
too), so an answer that strays fails the test. The transport runs with the production edit
throttle on the server's virtual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.chats import ChatSettings
from bot.ratelimit import RateLimiter
from bot.reply import Attachment, Block, Button, Reply
from bot.transports.telegram import TelegramTransport
from retrieval.fakes import HashEmbedder
from tests.reliability.helpers.stack import DIM, settings
from tests.service_fakes import (
    RecordingBallots,
    RecordingNovels,
    RecordingScholar,
    ballot_poll,
    fake_router,
)
from tests.stubs.fixtures import telegram_settings
from tests.stubs.telegram_server import Call, TelegramServer, parse_html

FORUM, ADMIN = -100500, 7
POSTING = ("sendMessage", "sendChatAction", "sendPhoto", "sendDocument", "sendPoll")


@dataclass
class Forum:
    server: TelegramServer
    transport: TelegramTransport
    scholar: RecordingScholar
    novels: RecordingNovels
    votes: RecordingBallots
    topic: int
    other: int

    def posted(self) -> list[Call]:
        return [c for c in self.server.calls if c.method in POSTING and c.status == 200]


@pytest.fixture
async def forum(telegram_wire: TelegramServer, tmp_path: Path) -> AsyncIterator[Forum]:
    telegram_wire.join(FORUM, "读经论坛", forum=True)
    topic = telegram_wire.open_topic(FORUM, "以弗所书")
    other = telegram_wire.open_topic(FORUM, "闲谈")
    telegram_wire.member_status[(FORUM, ADMIN)] = "creator"
    scholar, novels, votes = RecordingScholar(), RecordingNovels(), RecordingBallots()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, ballots=votes, limiter=RateLimiter(0, 0), chats=chats)
        transport = TelegramTransport(
            router, telegram_settings(telegram_wire), clock=telegram_wire.clock
        )
        async with transport:
            yield Forum(telegram_wire, transport, scholar, novels, votes, topic, other)


def threads(calls: list[Call]) -> set[object]:
    return {c.params.get("message_thread_id") for c in calls}


async def test_an_answer_its_stream_and_its_files_go_to_the_topic_asked_in(forum: Forum) -> None:
    server = forum.server
    final = "神圣的分赐是三一神的工作。"
    forum.scholar.partials = ["神圣", "神圣的分赐"]
    forum.scholar.reply = Reply(
        lang="zh",
        blocks=[Block(final)],
        attachments=(
            Attachment("graph.png", b"\x89PNG fake", "image/png"),
            Attachment("answer.md", b"# x"),
        ),
    )
    server.push_command("/ask 分赐", chat_id=FORUM, user_id=8, thread_id=forum.topic)
    await server.wait_for("sendDocument")
    [first] = server.named("sendMessage")
    [edit] = server.named("editMessageText")  # the production throttle kept one edit
    assert first.params["text"] == "神圣" and edit.params["text"] == final
    [streamed] = [m for m in server.messages.values() if parse_html(m.text) == final]
    assert edit.params["message_id"] == streamed.message_id
    assert {m.thread_id for (chat, _), m in server.messages.items() if chat == FORUM} == {
        forum.topic
    }
    assert server.named("sendPhoto") and threads(forum.posted()) == {forum.topic}
    actor, _ = forum.scholar.calls[0]
    assert actor.channel_id == str(forum.topic)


async def test_ballots_and_what_comes_after_go_to_the_topic(forum: Forum) -> None:
    server, novels = forum.server, forum.novels
    novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 3 章投票开始")],
        poll=ballot_poll("下一章写什么？", ("夜渡", "山门"), "r9", native=True),
    )
    server.push_command("/chapter next", chat_id=FORUM, user_id=ADMIN, thread_id=forum.topic)
    [poll] = await server.wait_for("sendPoll")
    novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 4 章投票开始")],
        poll=ballot_poll("下一章写什么？", ("夜渡", "山门"), "r10", native=False),
    )
    server.push_command("/chapter next", chat_id=FORUM, user_id=ADMIN, thread_id=forum.other)
    [native, keyboard] = await server.wait_for("sendMessage", 2)
    assert poll.params["message_thread_id"] == native.params["message_thread_id"] == forum.topic
    assert keyboard.params["message_thread_id"] == forum.other
    # A press on the keyboard ballot: the answer (it has buttons) is posted where the ballot is.
    forum.votes.reply = Reply(
        lang="zh", blocks=[Block("已投给第 1 项")], buttons=[Button("撤回", "x:1")]
    )
    [ballot] = [m for m in server.messages.values() if m.markup is not None]
    server.push_callback("vote:r10:1", message=ballot, user_id=8)
    [*_, answer] = await server.wait_for("sendMessage", 3)
    assert answer.params["text"] == "已投给第 1 项"
    assert answer.params["message_thread_id"] == forum.other
    # What the writers' room posts later (a round's result) goes to the topic it was opened in.
    opened_in = novels.calls[0][0]
    assert opened_in.channel_id == str(forum.topic)
    await forum.transport.send(opened_in, Reply.text("第 3 章已完成", lang="zh"))
    last = server.named("sendMessage")[-1]
    assert last.params["text"] == "第 3 章已完成"
    assert last.params["message_thread_id"] == forum.topic


async def test_errors_are_answered_in_the_topic(forum: Forum) -> None:
    server = forum.server
    server.push_command("/ask", chat_id=FORUM, user_id=8, thread_id=forum.topic)
    [usage] = await server.wait_for("sendMessage")
    server.push_document(
        "/chapter revise 3",
        b"x",
        file_name="第3章.txt",
        declared_size=3 * 1024 * 1024,
        chat_id=FORUM,
        user_id=ADMIN,
        thread_id=forum.other,
    )
    [_, too_big] = await server.wait_for("sendMessage", 2)
    assert forum.scholar.calls == [] and forum.novels.calls == []
    assert usage.params["message_thread_id"] == forum.topic
    assert "文件太大" in too_big.params["text"]
    assert too_big.params["message_thread_id"] == forum.other


async def test_the_general_topic_and_reply_threads_are_no_topic(forum: Forum) -> None:
    """A message in the General topic carries no thread; a reply there carries the replied
    message's id as message_thread_id but is no topic message: answering "in" it would be
    refused (the General topic is never a thread the Bot API takes)."""
    server = forum.server
    server.push_command("/help", chat_id=FORUM, user_id=8)
    server.push_command("/help", chat_id=FORUM, user_id=8, message_thread_id=4242)
    answers = await server.wait_for("sendMessage", 2)
    assert all("message_thread_id" not in c.params for c in answers)
    assert all("message_thread_id" not in c.params for c in server.named("sendChatAction"))


async def test_the_writers_room_keeps_the_topic_a_round_was_opened_in(
    telegram_wire: TelegramServer, tmp_path: Path
) -> None:
    """The whole stack (App, offline): the round remembers the topic, and an announcement to
    the round's target (what the deadline job posts) lands in that topic."""
    telegram_wire.join(FORUM, "读经论坛", forum=True)
    topic = telegram_wire.open_topic(FORUM, "小说")
    telegram_wire.member_status[(FORUM, ADMIN)] = "creator"
    values = {"telegram_token": telegram_wire.token, "telegram_api_base": telegram_wire.api_base}
    async with App(settings(tmp_path / "data", **values), embedder=HashEmbedder(DIM)) as app:
        transport = TelegramTransport(
            app.router, telegram_settings(telegram_wire), clock=telegram_wire.clock
        )
        async with transport:
            telegram_wire.push_command(
                "/chapter next", chat_id=FORUM, user_id=ADMIN, thread_id=topic
            )
            [opened] = await telegram_wire.wait_for("sendMessage")
            r = await app.novels.service.repo.rounds.open_round(str(FORUM))
            assert r is not None and r.channel_id == str(topic)
            target = Actor("telegram", r.chat_id, r.opener_id, channel_id=r.channel_id)
            await app.router.send(target, Reply.text("提议阶段已结束", lang="zh"))
    [_, announced] = telegram_wire.named("sendMessage")
    assert opened.params["message_thread_id"] == announced.params["message_thread_id"] == topic
