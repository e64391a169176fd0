"""Done means: the three transports reach the same router and render the same reply. One rich
reply (heading, text, quote, a citation, a poll) goes out through the console, Discord (in
SimCord) and Telegram; each platform's output carries every part of it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.ratelimit import RateLimiter
from bot.reply import Block, Citation, Reply
from bot.router import Router
from bot.transports.console import ConsoleTransport
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from retrieval.requests import AskRequest
from tests.discord_sim import VirtualTime, app_settings, simulated
from tests.service_fakes import RecordingNovels, RecordingScholar, ballot_poll, fake_router
from tests.stubs.fixtures import telegram_settings
from tests.stubs.telegram_server import TelegramServer

REPLY = Reply(
    lang="zh",
    blocks=[
        Block("职事明确教导", "heading"),
        Block("召会乃是神圣分赐的结果。"),
        Block("神圣的分赐是神经纶的中心", "quote"),
    ],
    citations=[Citation("神圣的分赐与召会，第一篇", "神圣的分赐与召会", "第一篇", "召会乃是结果")],
    poll=ballot_poll("下一章写什么？", ("夜渡", "山火"), "r1"),
)
PARTS = [
    "职事明确教导",
    "召会乃是神圣分赐的结果",
    "神圣的分赐是神经纶的中心",
    "神圣的分赐与召会，第一篇",
    "召会乃是结果",
    "夜渡",
    "山火",
]


@pytest.fixture
def router() -> tuple[Router, RecordingScholar]:
    scholar = RecordingScholar()
    scholar.reply = REPLY
    return fake_router(scholar, RecordingNovels(), limiter=RateLimiter(0, 0)), scholar


async def test_console_discord_and_telegram_render_the_same_reply(
    router: tuple[Router, RecordingScholar],
    telegram_wire: TelegramServer,
    tmp_path: Path,
) -> None:
    r, scholar = router
    question = "/ask 神圣分赐与召会有什么关系？"

    out = io.StringIO()
    await ConsoleTransport(r, stdin=io.StringIO(), stdout=out).handle_line(question)
    console_text = out.getvalue()

    async with TelegramTransport(
        r, telegram_settings(telegram_wire), edit_interval_s=0.0, clock=telegram_wire.clock
    ):
        telegram_wire.push_command(question)
        # The ballot is a keyboard by default (issue 12).
        await telegram_wire.wait_for("sendMessage")
    telegram_text = "\n".join(
        str(c.params.get("text", "")) + str(c.params.get("reply_markup", ""))
        for c in telegram_wire.named("sendMessage")
    )

    time = VirtualTime()
    transport = DiscordTransport(r, app_settings(tmp_path), clock=time.clock())
    async with simulated(transport, time) as server:
        asked = await server.member("alice").slash(
            server.channel, "ask", question=question.removeprefix("/ask ")
        )
        messages = [m for m in [asked.response, *asked.followups] if m is not None]
        discord_text = "\n".join(m.content + str(m.components) for m in messages)

    for name, text in (
        ("console", console_text),
        ("telegram", telegram_text),
        ("discord", discord_text),
    ):
        missing = [p for p in PARTS if p not in text]
        assert not missing, f"{name} lost {missing}:\n{text}"
    assert [req for req in scholar.requests] == [AskRequest("神圣分赐与召会有什么关系？")] * 3
