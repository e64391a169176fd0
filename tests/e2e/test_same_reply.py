"""Done means: the three transports reach the same router and render the same reply. One rich
reply (heading, text, quote, a citation, a poll) goes out through the console, Discord and
Telegram; each platform's output carries every part of it."""

from __future__ import annotations

import io

import pytest

from bot.ratelimit import RateLimiter
from bot.router import Router
from bot.transports.console import ConsoleTransport
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from retrieval.reply import Block, Citation, Poll, Reply
from retrieval.requests import AskRequest
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.discord_server import APP_ID, DiscordServer, slash
from tests.stubs.fixtures import discord_settings, telegram_settings
from tests.stubs.telegram_server import TelegramServer

REPLY = Reply(
    lang="zh",
    blocks=[
        Block("职事明确教导", "heading"),
        Block("召会乃是神圣分赐的结果。"),
        Block("神圣的分赐是神经纶的中心", "quote"),
    ],
    citations=[Citation("神圣的分赐与召会，第一篇", "神圣的分赐与召会", "第一篇", "召会乃是结果")],
    poll=Poll("下一章写什么？", ("夜渡", "山火"), "vote:r1:", "r1"),
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
    discord_wire: DiscordServer,
    telegram_wire: TelegramServer,
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

    async with DiscordTransport(r, discord_settings(discord_wire)):
        asked = await discord_wire.interact(
            slash("ask", {"question": question.removeprefix("/ask ")})
        )
        posts = await discord_wire.wait_answers(asked, "POST", f"/webhooks/{APP_ID}/")
    discord_text = "\n".join(
        str(c.json.get("content", "")) + str(c.json.get("components", "")) for c in posts
    )

    for name, text in (
        ("console", console_text),
        ("telegram", telegram_text),
        ("discord", discord_text),
    ):
        missing = [p for p in PARTS if p not in text]
        assert not missing, f"{name} lost {missing}:\n{text}"
    assert [req for req in scholar.requests] == [AskRequest("神圣分赐与召会有什么关系？")] * 3
