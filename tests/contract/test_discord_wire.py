"""The loopback Discord (`tests/stubs/discord_server.py`) against discord.py's own HTTP and
gateway code: interactions arrive over the gateway websocket, and REST requests Discord would
refuse are refused with Discord's error bodies."""

from __future__ import annotations

import asyncio
import json
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
    command_errors,
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


# ---- fail closed: what Discord refuses, and the stub's own failures ------------------------


async def test_an_acknowledgement_after_three_seconds_is_10062(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    interaction = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    discord_wire.clock.elapse(3)  # the work took three seconds before the acknowledgement
    with pytest.raises(discord.NotFound) as info:
        await interaction.response.defer()
    assert info.value.code == 10062
    in_time = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    discord_wire.clock.elapse(2.9)
    await in_time.response.defer(thinking=True)
    discord_wire.clock.elapse(15 * 60)  # the token lives 15 minutes
    with pytest.raises(discord.HTTPException) as late:
        await in_time.followup.send("太晚了")
    assert late.value.code == 50027
    assert [c.error["code"] for c in discord_wire.expect_errors()] == [10062, 50027]


async def test_the_first_followup_answers_the_thinking_message(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    """After a public deferral the first followup edits the loading message and stays public,
    whatever its own flags; once that message is deleted unanswered, nothing may follow."""
    _, seen = client
    interaction = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    await interaction.response.defer(thinking=True)
    original = await interaction.original_response()
    answer = await interaction.followup.send("答案", ephemeral=True, wait=True)
    assert answer.id == original.id and not answer.flags.ephemeral
    second = await interaction.followup.send("补充", ephemeral=True, wait=True)
    assert second.id != original.id and second.flags.ephemeral
    deleted = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    await deleted.response.defer(thinking=True)
    await deleted.delete_original_response()
    with pytest.raises(discord.NotFound) as info:
        await deleted.followup.send("没人看得到", ephemeral=True)
    assert info.value.code == 10008
    assert len(discord_wire.expect_errors()) == 1


async def test_a_custom_id_used_twice_in_a_message_is_50035(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    _, seen = client
    interaction = await _one(discord_wire, seen, slash("ask", {"question": "q"}))
    await interaction.response.defer()
    view = discord.ui.View()
    view.add_item(discord.ui.Button(label="一", custom_id="vote:r1:1"))
    view.add_item(discord.ui.Button(label="二", custom_id="vote:r1:1"))
    with pytest.raises(discord.HTTPException) as info:
        await interaction.followup.send("投票", view=view)
    assert info.value.code == 50035 and "COMPONENT_CUSTOM_ID_DUPLICATED" in str(
        discord_wire.expect_errors()[0].error
    )


@pytest.mark.parametrize(
    ("commands", "code"),
    [
        ([{"name": "Ask", "description": "问", "type": 1}], "APPLICATION_COMMAND_INVALID_NAME"),
        ([{"name": "ask me", "description": "问", "type": 1}], "APPLICATION_COMMAND_INVALID_NAME"),
        ([{"name": "ask", "description": "", "type": 1}], "BASE_TYPE_BAD_LENGTH"),
        (
            [
                {
                    "name": "ask",
                    "description": "问",
                    "type": 1,
                    "options": [
                        {"name": "book", "description": "书", "type": 3, "required": False},
                        {"name": "question", "description": "问题", "type": 3, "required": True},
                    ],
                }
            ],
            "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
        ),
        (
            [{"name": "ask", "description": "问", "type": 1}] * 2,
            "APPLICATION_COMMANDS_DUPLICATE_NAME",
        ),
    ],
)
async def test_command_registrations_discord_refuses_are_50035(
    discord_wire: DiscordServer,
    client: tuple[discord.Client, Seen],
    commands: list[dict[str, object]],
    code: str,
) -> None:
    bot, _ = client
    with pytest.raises(discord.HTTPException) as info:
        await bot.http.bulk_upsert_global_commands(int(APP_ID), payload=commands)
    assert info.value.code == 50035
    [refused] = discord_wire.expect_errors()
    assert code in json.dumps(refused.error)


async def test_the_products_commands_register_as_discord_requires() -> None:
    """Every command the registry builds, as discord.py sends it, passes Discord's rules."""
    from bot.settings import load_settings
    from bot.transports.discord import DiscordTransport
    from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router

    transport = DiscordTransport(
        fake_router(RecordingScholar(), RecordingNovels()), load_settings(discord_token="x")
    )
    payload = [c.to_dict(transport.tree) for c in transport.tree.get_commands()]
    assert len(payload) >= 7 and command_errors(payload) == {}
    await transport.stop()  # never started: nothing to close


async def test_a_request_the_stub_cannot_handle_is_refused_and_recorded(
    discord_wire: DiscordServer, client: tuple[discord.Client, Seen]
) -> None:
    async with aiohttp.ClientSession() as http:
        url = f"{discord_wire.api}/channels/{CHANNEL_ID}/messages"
        headers = {"Authorization": f"Bot {discord_wire.token}"}
        async with http.post(url, json=["not", "an", "object"], headers=headers) as answer:
            assert answer.status == 500
    [crash] = discord_wire.expect_errors()
    assert crash.status == 500 and "the stub failed" in crash.error["message"]


def test_a_stub_failure_fails_its_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import aiohttp

        async def test_the_stub_breaks(discord_wire):
            url = f"{discord_wire.api}/channels/700000000000000001/messages"
            headers = {"Authorization": f"Bot {discord_wire.token}"}
            async with aiohttp.ClientSession() as http:
                async with http.post(url, json=[1], headers=headers) as answer:
                    assert answer.status == 500  # the test itself does not look
        """
    )
    result = pytester.runpytest_inprocess(
        "-p",
        "tests.stubs.fixtures",
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*Discord refused requests*the stub failed*"])
