"""Discord transport end to end, on the real wire: discord.py's own HTTP and gateway code
against the loopback Discord (`discord_wire`). Interactions arrive over the gateway websocket as
INTERACTION_CREATE dispatches; the server refuses what Discord refuses (a second acknowledgement,
a followup before the acknowledgement, content over 2,000 characters …) and the fixture fails a
test whose transport made a request Discord would have refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.chats import ChatSettings
from bot.commands.scholar import book_suggestions
from bot.ratelimit import RateLimiter
from bot.transports.discord import DiscordTransport
from novel import api as novel_api
from retrieval.reply import Attachment, Block, Button, Poll, Reply
from retrieval.requests import Actor, AskRequest
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.discord_server import (
    APP_ID,
    CHANNEL_ID,
    MANAGE_GUILD,
    MOD_ROLE_ID,
    DiscordServer,
    attachment,
    autocomplete,
    button_click,
    slash,
    snowflake,
)
from tests.stubs.fixtures import discord_settings

FakeScholar = RecordingScholar
FakeNovels = RecordingNovels


Env = tuple[DiscordTransport, DiscordServer, FakeScholar, FakeNovels]


@pytest.fixture
async def env(discord_wire: DiscordServer, tmp_path: Path) -> AsyncIterator[Env]:
    scholar, novels = FakeScholar(), FakeNovels()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, limiter=RateLimiter(0, 0), chats=chats)
        transport = DiscordTransport(router, discord_settings(discord_wire))
        transport.edit_interval_s = 0.0
        async with transport:
            yield transport, discord_wire, scholar, novels


def followups(stub: DiscordServer, payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [c.json for c in stub.answers(payload, "POST", f"/webhooks/{APP_ID}/")]


async def settle(stub: DiscordServer) -> None:
    """Let the transport finish what it was doing: a later interaction is answered (discord.py
    handles interactions in arrival order, each far quicker than a round trip)."""
    probe = await stub.interact(slash("help", user_id=snowflake()))
    await stub.wait_answers(probe, "POST", "/callback")


async def test_start_syncs_commands_from_the_table_and_connects(env: Env) -> None:
    _, stub, _, _ = env
    [sync] = stub.find("PUT", f"/applications/{APP_ID}/commands")
    commands = {c["name"]: c for c in sync.json}
    assert set(commands) == {"ask", "cite", "chapter", "novel", "settings", "start", "help"}
    chapter = commands["chapter"]
    subs = {o["name"]: o for o in chapter["options"]}
    assert set(subs) == {
        "next",
        "propose",
        "vote",
        "submit",  # issue 12: the group writes the winning chapter itself
        "show",
        "revise",
        "history",
        "rollback",
        "delete",
        "close",
    }
    assert all(o["type"] == 1 for o in subs.values())
    assert chapter["description"] == "小说接龙：提议、投票、写作与修订章节"
    assert chapter["description_localizations"]["en-US"].startswith("Collaborative novel")
    revise = {o["name"]: o for o in subs["revise"]["options"]}
    assert revise["file"]["type"] == 11 and revise["chapter"]["required"] is True
    assert commands["cite"]["options"][0]["autocomplete"] is True
    export = commands["novel"]["options"][1]["options"][0]
    assert [c["value"] for c in export["choices"]] == ["md", "epub"]
    await stub.identified.wait()  # the gateway: HELLO → IDENTIFY (token checked) → READY
    identify = next(f for f in stub.gateway_frames if f.get("op") == 2)
    assert identify["d"]["token"] == "stub-token"


async def test_ask_defers_then_follows_up(env: Env) -> None:
    _transport, stub, scholar, _ = env
    scholar.reply = Reply(lang="zh", blocks=[Block("经纶", "heading"), Block("神的经纶是*分赐*。")])
    payload = await stub.interact(slash("ask", {"question": "什么是经纶？"}, permissions=1 << 5))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    [callback] = stub.answers(payload, "POST", "/callback")
    assert callback.json["type"] == 5  # deferred, "thinking"
    assert post.json["content"] == "**经纶**\n\n神的经纶是\\*分赐\\*。"
    assert post.json["allowed_mentions"]["parse"] == []
    actor, request = scholar.calls[0]
    assert request == AskRequest("什么是经纶？")
    assert actor.platform == "discord" and actor.channel_id == CHANNEL_ID
    assert actor.lang == "zh"


async def test_subcommand_reaches_the_novel_service(env: Env) -> None:
    _transport, stub, _, novels = env
    payload = await stub.interact(slash("chapter", {"option": 2}, sub="vote"))
    await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    [(actor, request)] = novels.calls
    assert request == novel_api.Vote(2) and not actor.is_admin


@pytest.mark.parametrize(
    ("name", "sub", "options", "needle"),
    [
        ("chapter", "propose", {"title": " \u200b"}, "缺少参数「标题」"),
        ("ask", None, {"question": "   "}, "缺少参数「问题」"),
    ],
)
async def test_bad_options_get_an_ephemeral_chinese_usage_error(
    env: Env, name: str, sub: str | None, options: dict[str, Any], needle: str
) -> None:
    _transport, stub, scholar, novels = env
    payload = await stub.interact(slash(name, options, sub=sub))
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    await settle(stub)
    assert callback.json["type"] == 4  # answered at once, not deferred
    assert callback.json["data"]["flags"] & 64  # ephemeral
    assert needle in callback.json["data"]["content"]
    assert scholar.calls == [] and novels.calls == []


async def test_the_servers_language_decides_not_the_users_locale(env: Env) -> None:
    _, stub, scholar, _ = env
    payload = await stub.interact(slash("ask", {"question": " "}, locale="en-US"))
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    assert "缺少参数「问题」" in callback.json["data"]["content"]
    payload = await stub.interact(
        slash("settings", {"value": "en"}, sub="language", roles=(MOD_ROLE_ID,))
    )
    [done] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")  # deferred, then
    assert done.json["content"].startswith("Done: this")  # the confirmation, in the new language
    payload = await stub.interact(slash("ask", {"question": " "}))  # a zh-CN client
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    assert "Missing argument" in callback.json["data"]["content"]
    payload = await stub.interact(slash("ask", {"question": "什么是经纶？"}))  # Chinese words
    await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    assert scholar.calls[-1][0].lang == "zh"


async def test_outdated_command_signature_gets_a_private_notice(env: Env) -> None:
    _transport, stub, _, novels = env
    # Discord never sends a required option missing unless its copy of the command is stale.
    payload = await stub.interact(slash("chapter", {"chapter": 3}, sub="rollback"))
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    await settle(stub)
    assert callback.json["data"]["flags"] & 64 and "命令" in callback.json["data"]["content"]
    assert novels.calls == []


async def test_outdated_notice_follows_the_servers_language_not_the_users_locale(
    env: Env,
) -> None:
    _transport, stub, _, novels = env
    payload = await stub.interact(
        slash("settings", {"value": "en"}, sub="language", roles=(MOD_ROLE_ID,))
    )
    await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    payload = await stub.interact(slash("chapter", {"chapter": 3}, sub="rollback"))  # zh-CN
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    await settle(stub)
    assert callback.json["data"]["flags"] & 64
    assert "This command was updated" in callback.json["data"]["content"]
    assert novels.calls == []


async def test_late_usage_error_replaces_the_thinking_message_privately(env: Env) -> None:
    _transport, stub, _, novels = env
    # no file attached (by an admin: Manage Server)
    payload = await stub.interact(
        slash("novel", {"action": "set"}, sub="blueprint", permissions=MANAGE_GUILD)
    )
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    await settle(stub)
    assert stub.answers(payload, "POST", "/callback")[0].json["type"] == 5
    assert stub.answers(payload, "DELETE", "/messages/@original")
    assert post.json["flags"] & 64 and "JSON 文件" in post.json["content"]
    assert novels.calls == []


async def test_service_error_after_defer_is_private(env: Env) -> None:
    _transport, stub, _, novels = env
    novels.reply = Reply.error("本轮已结束", lang="zh")
    payload = await stub.interact(slash("chapter", sub="close", permissions=MANAGE_GUILD))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    assert stub.answers(payload, "DELETE", "/messages/@original")
    assert post.json["flags"] & 64 and "本轮已结束" in post.json["content"]


async def test_poll_becomes_buttons_and_a_click_presses(env: Env) -> None:
    _transport, stub, _, novels = env
    novels.reply = Reply(
        lang="zh",
        blocks=[Block("投票开始")],
        poll=Poll("下一章写什么？", ("夜渡", "山门"), "vote:r9:", "r9"),
        buttons=[Button("结束投票", "close:r9")],
    )
    opened = await stub.interact(slash("chapter", sub="next", permissions=MANAGE_GUILD))
    [post] = await stub.wait_answers(opened, "POST", f"/webhooks/{APP_ID}/")
    buttons = [b for row in post.json["components"] for b in row["components"]]
    assert [b["custom_id"] for b in buttons] == ["vote:r9:1", "vote:r9:2", "close:r9"]
    assert buttons[0]["label"] == "1. 夜渡" and buttons[0]["type"] == 2

    novels.reply = Reply.text("已投给第 2 项", lang="zh")
    sent = [(b["label"], b["custom_id"]) for b in buttons]
    click = await stub.interact(button_click("vote:r9:2", sent, user_id=snowflake()))
    [posted] = await stub.wait_answers(click, "POST", f"/webhooks/{APP_ID}/")
    assert novels.calls[-1][1] == novel_api.Vote(2, "r9")
    [callback] = stub.answers(click, "POST", "/callback")
    assert callback.json["type"] == 5 and callback.json["data"]["flags"] & 64
    assert posted.json["content"] == "已投给第 2 项"


async def test_long_reply_is_split_in_order(env: Env) -> None:
    _transport, stub, scholar, _ = env
    scholar.reply = Reply(
        lang="zh", blocks=[Block(f"第{i:03d}段。" + "道" * 300) for i in range(20)]
    )
    payload = await stub.interact(slash("ask", {"question": "长回答"}))
    await stub.wait_until(lambda: "第019段" in stub.contents())
    texts = [p["content"] for p in followups(stub, payload)]
    assert len(texts) >= 4  # each one accepted by the server's 2,000-character limit
    order = [int(t[i + 1 : i + 4]) for t in texts for i in range(len(t)) if t[i] == "第"]
    assert order == list(range(20))


async def test_mentions_are_escaped_and_never_ping(env: Env) -> None:
    _transport, stub, scholar, _ = env
    scholar.reply = Reply.text("@everyone @here <@123> 看这里", lang="zh")
    payload = await stub.interact(slash("ask", {"question": "提及"}))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    assert "@everyone" not in post.json["content"] and "@here" not in post.json["content"]
    assert post.json["allowed_mentions"] == {"parse": []}


async def test_attachment_is_downloaded_and_passed_as_bytes(env: Env) -> None:
    _transport, stub, _, novels = env
    data = '{"setting": "山城"}'.encode()
    att_id, resolved = attachment(stub, "bp.json", data)
    payload = await stub.interact(
        slash(
            "novel",
            {"action": "set", "file": ("attachment", att_id)},
            sub="blueprint",
            attachments=resolved,
            permissions=MANAGE_GUILD,
        ),
    )
    await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    assert [c[1] for c in novels.calls] == [novel_api.BlueprintSet(data)]


async def test_oversized_attachment_is_refused(env: Env) -> None:
    _transport, stub, _, novels = env
    att_id, resolved = attachment(stub, "big.txt", b"x", size=5 * 1024 * 1024)
    payload = await stub.interact(
        slash(
            "chapter",
            {"chapter": 2, "file": ("attachment", att_id)},
            sub="revise",
            attachments=resolved,
        ),
    )
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    await settle(stub)
    assert "文件太大" in callback.json["data"]["content"] and callback.json["data"]["flags"] & 64
    assert novels.calls == [] and not stub.find("GET", "/cdn/")


async def test_streaming_edits_the_original_response(env: Env) -> None:
    _transport, stub, scholar, _ = env
    scholar.partials = ["神圣", "神圣的分赐"]
    scholar.reply = Reply.text("神圣的分赐是三一神的工作。", lang="zh")
    payload = await stub.interact(slash("ask", {"question": "分赐"}))
    edits = await stub.wait_answers(payload, "PATCH", "/messages/@original", count=3)
    await settle(stub)
    assert [e.json["content"] for e in edits] == [
        "神圣",
        "神圣的分赐",
        "神圣的分赐是三一神的工作。",
    ]
    assert all(e.json["allowed_mentions"] == {"parse": []} for e in edits)
    assert followups(stub, payload) == []


async def test_chapter_attachment_goes_as_a_file(env: Env) -> None:
    _transport, stub, _, novels = env
    novels.reply = Reply(
        lang="zh",
        blocks=[Block("第 3 章《夜渡》")],
        attachments=[Attachment("chapter-3.md", "# 夜渡\n\n正文".encode())],
    )
    payload = await stub.interact(slash("chapter", {"chapter": 3}, sub="show"))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    assert post.files == {"chapter-3.md": "# 夜渡\n\n正文".encode()}


async def test_cite_autocomplete_suggests_books(env: Env) -> None:
    _transport, stub, _, _ = env
    payload = await stub.interact(autocomplete("cite", "reference", "弗"))
    [callback] = await stub.wait_answers(payload, "POST", "/callback")
    assert callback.json["type"] == 8
    assert {c["value"] for c in callback.json["data"]["choices"]} >= {"弗"}
    assert book_suggestions("弗1:10") == [("弗1:10", "弗1:10")]


async def test_send_posts_to_the_channel(env: Env) -> None:
    transport, stub, _, _ = env
    target = Actor("discord", "g", "0", channel_id=CHANNEL_ID)
    await transport.send(target, Reply.text("第 3 章已完成 @everyone", lang="zh"))
    [post] = stub.find("POST", f"/channels/{CHANNEL_ID}/messages")
    assert post.json["allowed_mentions"] == {"parse": []}
    assert "@everyone" not in post.json["content"]


async def test_a_429_is_honoured_and_the_message_still_arrives(env: Env) -> None:
    transport, stub, _, _ = env
    stub.rate_limit_once[f"/channels/{CHANNEL_ID}/messages"] = 0.3
    await transport.send(
        Actor("discord", "g", "0", channel_id=CHANNEL_ID), Reply.text("第 4 章", lang="zh")
    )
    attempts = [c for c in stub.calls if c.path == f"/channels/{CHANNEL_ID}/messages"]
    # the rate-limited attempt, then the retry (discord.py sleeps retry_after in between)
    assert [c.status for c in attempts] == [429, 200]
    assert "第 4 章" in attempts[-1].json["content"]


async def test_a_429_on_a_followup_is_honoured(env: Env) -> None:
    _transport, stub, scholar, _ = env
    stub.rate_limit_once[f"/webhooks/{APP_ID}/"] = 0.2
    payload = await stub.interact(slash("ask", {"question": "什么是经纶？"}))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    attempts = [c for c in stub.calls if c.interaction == payload["id"] and c.method == "POST"]
    assert [c.status for c in attempts] == [200, 429, 200]  # callback, limited, retried
    assert post.json["content"] == "answer"
    assert len(scholar.calls) == 1  # retried at the HTTP layer, not re-run


async def test_a_dm_never_meets_silence_a_server_channel_stays_quiet(env: Env) -> None:
    _, stub, scholar, _ = env
    hello = await stub.post_message("你好")  # MESSAGE_CREATE in a DM channel, no guild
    dm = hello["channel_id"]
    await stub.post_message("/foo 1", channel_id=dm)
    await stub.wait_until(lambda: len(stub.posted_in(dm)) >= 2)
    plain, unknown = stub.posted_in(dm)
    assert plain.startswith("请以 / 开头输入命令") and "/help" in plain and "\n" not in plain
    assert unknown.startswith("未知命令：/foo") and "/help" in unknown
    # Never answered: a server channel, the bot's own DM message, another bot's DM.
    await stub.post_message("大家好", dm=False)
    await stub.post_message(f"<@{APP_ID}> /foo", dm=False)  # content delivered: it mentions us
    await stub.post_message("你好", channel_id=dm, user_id=APP_ID, name="baibao", bot=True)
    other = await stub.post_message("你好", user_id=snowflake(), name="dice", bot=True)
    # A later DM is answered once the earlier messages were handled (each ignored one returns
    # before its handler first awaits, and handlers start in arrival order).
    await stub.post_message("what can you do", channel_id=dm)
    await stub.wait_until(lambda: len(stub.posted_in(dm)) >= 3)
    assert stub.posted_in(dm)[2].startswith("Commands start with /")
    assert len(stub.posted_in(dm)) == 3
    assert stub.posted_in(CHANNEL_ID) == [] and stub.posted_in(other["channel_id"]) == []
    assert scholar.calls == []
