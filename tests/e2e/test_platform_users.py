"""What a demanding reader meets on Discord and Telegram, through the real clients: discord.py's
own client in SimCord (`tests/discord_sim.py`), python-telegram-bot against the loopback Bot API
(`telegram_wire`). Each test is one defect found by using the platforms as a member would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.app import App
from bot.reply import Block, Reply
from bot.settings import Settings
from retrieval.fakes import HashEmbedder
from tests.discord_sim import answer_text, app_settings, buttons, discord_app
from tests.e2e.test_cite_pages import PSALM_119, verses
from tests.e2e.test_discord import discord_env
from tests.e2e.test_discord_app import DOC
from tests.e2e.test_full_stack import DIM, _settings, data_dir, prepared
from tests.stubs.fixtures import telegram_transport
from tests.stubs.telegram_server import TelegramServer

__all__ = ["data_dir", "prepared"]  # fixtures used here


def _wired(data_dir: Path, server: TelegramServer, **overrides: Any) -> Settings:
    """The stack's settings, its Telegram transport talking to `server`."""
    return _settings(
        data_dir, telegram_token=server.token, telegram_api_base=server.api_base, **overrides
    )


async def _said(server: TelegramServer, text: str, chat_id: int, user_id: int) -> str:
    """A member's command, and the last message of the answer (every command here gets one)."""
    before = len(server.named("sendMessage"))
    server.push_command(text, chat_id=chat_id, user_id=user_id)
    return str((await server.wait_for("sendMessage", before + 1))[-1].params["text"])


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


# ---- a button goes on in the language of the reply it is on ----------------------------------


async def test_discord_psalm_119_in_chinese_reads_on_in_chinese_in_an_english_server(
    data_dir: Path,
) -> None:
    """In a server set to English, `/cite 诗119` is answered in Chinese (the words are), but its
    「下一页」 button turned the reading English from page 2 on ("Page 2 of 6", "Next page"):
    a press is answered in the language of the reply whose button it was."""
    settings = _settings(data_dir, discord_token="simcord")
    async with discord_app(settings) as (_, server):
        admin = server.member("admin", server.mods)
        assert "English" in answer_text(
            await admin.slash(server.channel, "settings language", value="en")
        )
        reader = server.member("alice")
        result = await reader.slash(server.channel, "cite", reference="诗119")
        message = [m for m in [result.response, *result.followups] if m is not None][-1]
        pages, seen = [message.content], verses(message.content)
        for _ in range(10):  # six pages: five presses; the guard stops a loop that never ends
            found = [b for b in buttons(message) if b.get("label") == "下一页"]
            if not found:
                break
            pressed = await reader.click(message, custom_id=found[0]["custom_id"])
            message = [m for m in [pressed.response, *pressed.followups] if m is not None][-1]
            pages.append(message.content)
            seen += verses(message.content)
    assert seen == list(range(1, PSALM_119 + 1))
    assert [f"第 {n}/6 页" in page for n, page in enumerate(pages, 1)] == [True] * 6
    assert "Page" not in "".join(pages) and "全段到此读完" in pages[-1]
    assert [b.get("label") for b in buttons(message)] == ["上一页"]


async def test_telegram_psalm_119_in_chinese_reads_on_in_chinese_in_an_english_chat(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """The same reading on Telegram's inline keyboard, in a group set to English."""
    server, group = telegram_wire, -1001
    server.join(group)
    server.member_status[(group, 7)] = "administrator"
    settings = _wired(data_dir, server)
    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        async with telegram_transport(app.router, server):
            server.push_command("/settings language en", chat_id=group, user_id=7)
            server.push_command("/cite 诗119", chat_id=group, user_id=8)
            sent = (await server.wait_for("sendMessage", 2))[-1]
            pages = [sent.params["text"]]
            for page in range(3, 12):
                keyboard = sent.params.get("reply_markup", {}).get("inline_keyboard", [])
                labels = {b["text"]: b["callback_data"] for row in keyboard for b in row}
                if "下一页" not in labels:
                    break
                server.push_callback(labels["下一页"], user_id=9)
                sent = (await server.wait_for("sendMessage", page))[-1]
                pages.append(sent.params["text"])
    assert [v for page in pages for v in verses(page)] == list(range(1, PSALM_119 + 1))
    assert [f"第 {n}/6 页" in page for n, page in enumerate(pages, 1)] == [True] * 6
    assert "Page" not in "".join(pages) and "全段到此读完" in pages[-1]


# ---- a file typed with its command in a Discord DM -------------------------------------------


async def test_discord_dm_command_typed_with_a_file_reads_the_file(data_dir: Path) -> None:
    """In a DM, a typed command is answered like one in a Telegram private chat, but the file
    attached to it was dropped: `/ingest 测试之书` with the book attached was told to send the
    command "as the file's caption, with the file attached" — which is what the user did —
    and the book was not read. The attachment is now the command's file."""
    settings = app_settings(data_dir, dm_uploads=True)
    async with discord_app(settings) as (_, server):
        alice = server.member("alice")
        backend = server.env.backend
        dm = backend.get_dm_channel(alice.id)
        book = backend.store_attachments(dm.id, [("d.md", DOC.encode())])
        await alice.send_dm("/ingest 测试之书", attachments=book)
        await server.env.advance_time(1)  # a throttled final edit, if any
        await alice.send_dm("/sources")
        said = [m.content for m in alice.user.dm_channel.history() if m.author.bot]
    assert not any("caption" in s or "说明" in s for s in said), said
    assert any("已导入《测试之书》" in s for s in said), said
    assert "测试之书" in said[-1]  # on the DM's own shelf


# ---- a native poll answered after a restart, in a bot serving listed chats only ---------------


async def test_telegram_poll_vote_after_a_restart_counts_where_only_listed_chats_are_served(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """With ALLOWED_CHATS set, a vote in a native poll posted before the bot restarted was
    dropped without a word: a poll answer names no chat, the transport's memory of where its
    polls went is gone after a restart, and the answer was refused as coming from a chat that
    is not served. The ballot's own record (kept in SQLite) says where the poll is."""
    server, group = telegram_wire, -1001
    server.join(group)
    server.member_status[(group, 7)] = "administrator"
    settings = _wired(data_dir, server, allowed_chats=f"telegram:{group}")

    async def say(text: str, user_id: int = 7) -> str:
        return await _said(server, text, group, user_id)

    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        async with telegram_transport(app.router, server):
            await say("/chapter next")
            await say("/chapter propose 夜渡 | 林远渡河", user_id=8)
            await say("/chapter propose 山火 | 山中起火", user_id=9)
            await say("/chapter close")
            [poll] = await server.wait_for("sendPoll")
            server.push_poll_answer(server.last_poll_id(), [0], user_id=8)
            await say("/help", user_id=10)  # one update at a time: the answer is handled
        async with telegram_transport(app.router, server):  # the process restarted
            server.push_poll_answer(server.last_poll_id(), [1], user_id=9)
            status = await say("/chapter status", user_id=10)
    assert poll.params["chat_id"] == group
    assert "夜渡 — 1 票" in status and "山火 — 1 票" in status, status


# ---- a press made while the bot was down ------------------------------------------------------


async def test_telegram_next_page_pressed_while_the_bot_was_down_still_comes(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """Presses made while the bot was down are delivered when it restarts, too late to answer
    the press itself ("query is too old"): the failed answer ended the update, and the page the
    reader asked for never came. The press's reply still goes to the chat; the button's own
    pop-up is a courtesy."""
    server, group = telegram_wire, -1001
    server.join(group)
    settings = _wired(data_dir, server)
    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        async with telegram_transport(app.router, server):
            server.push_command("/cite 诗119", chat_id=group, user_id=8)
            [first] = await server.wait_for("sendMessage")
        keyboard = first.params["reply_markup"]["inline_keyboard"]
        server.push_callback(keyboard[0][0]["callback_data"], user_id=9)  # the bot is down
        server.push_callback("cite:9:s:Ps.119-Ps.119", user_id=9)  # a page that is not there
        server.expire_callback_queries()
        async with telegram_transport(app.router, server):  # back up
            sent = await server.wait_for("sendMessage", 3)
    late = server.expect_errors()
    assert [c.method for c in late] == ["answerCallbackQuery"] * 2
    assert verses(sent[1].params["text"]) == list(range(31, 61))
    assert "第 2/6 页" in sent[1].params["text"]
    assert "没有第 9 页" in sent[2].params["text"]  # its pop-up is gone: said in the chat


# ---- one chat never reads another's change log ------------------------------------------------


async def test_telegram_operator_reading_the_log_in_a_group_shows_that_group_only(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """An operator may read every chat's change log, but `/sources log` typed in group A put
    group B's entries (who changed what, B's chat id) in front of all of A's members. In a
    group it is that group's log; the whole log is for the operator's DM (and the console)."""
    server, a, b, operator = telegram_wire, -1001, -1002, 900
    server.join(a)
    server.join(b, "乙组")
    server.member_status[(b, 21)] = "administrator"
    settings = _wired(data_dir, server, operators=f"telegram:{operator}")
    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        async with telegram_transport(app.router, server):
            await _said(server, "/settings script 繁体", b, 21)
            await _said(server, "/settings language en", a, operator)
            in_a = await _said(server, "/sources log", a, operator)
            in_dm = await _said(server, "/sources log", operator, operator)
    assert "/settings language en" in in_a
    assert "telegram:-1002" not in in_a and "繁体" not in in_a, in_a
    assert "telegram:-1002" in in_dm and "telegram:-1001" in in_dm


# ---- a refused slash command gives back what was typed ----------------------------------------


async def test_discord_a_refused_long_option_is_given_back_to_edit(tmp_path: Path) -> None:
    """Discord keeps nothing of a slash command once it is sent: a 1,200-character question
    refused as too long (or any refusal) left the asker with the limit and without their text,
    to type again from nothing. On Discord a refusal now carries back, privately, every long
    option as typed; a short one (a title) is easy to type again and is not repeated."""
    question = "神圣分赐与召会的建造有什么关系？" * 75  # 1,200 characters: the limit is 1,000
    async with discord_env(tmp_path) as env:
        member = env.server.member("alice")
        refused = await member.slash(env.server.channel, "ask", question=question)
        short = await member.slash(env.server.channel, "ask", question=" ")
    assert refused.ephemeral and "太长了（1200 字），上限 1000 字" in answer_text(refused)
    [kept] = [a for m in [refused.response, *refused.followups] if m for a in m.attachments]
    assert kept.filename == "typed.txt" and (await kept.read()).decode() == question
    assert "你输入的内容附在这里" in answer_text(refused)
    assert env.scholar.calls == []
    assert "附在这里" not in answer_text(short)
    assert not [a for m in [short.response, *short.followups] if m for a in m.attachments]


# ---- a command sent as a photo's caption ------------------------------------------------------


async def test_telegram_a_command_captioning_a_photo_is_answered(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """A private chat always gets an answer, but a photo with a command as its caption got
    none: only texts and documents reached the router. `/ask` written under a photo is asked;
    `/ingest` with a photo of a page is told which files it takes."""
    server = telegram_wire
    async with App(_wired(data_dir, server), embedder=HashEmbedder(DIM)) as app:
        async with telegram_transport(app.router, server):
            server.push_photo("/ask 神圣的分赐是什么？")
            server.push_photo("/ingest 扫描的一页")
            server.push_photo("")  # a photo alone: the private chat's pointer to /help
            asked, ingest, alone = await server.wait_for("sendMessage", 3)
    assert "分赐" in asked.params["text"] and "【" in asked.params["text"]
    assert "不支持这种文件" in ingest.params["text"] and "PDF" in ingest.params["text"]
    assert "/help" in alone.params["text"]
