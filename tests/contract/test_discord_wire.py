"""The loopback Discord (`tests/stubs/discord_server.py`) against discord.py's own HTTP and
gateway code: interactions arrive over the gateway websocket, and REST requests Discord would
refuse are refused with Discord's error bodies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import discord
import pytest

from tests.stubs.discord_server import (
    APP_ID,
    CHANNEL_ID,
    GUILD_ID,
    MOD_ROLE_ID,
    NOVEL_ROLE_ID,
    NOVEL_ROLE_NAME,
    DiscordServer,
    slash,
)

Seen = asyncio.Queue[discord.Interaction]


@pytest.fixture
async def client(discord_wire: DiscordServer) -> AsyncIterator[tuple[discord.Client, Seen]]:
    client = discord.Client(intents=discord.Intents.default())
    seen: Seen = asyncio.Queue()

    @client.event
    async def on_interaction(interaction: discord.Interaction) -> None:
        seen.put_nowait(interaction)

    await client.login(discord_wire.token)
    task = asyncio.create_task(client.connect(reconnect=False))
    await discord_wire.identified.wait()
    try:
        yield client, seen
    finally:
        await client.close()
        task.cancel()


async def _one(discord_wire: DiscordServer, seen: Seen, payload: dict) -> discord.Interaction:
    await discord_wire.interact(payload)
    async with asyncio.timeout(60):  # a hang guard
        return await seen.get()


async def test_gateway_handshake_and_an_interaction_dispatch(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    identify = next(f for f in discord_wire.gateway_frames if f.get("op") == 2)
    assert identify["d"]["token"] == discord_wire.token
    payload = slash("ask", {"question": "什么是经纶？"}, roles=(NOVEL_ROLE_ID, MOD_ROLE_ID))
    interaction = await _one(discord_wire, seen, payload)
    assert interaction.id == int(payload["id"]) and interaction.guild_id == int(GUILD_ID)
    member = interaction.user
    assert isinstance(member, discord.Member)
    assert member.guild_permissions.manage_guild and interaction.permissions.manage_guild
    assert [r.name for r in member.roles if not r.is_default()] == [NOVEL_ROLE_NAME, "版主"]
    plain = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    assert not plain.permissions.manage_guild and not plain.permissions.administrator


async def test_acknowledge_once_then_follow_up(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    interaction = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    await interaction.response.defer(thinking=True)
    with pytest.raises(discord.InteractionResponded):
        await interaction.response.defer()  # discord.py itself refuses the second
    await interaction.followup.send("答案")
    await interaction.edit_original_response(content="改过的答案")
    [followup] = discord_wire.followups()
    assert followup.json["content"] == "答案"


async def test_double_acknowledgement_is_40060(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    payload = slash("ask", {"question": "q"})
    interaction = await _one(discord_wire, seen, payload)
    await interaction.response.send_message("一")
    url = f"{discord_wire.api}/interactions/{payload['id']}/{payload['token']}/callback"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json={"type": 4, "data": {"content": "二"}}) as answer:
            assert answer.status == 400
            assert answer.headers["Content-Type"] == "application/json"
            assert await answer.json() == {
                "message": "Interaction has already been acknowledged.",
                "code": 40060,
            }
    assert len(discord_wire.expect_errors()) == 1


async def test_wrong_token_and_followup_before_ack(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    payload = slash("ask", {"question": "q"})
    interaction = await _one(discord_wire, seen, payload)
    with pytest.raises(discord.NotFound) as info:
        await interaction.followup.send("太早了")
    assert info.value.code == 10015  # Unknown Webhook
    async with aiohttp.ClientSession() as http:
        url = f"{discord_wire.api}/interactions/{payload['id']}/not-the-token/callback"
        async with http.post(url, json={"type": 5}) as answer:
            assert answer.status == 404 and (await answer.json())["code"] == 10062
    await interaction.response.defer()
    await interaction.followup.send("现在可以了")
    assert len(discord_wire.expect_errors()) == 2


async def test_content_and_embed_limits_are_50035(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    interaction = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    await interaction.response.defer()
    await interaction.followup.send("道" * 2000)
    with pytest.raises(discord.HTTPException) as info:
        await interaction.followup.send("道" * 2001)
    assert info.value.code == 50035 and "content" in str(info.value)
    with pytest.raises(discord.HTTPException) as info:
        await interaction.followup.send(embed=discord.Embed(title="题" * 257))
    assert info.value.code == 50035
    assert len(discord_wire.expect_errors()) == 2


async def test_bot_routes_need_the_bot_token(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    bot, _ = client
    channel = await bot.fetch_channel(int(CHANNEL_ID))
    assert isinstance(channel, discord.TextChannel)
    await channel.send("公告")
    async with aiohttp.ClientSession() as http:
        url = f"{discord_wire.api}/channels/{CHANNEL_ID}/messages"
        async with http.post(
            url, json={"content": "x"}, headers={"Authorization": "Bot nope"}
        ) as r:
            assert r.status == 401 and await r.json() == {"message": "401: Unauthorized", "code": 0}
        async with http.get(f"{discord_wire.api}/no/such/route") as r:
            assert r.status == 404 and await r.json() == {"message": "404: Not Found", "code": 0}
        async with http.post(
            url,
            data=b'{"content": "x"}',
            headers={"Authorization": f"Bot {discord_wire.token}", "Content-Type": "text/plain"},
        ) as r:
            assert r.status == 400
    with pytest.raises(discord.NotFound):
        await bot.http.send_message(1234, params=discord.http.handle_message_parameters("x"))
    assert len(discord_wire.expect_errors()) == 4
    assert (
        discord_wire.find("POST", f"/channels/{CHANNEL_ID}/messages")[0].json["content"] == "公告"
    )


async def test_a_wrong_token_cannot_log_in(discord_wire: DiscordServer) -> None:
    client = discord.Client(intents=discord.Intents.default())
    with pytest.raises(discord.LoginFailure):
        await client.login("not-the-token")
    await client.close()
    assert len(discord_wire.expect_errors()) == 1
    assert APP_ID
