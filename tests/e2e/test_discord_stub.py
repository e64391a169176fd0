"""The Discord transport on the real wire, for what SimCord cannot do (every other Discord test
runs in SimCord: `test_discord.py`, `test_discord_app.py`): discord.py's own HTTP and gateway
code against the loopback Discord (`discord_wire`, `tests/stubs/discord_server.py`, whose
docstring names each case). Interactions arrive over the gateway websocket as
INTERACTION_CREATE dispatches; the server refuses what Discord refuses, and the fixture fails a
test whose transport made a request Discord would have refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.actor import Actor
from bot.chats import ChatSettings
from bot.ratelimit import RateLimiter
from bot.reply import Reply
from bot.transports.discord import DiscordTransport
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.discord_server import (
    APP_ID,
    CHANNEL_ID,
    MOD_ROLE_ID,
    DiscordServer,
    attachment,
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
    # Answering takes longer than Discord's 3-s acknowledgement window (the server's clock).
    scholar.takes = novels.takes = lambda: discord_wire.clock.elapse(5)
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


async def test_start_logs_in_syncs_and_identifies_with_the_token(env: Env) -> None:
    """`start()` from settings alone: login over HTTP, the command sync, the gateway
    handshake (HELLO → IDENTIFY with the token → READY)."""
    _, stub, _, _ = env
    [sync] = stub.find("PUT", f"/applications/{APP_ID}/commands")
    assert {c["name"] for c in sync.json} == {
        "ask",
        "cite",
        "chapter",
        "novel",
        "settings",
        "start",
        "help",
    }
    await stub.identified.wait()
    identify = next(f for f in stub.gateway_frames if f.get("op") == 2)
    assert identify["d"]["token"] == "stub-token"


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


async def test_a_429_is_honoured_and_the_message_still_arrives(env: Env) -> None:
    transport, stub, _, _ = env
    stub.rate_limit_once[f"/channels/{CHANNEL_ID}/messages"] = 0.01
    await transport.send(
        Actor("discord", "g", "0", channel_id=CHANNEL_ID), Reply.text("第 4 章", lang="zh")
    )
    attempts = [c for c in stub.calls if c.path == f"/channels/{CHANNEL_ID}/messages"]
    # the rate-limited attempt, then the retry (discord.py sleeps retry_after in between)
    assert [c.status for c in attempts] == [429, 200]
    assert "第 4 章" in attempts[-1].json["content"]


async def test_a_429_on_a_followup_is_honoured(env: Env) -> None:
    _transport, stub, scholar, _ = env
    stub.rate_limit_once[f"/webhooks/{APP_ID}/"] = 0.01
    payload = await stub.interact(slash("ask", {"question": "什么是经纶？"}))
    [post] = await stub.wait_answers(payload, "POST", f"/webhooks/{APP_ID}/")
    attempts = [c for c in stub.calls if c.interaction == payload["id"] and c.method == "POST"]
    assert [c.status for c in attempts] == [200, 429, 200]  # callback, limited, retried
    assert post.json["content"] == "answer"
    assert len(scholar.calls) == 1  # retried at the HTTP layer, not re-run
