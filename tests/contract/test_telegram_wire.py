"""The loopback Bot API (`tests/stubs/telegram_server.py`) against python-telegram-bot's own
HTTPXRequest: it answers what Telegram answers, and refuses what Telegram refuses, with
Telegram's error bodies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from bot.transports.telegram_flood import seconds
from tests.stubs.fixtures import assert_clean
from tests.stubs.telegram_server import CONFLICT, TelegramServer, parse_html

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
        ("𠀀" * 2049, "Message is too long"),  # CJK Extension B: two units each
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
    await bot.send_message(42, "𠀀" * 2048)  # 2,048 code points, 4,096 UTF-16 units


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


# ---- failing closed: a malformed request fails its test -------------------------------------

MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    # a real Bot API method the bot never calls has no handler: refused as unknown
    ("deleteMessage", {"chat_id": 42, "message_id": 1}, "Not Found"),
    ("sendMessage", {"chat_id": 42, "text": "你好", "reply_to_message_id": 3}, "[stub]"),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "parse_mode": "BBCode"},
        "unsupported parse_mode",
    ),
    ("sendMessage", {"chat_id": 42, "text": "*你好*", "parse_mode": "MarkdownV2"}, "[stub]"),
    ("sendMessage", {"chat_id": 42, "text": "你好", "disable_notification": "True!"}, "[stub]"),
    ("sendMessage", {"chat_id": "", "text": "你好"}, "chat_id is empty"),
    ("sendMessage", {"chat_id": "@readers", "text": "你好"}, "[stub]"),
    ("sendMessage", {"chat_id": 42}, "message text is empty"),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "link_preview_options": "{"},
        "can't parse link preview options JSON object",
    ),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "link_preview_options": {"is_disabled": "yes"}},
        'field "is_disabled" must be of type Boolean',
    ),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "reply_markup": "{"},
        "can't parse reply keyboard markup JSON object",
    ),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "reply_markup": {"inline_keyboard": [["投"]]}},
        "InlineKeyboardButton must be an Object",
    ),
    (
        "sendMessage",
        {"chat_id": 42, "text": "你好", "reply_markup": {"inline_keyboard": [[{"text": "投"}]]}},
        "Text buttons are unallowed in the inline keyboard",
    ),
    ("sendMessage", {"chat_id": 42, "text": "你好", "message_thread_id": "abc"}, "[stub]"),
    ("sendMessage", {"chat_id": 42, "text": "你好", "message_thread_id": 7}, "thread not found"),
    ("editMessageText", {"chat_id": 42, "message_id": 1, "text": "道" * 4097}, "MESSAGE_TOO_LONG"),
    ("sendChatAction", {"chat_id": 42, "action": "dancing"}, "wrong parameter action"),
    ("sendPoll", {"chat_id": 42, "question": "?", "options": ["甲"]}, "POLL_OPTIONS_INVALID"),
    (
        "sendPoll",
        {"chat_id": 42, "question": "?", "options": ["甲", "乙"], "type": "quiz"},
        "[stub]",
    ),
    ("sendPoll", {"chat_id": 42, "question": "?", "options": "甲,乙"}, "can't parse options JSON"),
    ("sendDocument", {"chat_id": 42}, "there is no document in the request"),
    ("sendDocument", {"chat_id": 42, "document": "BQACAgIAAxkBAAIB"}, "[stub]"),
    (
        "setMyCommands",
        {"commands": [{"command": "Ask!", "description": "问"}]},
        "BOT_COMMAND_INVALID",
    ),
    ("setMyCommands", {"commands": [], "language_code": "zh-hans"}, "LANG_CODE_INVALID"),
    ("getFile", {"file_id": "nope"}, "invalid file_id"),
    ("getUpdates", {"offset": "next"}, "[stub]"),
    ("answerCallbackQuery", {"callback_query_id": "1", "show_alert": "sometimes"}, "[stub]"),
    ("getChatAdministrators", {"chat_id": 42}, "no administrators in the private chat"),
]


@pytest.mark.filterwarnings("ignore:Please use 'Bot")  # do_api_request on purpose
@pytest.mark.parametrize(("method", "params", "error"), MALFORMED)
async def test_a_malformed_request_is_refused_and_fails_the_test(
    bot: Bot, telegram_wire: TelegramServer, method: str, params: dict[str, Any], error: str
) -> None:
    with pytest.raises(TelegramError):
        await bot.do_api_request(method, api_kwargs=params)
    with pytest.raises(AssertionError, match="refused"):
        assert_clean(telegram_wire)  # what the fixture does after a test that made it
    [call] = telegram_wire.expect_errors()
    assert call.method == method and error in call.error
    assert call.status in (400, 404) and not call.crash


async def test_an_exception_inside_the_server_is_recorded_and_fails_the_test(
    bot: Bot, telegram_wire: TelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(telegram_wire, "_m_getChatAdministrators", boom)
    with pytest.raises(NetworkError):
        await bot.get_chat_administrators(GROUP)
    [call] = telegram_wire.errors()
    assert call.status == 500 and call.error == "Internal Server Error"
    assert "RuntimeError: boom" in call.crash
    assert telegram_wire.expect_errors() == []  # a crash is never an expected refusal
    with pytest.raises(AssertionError, match="boom"):
        assert_clean(telegram_wire)
    assert telegram_wire.take_crashes() == [call]


async def test_a_body_the_server_cannot_read_is_a_recorded_crash(
    telegram_wire: TelegramServer,
) -> None:
    url = f"{telegram_wire.api_base}{telegram_wire.token}/sendDocument"
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            url,
            content=b"--zzz\r\nno part headers, no end",
            headers={"Content-Type": "multipart/form-data; boundary=zzz"},
        )
    assert answer.status_code == 500
    assert answer.json() == {"ok": False, "error_code": 500, "description": "Internal Server Error"}
    [call] = telegram_wire.take_crashes()
    assert call.method == "sendDocument" and call.crash


async def test_other_paths_and_downloads_are_refused_and_recorded(
    telegram_wire: TelegramServer,
) -> None:
    async with httpx.AsyncClient() as client:
        lost = await client.get(f"http://127.0.0.1:{telegram_wire.port}/getMe")
        stolen = await client.get(f"{telegram_wire.file_base}999:WRONG/doc1")
    assert lost.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
    assert stolen.status_code == 401
    assert [c.status for c in telegram_wire.expect_errors()] == [404, 401]


# ---- forum topics --------------------------------------------------------------------------------


async def test_message_thread_id_must_name_an_open_topic_of_a_forum(
    bot: Bot, telegram_wire: TelegramServer
) -> None:
    forum = -100777
    telegram_wire.join(forum, "读经论坛", forum=True)
    topic = telegram_wire.open_topic(forum, "以弗所书")
    sent = await bot.send_message(forum, "在话题里", message_thread_id=topic)
    assert sent.message_thread_id == topic and sent.is_topic_message
    for thread in (1, topic + 1):  # the General topic; a topic that does not exist
        with pytest.raises(BadRequest, match="Message thread not found"):
            await bot.send_message(forum, "错", message_thread_id=thread)
    telegram_wire.close_topic(forum, topic)
    with pytest.raises(BadRequest, match="Topic_closed"):
        await bot.send_chat_action(forum, "typing", message_thread_id=topic)
    assert len(telegram_wire.expect_errors()) == 3
    # A group without topics ignores the parameter, as Telegram does.
    plain = await bot.send_message(GROUP, "普通群", message_thread_id=topic)
    assert plain.message_thread_id is None


# ---- one poller -------------------------------------------------------------------------------


async def test_a_second_long_poll_ends_the_first_with_409(
    bot: Bot, telegram_wire: TelegramServer
) -> None:
    async with Bot(telegram_wire.token, base_url=telegram_wire.api_base) as second:
        first = asyncio.create_task(bot.get_updates(timeout=30))
        await telegram_wire.wait_until(lambda: telegram_wire.waiting_polls == 1)
        assert await second.get_updates(timeout=0) == ()  # answered at once: no conflict
        assert not first.done()
        other = asyncio.create_task(second.get_updates(timeout=30))
        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await first
        await telegram_wire.wait_until(lambda: telegram_wire.waiting_polls == 1)
        update = telegram_wire.push_command("/help")
        assert [u.update_id for u in await other] == [update["update_id"]]
    [refused] = telegram_wire.expect_errors()
    assert (refused.status, refused.error) == (409, CONFLICT)


# ---- flood control ------------------------------------------------------------------------------


async def test_flood_limits_per_chat_per_group_and_for_the_whole_bot(
    bot: Bot, telegram_wire: TelegramServer
) -> None:
    clock = telegram_wire.time

    async def refused(chat_id: int) -> float:
        with pytest.raises(RetryAfter) as info:
            await bot.send_message(chat_id, "太快了")
        [call] = telegram_wire.expect_errors()
        wait = seconds(info.value.retry_after)
        assert call.status == 429 and call.error == f"Too Many Requests: retry after {wait:.0f}"
        return wait

    for i in range(3):  # a burst of three in one chat …
        await bot.send_message(42, f"第{i}条")
    assert await refused(42) == 3  # … then about one a second
    clock.advance(3)
    await bot.send_message(42, "又可以了")

    for i in range(20):  # 20 a minute in a group, even at one a second
        await bot.send_message(GROUP, f"群{i}")
        clock.advance(1)
    assert await refused(GROUP) == 40
    clock.advance(40)
    await bot.send_message(GROUP, "又可以了")

    clock.advance(60)
    for chat_id in range(1001, 1031):  # 30 a second for the whole bot
        telegram_wire.join(chat_id)
        await bot.send_message(chat_id, "通知")
    telegram_wire.join(1031)
    assert await refused(1031) == 1
    clock.advance(1)
    await bot.send_message(1031, "又可以了")
