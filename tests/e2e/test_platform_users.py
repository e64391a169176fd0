"""What a demanding reader meets on Discord and Telegram, through the real clients: discord.py's
own client in SimCord (`tests/discord_sim.py`), python-telegram-bot against the loopback Bot API
(`telegram_wire`). Each test is one defect found by using the platforms as a member would."""

from __future__ import annotations

from pathlib import Path

from bot.reply import Block, Reply
from tests.discord_sim import answer_text
from tests.e2e.test_discord import discord_env

EXCERPT = "神圣的分赐是三一神将自己分赐到人里面，*为着*召会的建造。"  # 29 characters


async def test_discord_a_long_quote_note_and_item_keep_their_markup_in_every_message(
    tmp_path: Path,
) -> None:
    """An offline answer's excerpt (a quote) longer than one Discord message went on in the
    next message as plain text, and a long note lost its closing or opening `*`: each part of
    a split block now carries its own markup, as on Telegram."""
    quote = EXCERPT * 90 + "【神的经纶，第三章】"  # one paragraph, ~2,600 characters
    note = "这段摘录只是原文的一部分，请查阅原书。" * 120  # ~2,300 characters
    item = "第三章：" + "林远在渡口等了一夜。" * 230  # ~2,300 characters
    async with discord_env(tmp_path) as env:
        env.scholar.reply = Reply(
            lang="zh",
            blocks=[
                Block("原文摘录", "heading"),
                Block(quote, "quote"),
                Block(note, "note"),
                Block(item, "item"),
            ],
        )
        asked = await env.server.member("alice").slash(
            env.server.channel, "ask", question="什么是神圣分赐？"
        )
        messages = [m.content for m in [asked.response, *asked.followups] if m is not None]
    assert len(messages) > 3 and all(len(m) <= 2000 for m in messages)
    lines = [line for m in messages for line in m.split("\n") if line]
    quoted = [line for line in lines if "神圣的分赐" in line]
    assert quoted and all(line.startswith("> ") for line in quoted)
    assert "".join(q.removeprefix("> ") for q in quoted).replace("\\", "") == quote
    noted = [m for p in messages for m in p.split("\n\n") if "请查阅原书" in m]
    assert len(noted) > 1 and all(n.startswith("*") and n.endswith("*") for n in noted)
    assert "".join(n.strip("*") for n in noted) == note
    items = [m for p in messages for m in p.split("\n\n") if "林远在渡口" in m]
    assert len(items) > 1 and items[0].startswith("• 第三章：")
    assert all(i.startswith("  林远") for i in items[1:])  # goes on, not a new bullet
    assert answer_text(asked).count("【神的经纶，第三章】") == 1
