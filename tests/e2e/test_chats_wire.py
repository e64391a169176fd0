"""Chat platforms as people meet them: python-telegram-bot's own HTTPXRequest against the
loopback Bot API (updates by getUpdates long polling), `DiscordTransport`'s own client in
SimCord. One test per defect of issue 11 part A: silence, admin checks, menus, the chat's
language."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.chats import ChatSettings
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from tests.discord_sim import VirtualTime, answer_text, app_settings, simulated
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.fixtures import telegram_settings, telegram_transport
from tests.stubs.telegram_server import Call, TelegramServer

GROUP, CREATOR, MEMBER = -100, 7, 8


@dataclass
class Tg:
    server: TelegramServer
    transport: TelegramTransport
    scholar: RecordingScholar
    novels: RecordingNovels

    def sent(self) -> list[str]:
        return [str(c.params["text"]) for c in self.server.named("sendMessage")]


@pytest.fixture
async def tg(telegram_wire: TelegramServer, tmp_path: Path) -> AsyncIterator[Tg]:
    scholar, novels = RecordingScholar(), RecordingNovels()
    telegram_wire.member_status[(GROUP, CREATOR)] = "creator"
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, chats=chats)
        # One update at a time, in order: a test knows an update was handled (and stayed
        # silent) once the answer to a later one is in.
        transport = telegram_transport(router, telegram_wire)
        async with transport:
            yield Tg(telegram_wire, transport, scholar, novels)


async def answered(tg: Tg, *texts: str, chat_id: int = 42, user_id: int = 42, **kw: Any) -> None:
    """Push messages, then one /help as a marker: every earlier message has been handled once
    the marker's answer is in (the fixture's transport handles updates one at a time)."""

    def marker(call: Call) -> bool:
        return is_marker(str(call.params["text"]))

    before = len([c for c in tg.server.named("sendMessage") if marker(c)])
    for text in texts:
        tg.server.push_message(text, chat_id=chat_id, user_id=user_id, **kw)
    tg.server.push_message("/help@baibao_bot", chat_id=chat_id, user_id=user_id)
    await tg.server.wait_for("sendMessage", before + 1, where=marker)


def is_marker(text: str) -> bool:
    return text.startswith(("<b>百宝箱 · 可用命令", "<b>Baibao · commands"))


def before_marker(tg: Tg) -> list[str]:
    """What the bot said, without the markers."""
    return [t for t in tg.sent() if not is_marker(t)]


async def test_start_answers_in_private_chats_and_groups(tg: Tg) -> None:
    tg.server.push_message("/start")
    tg.server.push_message("/start@baibao_bot", chat_id=GROUP, user_id=MEMBER)
    sent = await tg.server.wait_for("sendMessage", 2)
    assert {c.params["chat_id"] for c in sent} == {42, GROUP}  # decoded by the server
    assert all(
        "我是百宝箱" in str(c.params["text"]) and "/ask" in str(c.params["text"]) for c in sent
    )


async def test_a_private_chat_never_meets_silence(tg: Tg) -> None:
    await answered(tg, "你好", "what can you do for me", "/nosuch 1")
    texts = before_marker(tg)
    assert len(texts) == 3 and all("/help" in t and "\n" not in t for t in texts)
    assert texts[1].startswith("Commands start with /")
    assert "未知命令：/nosuch" in texts[2]
    assert tg.scholar.calls == []


async def test_a_group_hears_only_its_own_commands(tg: Tg) -> None:
    chatter = ("大家好", "/nosuch 1", "/roll@dice_bot", "hello there everyone")
    await answered(tg, *chatter, chat_id=GROUP, user_id=MEMBER)
    assert before_marker(tg) == []
    await answered(tg, "/nosuch@baibao_bot", "/ask 神圣分赐", chat_id=GROUP, user_id=MEMBER)
    texts = before_marker(tg)
    assert "未知命令：/nosuch" in texts[0] and texts[1] == "answer"
    assert len(tg.scholar.calls) == 1


async def test_menus_are_set_per_language_independently(telegram_wire: TelegramServer) -> None:
    telegram_wire.fail("setMyCommands", 500, "Internal Server Error")
    transport = TelegramTransport(
        fake_router(RecordingScholar(), RecordingNovels()),
        telegram_settings(telegram_wire),
        clock=telegram_wire.clock,
    )
    async with transport:
        pass
    [refused] = [c for c in telegram_wire.errors() if c.method == "setMyCommands"]
    [menu] = telegram_wire.named("setMyCommands")  # the other language's menu still went
    assert "language_code" not in refused.params and menu.params["language_code"] == "en"
    commands = menu.params["commands"]
    commands = json.loads(commands) if isinstance(commands, str) else commands
    en = {c["command"]: c["description"] for c in commands}
    assert en["ask"].startswith("Ask the ministry corpus") and en["start"].startswith("Get")


async def test_admins_are_looked_up_only_when_needed_and_cached(tg: Tg) -> None:
    await answered(tg, "/ask 神圣分赐", "/cite 弗1:10", chat_id=GROUP, user_id=CREATOR)
    assert tg.server.named("getChatAdministrators") == []
    assert tg.server.named("getChatMember") == []
    await answered(tg, "/chapter close", "/chapter close", chat_id=GROUP, user_id=CREATOR)
    assert [a.is_admin for a, _ in tg.novels.calls] == [True, True]
    assert len(tg.server.named("getChatAdministrators")) == 1


async def test_an_admin_lookup_failure_is_said_once_never_a_wrong_refusal(
    tg: Tg, caplog: pytest.LogCaptureFixture
) -> None:
    tg.server.fail("getChatAdministrators", 502, "Bad Gateway")
    with caplog.at_level(logging.INFO):
        await answered(tg, "/chapter close", chat_id=GROUP, user_id=CREATOR)
    assert before_marker(tg) == ["暂时无法确认管理员身份，请稍后再试。"]
    assert tg.novels.calls == []
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "Bad Gateway" in warnings[0].getMessage()
    await answered(tg, "/chapter close", chat_id=GROUP, user_id=CREATOR)
    assert [a.is_admin for a, _ in tg.novels.calls] == [True]  # once Telegram can tell


async def test_an_anonymous_admin_is_an_admin_a_channel_is_not(tg: Tg) -> None:
    # An admin posting anonymously: `from` is GroupAnonymousBot, `sender_chat` the group.
    tg.server.push_as_chat("/chapter close", chat_id=GROUP)
    await answered(tg, chat_id=GROUP)
    [(actor, _)] = tg.novels.calls
    assert actor.is_admin and actor.user_id == str(GROUP)
    assert before_marker(tg) == ["ok"]
    # A post on behalf of another chat (a linked channel) is no admin of this group.
    tg.server.push_as_chat("/chapter close", chat_id=GROUP, channel_id=-1009)
    await answered(tg, chat_id=GROUP)
    assert len(tg.novels.calls) == 1
    assert before_marker(tg)[-1] == "只有管理员可以这样做。"
    assert tg.server.named("getChatAdministrators") == []  # neither needed a lookup


async def test_a_membership_change_refreshes_the_admin_list(tg: Tg) -> None:
    tg.server.member_status[(GROUP, MEMBER)] = "administrator"
    await answered(tg, "/chapter close", chat_id=GROUP, user_id=MEMBER)
    tg.server.member_status[(GROUP, MEMBER)] = "member"  # demoted …
    tg.server.push(chat_member_update(GROUP, MEMBER, "administrator", "member"))
    await answered(tg, "/chapter close", chat_id=GROUP, user_id=MEMBER)
    assert len(tg.server.named("getChatAdministrators")) == 2
    assert len(tg.novels.calls) == 1
    assert before_marker(tg)[-1] == "只有管理员可以这样做。"


async def test_a_groups_language_is_its_setting_not_each_members_app(tg: Tg) -> None:
    await answered(tg, "/chapter rollback 3", chat_id=GROUP, user_id=MEMBER, lang="en")
    assert before_marker(tg)[-1].startswith("缺少参数「版本号」")
    await answered(tg, "/settings language en", chat_id=GROUP, user_id=MEMBER)
    assert before_marker(tg)[-1] == "只有管理员可以这样做。"  # members may not change it
    await answered(tg, "/settings language en", chat_id=GROUP, user_id=CREATOR)
    assert before_marker(tg)[-1].startswith("Done: this chat now gets replies in English")
    await answered(tg, "/chapter rollback 3", chat_id=GROUP, user_id=MEMBER, lang="zh-hans")
    assert before_marker(tg)[-1].startswith("Missing argument “version”")
    await answered(tg, "/ask 什么是神圣的分赐？", chat_id=GROUP, user_id=MEMBER)
    await answered(tg, "/ask What is the divine dispensing?", chat_id=42)
    assert [a.lang for a, _ in tg.scholar.calls] == ["zh", "en"]  # the words decide


async def test_a_discord_servers_language_and_admins(tmp_path: Path) -> None:
    """Through SimCord (`DiscordTransport`'s own client): Manage Server makes an admin."""
    scholar, novels = RecordingScholar(), RecordingNovels()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, chats=chats)
        time = VirtualTime()
        transport = DiscordTransport(router, app_settings(tmp_path), clock=time.clock())
        async with simulated(transport, time) as server:
            plain, mod = server.member("member"), server.member("mod", server.mods)
            refused = await plain.slash(server.channel, "settings language", value="en")
            done = await mod.slash(server.channel, "settings language", value="en")
            blank = await plain.slash(server.channel, "ask", question=" ")
            member, admin, asked = (answer_text(r) for r in (refused, done, blank))
    assert member == "只有管理员可以这样做。"  # refused, and nothing changed
    assert admin.startswith("Done: this chat now gets replies in English")
    assert asked.startswith("Missing argument “question”")  # a client's locale, an en server


def chat_member_update(chat_id: int, user_id: int, old: str, new: str) -> dict[str, object]:
    user = {"id": user_id, "is_bot": False, "first_name": "U"}
    return {
        "chat_member": {
            "chat": {"id": chat_id, "type": "supergroup", "title": "读经小组"},
            "from": {"id": CREATOR, "is_bot": False, "first_name": "群主"},
            "date": 1_700_000_000,
            "old_chat_member": {"status": old, "user": user, **_admin_rights(old)},
            "new_chat_member": {"status": new, "user": user, **_admin_rights(new)},
        }
    }


def _admin_rights(status: str) -> dict[str, object]:
    if status != "administrator":
        return {}
    rights = (
        "can_manage_chat can_delete_messages can_manage_video_chats can_restrict_members "
        "can_promote_members can_change_info can_invite_users can_post_stories "
        "can_edit_stories can_delete_stories"
    ).split()
    return {"can_be_edited": False, "is_anonymous": False, **dict.fromkeys(rights, True)}
