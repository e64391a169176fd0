"""The loopback Bot API (`tests/stubs/telegram_server.py`) against python-telegram-bot's own
HTTPXRequest: it answers what Telegram answers, and refuses what Telegram refuses, with
Telegram's error bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode
from telegram.error import BadRequest, EndPointNotFound, InvalidToken, RetryAfter

from tests.stubs.telegram_server import TelegramServer, parse_html

GROUP = -100123


@pytest.fixture
async def bot(telegram_wire: TelegramServer) -> AsyncIterator[Bot]:
    telegram_wire.join(42)
    telegram_wire.join(GROUP)
    async with Bot(
        telegram_wire.token,
        base_url=telegram_wire.api_base,
        base_file_url=telegram_wire.file_base,
    ) as bot:
        yield bot


async def test_get_me_and_send_message(bot: Bot, telegram_wire: TelegramServer) -> None:
    assert bot.username == "baibao_bot"
    sent = await bot.send_message(42, "<b>经纶</b> &amp; 分赐", parse_mode=ParseMode.HTML)
    assert sent.chat.id == 42 and sent.text == "经纶 & 分赐"
    [call] = telegram_wire.named("sendMessage")
    assert call.params["text"] == "<b>经纶</b> &amp; 分赐" and call.params["chat_id"] == 42


async def test_a_wrong_token_is_unauthorized(telegram_wire: TelegramServer) -> None:
    with pytest.raises(InvalidToken):
        async with Bot("999:WRONG", base_url=telegram_wire.api_base):
            pass
    [call] = telegram_wire.expect_errors()
    assert call.status == 401 and call.error == "Unauthorized"


async def test_unknown_method_is_404(bot: Bot, telegram_wire: TelegramServer) -> None:
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendTelepathy", api_kwargs={"chat_id": 42})
    [call] = telegram_wire.expect_errors()
    assert (call.status, call.error) == (404, "Not Found")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("道" * 4097, "Message is too long"),
        ("🙂" * 2049, "Message is too long"),  # 4098 UTF-16 units, as Telegram counts
        ("<b>未闭合", "Can't parse entities: can't find end tag corresponding to start tag"),
        ("<br>换行", 'Can\'t parse entities: unsupported start tag "br"'),
        ("a < b", "Can't parse entities: unexpected end of name token"),
        ("a & b", "Can't parse entities: unsupported html entity"),
        ("</i>", "Can't parse entities: unexpected end tag"),
        ("<b></b>", "Message text is empty"),
    ],
)
async def test_bad_html_and_long_text_are_refused(
    bot: Bot, telegram_wire: TelegramServer, text: str, error: str
) -> None:
    with pytest.raises(BadRequest) as info:
        await bot.send_message(42, text, parse_mode=ParseMode.HTML)
    assert info.value.message.lower().startswith(error.lower())
    [call] = telegram_wire.expect_errors()
    assert call.status == 400 and call.error.startswith("Bad Request: ")


async def test_the_limit_itself_is_accepted(bot: Bot) -> None:
    await bot.send_message(42, "道" * 4096)
    await bot.send_message(42, "&lt;" * 4096, parse_mode=ParseMode.HTML)  # 4096 after parsing


async def test_callback_data_over_64_bytes_is_refused(
    bot: Bot, telegram_wire: TelegramServer
) -> None:
    ok = InlineKeyboardMarkup([[InlineKeyboardButton("投", callback_data="v" * 64)]])
    await bot.send_message(42, "投票", reply_markup=ok)
    long = InlineKeyboardMarkup([[InlineKeyboardButton("投", callback_data="票" * 22)]])  # 66 B
    with pytest.raises(BadRequest, match="Button_data_invalid"):
        await bot.send_message(42, "投票", reply_markup=long)
    assert len(telegram_wire.expect_errors()) == 1


async def test_unknown_chat_and_missing_message(bot: Bot, telegram_wire: TelegramServer) -> None:
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(-999, "你好")
    with pytest.raises(BadRequest, match="Message to edit not found"):
        await bot.edit_message_text("新", chat_id=42, message_id=123456)
    sent = await bot.send_message(42, "旧")
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("旧", chat_id=42, message_id=sent.message_id)
    await bot.edit_message_text("新", chat_id=42, message_id=sent.message_id)
    assert len(telegram_wire.expect_errors()) == 3


async def test_callback_query_answered_once(bot: Bot, telegram_wire: TelegramServer) -> None:
    await bot.send_message(42, "选择")
    update = telegram_wire.push_callback("vote:r1:1")
    [received] = await bot.get_updates(timeout=5)
    assert received.update_id == update["update_id"]
    query_id = received.callback_query.id  # type: ignore[union-attr]
    assert await bot.answer_callback_query(query_id, "已投票")
    with pytest.raises(BadRequest, match="Query is too old"):
        await bot.answer_callback_query(query_id, "再一次")
    assert len(telegram_wire.expect_errors()) == 1


async def test_get_updates_long_polls_and_confirms(bot: Bot, telegram_wire: TelegramServer) -> None:
    first = telegram_wire.push_command("/help")
    [update] = await bot.get_updates(timeout=5)
    assert update.message is not None and update.message.text == "/help"
    # Not confirmed yet: the same update again; confirmed by the next offset: gone.
    assert [u.update_id for u in await bot.get_updates()] == [first["update_id"]]
    assert await bot.get_updates(offset=first["update_id"] + 1) == ()


async def test_documents_go_multipart_and_come_back(
    bot: Bot, telegram_wire: TelegramServer
) -> None:
    sent = await bot.send_document(42, b"# chapter\n", filename="chapter-1.md", caption="第1章")
    [call] = telegram_wire.named("sendDocument")
    assert call.files == {"document": b"# chapter\n"} and call.params["caption"] == "第1章"
    assert sent.document is not None
    file = await bot.get_file(sent.document.file_id)
    assert bytes(await file.download_as_bytearray()) == b"# chapter\n"


async def test_flood_control_answers_retry_after(bot: Bot, telegram_wire: TelegramServer) -> None:
    telegram_wire.flood("sendMessage", retry_after=3)
    with pytest.raises(RetryAfter) as info:
        await bot.send_message(42, "你好")
    assert info.value.retry_after in (3, __import__("datetime").timedelta(seconds=3))
    assert telegram_wire.expect_errors() == []  # injected: already expected


def test_parse_html_matches_telegrams_rules() -> None:
    assert parse_html('<a href="https://x">链接</a> <code>&lt;&#36;&gt;</code>') == "链接 <?>"
    assert parse_html("<blockquote>引文</blockquote><tg-spoiler>秘</tg-spoiler>") == "引文秘"
