"""A long `/cite` read to the end, a page at a time (issue 43, item 6), on the real stack (App:
Qdrant Edge, SQLite, the bundled CUV; hash embedder): the console (`/cite 诗119 2` and
`/press`), Discord (`DiscordTransport`'s own client in SimCord: the 「下一页」 button) and
Telegram (python-telegram-bot against the loopback Bot API: the inline keyboard)."""

from __future__ import annotations

import re
from pathlib import Path

from bot.app import App
from bot.presenters.cite_pages import decode_page, encode_page
from bot.transports.telegram import TelegramTransport
from retrieval import scripture
from retrieval.fakes import HashEmbedder
from tests.discord_sim import buttons, discord_app
from tests.e2e.test_full_stack import DIM, _console, _settings, data_dir, prepared
from tests.stubs.telegram_server import TelegramServer

__all__ = ["data_dir", "prepared"]  # fixtures used here

PSALM_119 = 176
VERSE = re.compile(r"(?:^|>|\n)\s*119:(\d+) ")  # a verse line, not the page note


def verses(text: str) -> list[int]:
    return [int(n) for n in VERSE.findall(text)]


async def test_console_reads_psalm_119_to_the_end_by_command_and_by_button(
    data_dir: Path,
) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        first = await _console(app, "/cite 诗119")
        pages = [await _console(app, f"/cite 诗119 {n}") for n in range(2, 7)]
        past = await _console(app, "/cite 诗119 7")
        other_forms = await _console(app, "/cite 诗119 第2页", "/cite Ps 119 page 2")
        tail = await _console(app, "/cite 诗119:31-176")
        pressed = await _console(app, "/cite 诗119", "/press 1")
    assert verses(first) == list(range(1, 31))
    assert "第 1/6 页" in first and "下一页：/cite 诗119 2" in first and "[1] 下一页" in first
    assert "（……" not in first and "只显示前" not in first  # no dead end
    seen = verses(first) + [v for page in pages for v in verses(page)]
    assert seen == list(range(1, PSALM_119 + 1))  # every verse once, in order
    assert "第 6/6 页" in pages[-1] and "全段到此读完" in pages[-1]
    assert "下一页：" not in pages[-1] and "[1] 上一页" in pages[-1]
    assert "没有第 7 页：这段经文共 6 页" in past
    assert verses(other_forms) == list(range(31, 61)) * 2
    assert verses(tail)[0] == 31 and "第 1/5 页" in tail and "/cite 诗119:31-176 2" in tail
    assert verses(pressed)[-30:] == list(range(31, 61))  # /press 1 is 「下一页」


async def test_a_short_passage_has_no_pages(data_dir: Path) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        short = await _console(app, "/cite 弗1:10-12")
    assert "页" not in short and "[1]" not in short


async def test_discord_next_page_button_reads_to_the_end(data_dir: Path) -> None:
    settings = _settings(data_dir, discord_token="simcord")
    async with discord_app(settings) as (_, server):
        member = server.member("alice")
        result = await member.slash(server.channel, "cite", reference="诗119")
        message = next(m for m in [result.response, *result.followups] if m is not None)
        seen = verses(message.content)
        for _ in range(10):  # six pages: five presses; the guard stops a loop that never ends
            found = [b for b in buttons(message) if b.get("label") == "下一页"]
            if not found:
                break
            pressed = await member.click(message, custom_id=found[0]["custom_id"])
            message = next(m for m in [pressed.response, *pressed.followups] if m is not None)
            seen += verses(message.content)
    assert seen == list(range(1, PSALM_119 + 1))
    assert "全段到此读完" in message.content
    assert [b.get("label") for b in buttons(message)] == ["上一页"]


async def test_telegram_keyboard_reads_to_the_end(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    settings = _settings(
        data_dir,
        telegram_token=telegram_wire.token,
        telegram_api_base=telegram_wire.api_base,
    )
    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        transport = TelegramTransport(
            app.router,
            settings,
            edit_interval_s=0.0,
            concurrent_updates=1,
            clock=telegram_wire.clock,
        )
        async with transport:
            telegram_wire.push_command("/cite 诗119")
            [sent] = await telegram_wire.wait_for("sendMessage")
            seen = verses(sent.params["text"])
            for page in range(2, 10):
                keyboard = sent.params.get("reply_markup", {}).get("inline_keyboard", [])
                labels = {b["text"]: b["callback_data"] for row in keyboard for b in row}
                if "下一页" not in labels:
                    break
                telegram_wire.push_callback(labels["下一页"])
                sent = (await telegram_wire.wait_for("sendMessage", page))[-1]
                seen += verses(sent.params["text"])
    assert seen == list(range(1, PSALM_119 + 1))
    assert "全段到此读完" in sent.params["text"]
    assert len(telegram_wire.named("answerCallbackQuery")) == 5


def test_the_page_codec_round_trips_and_refuses_garbage() -> None:
    ranges = scripture.parse_reference("诗119；约14:20")
    action = encode_page(ranges, 3, "traditional")
    prefix, _, payload = action.partition(":")
    request = decode_page(payload)
    assert prefix == "cite" and request is not None
    assert request.page == 3 and request.script == "traditional"
    assert request.refs == (("Ps.119", "Ps.119"), ("John.14.20", "John.14.20"))
    garbage = [
        "",
        "x:s:Ps.119-Ps.119",
        "0:s:Ps.119-Ps.119",
        "2:q:Ps.119-Ps.119",
        "2:s:",
        "2:s:Ps.119",
        "2:s:Xyz.1.1-Xyz.1.2",
        "2:s:Ps.119-Ps.119;drop",
        "2:s:" + ",".join(["Ps.1-Ps.1"] * 50),
    ]
    assert [decode_page(g) for g in garbage] == [None] * len(garbage)
