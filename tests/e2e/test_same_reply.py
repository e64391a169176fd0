"""Done means: the three transports reach the same router and render the same reply. One rich
reply (heading, text, quote, a citation, a poll) goes out through the console, Discord and
Telegram; each platform's output carries every part of it."""

from __future__ import annotations

import asyncio
import io

import pytest
from telegram import Update

from bot.ratelimit import RateLimiter
from bot.router import Router
from bot.settings import load_settings
from bot.transports.console import ConsoleTransport
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from retrieval.reply import Block, Citation, Poll, Reply
from retrieval.requests import AskRequest
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.discord_stub import APP_ID, DiscordStub, slash
from tests.stubs.telegram_stub import TelegramStub, command_update

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
    router: tuple[Router, RecordingScholar], discord_stub: DiscordStub
) -> None:
    r, scholar = router
    question = "/ask 神圣分赐与召会有什么关系？"

    out = io.StringIO()
    await ConsoleTransport(r, stdin=io.StringIO(), stdout=out).handle_line(question)
    console_text = out.getvalue()

    telegram_stub = TelegramStub()
    telegram = TelegramTransport(
        r, load_settings(telegram_token="123:TEST"), request=telegram_stub, edit_interval_s=0.0
    )
    async with telegram:
        await telegram.app.process_update(
            Update.de_json(command_update(question), telegram.app.bot)
        )
    telegram_text = "\n".join(
        str(c.params.get("text", "")) + str(c.params.get("reply_markup", ""))
        for c in telegram_stub.named("sendMessage")
    )

    transport = DiscordTransport(r, load_settings(discord_token="stub-token"))
    async with transport:
        transport.client._connection.parse_interaction_create(  # type: ignore[arg-type]
            slash("ask", {"question": question.removeprefix("/ask ")})
        )
        await discord_stub.wait_for("POST", f"/webhooks/{APP_ID}/")
        await asyncio.sleep(0.05)
    discord_text = "\n".join(
        str(c.json.get("content", "")) + str(c.json.get("components", ""))
        for c in discord_stub.find("POST", f"/webhooks/{APP_ID}/")
    )

    for name, text in (
        ("console", console_text),
        ("telegram", telegram_text),
        ("discord", discord_text),
    ):
        missing = [p for p in PARTS if p not in text]
        assert not missing, f"{name} lost {missing}:\n{text}"
    assert [req for req in scholar.requests] == [AskRequest("神圣分赐与召会有什么关系？")] * 3
