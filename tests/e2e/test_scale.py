"""docs/SCALE.md's claims that one machine can check: Discord servers pinned to shards (the
client is an `AutoShardedClient` with its shard count and ids from the settings; SimCord routes
every event to its guild's shard as Discord does), and one process per data directory."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import discord
import pytest
import simcord
from simcord import InteractionResult

from bot.cli import main
from bot.lock import DataDirBusy, DataDirLock
from bot.ratelimit import RateLimiter
from bot.settings import SettingsError, load_settings
from bot.transports.discord import DiscordTransport
from retrieval.requests import AskRequest
from tests.discord_sim import Server, VirtualTime, answer_text, app_settings, simulated
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router


def test_the_client_shards_as_the_settings_say() -> None:
    router = fake_router(RecordingScholar(), RecordingNovels())
    default = DiscordTransport(router, load_settings(discord_token="x")).client
    assert isinstance(default, discord.AutoShardedClient)
    assert default.shard_count is None and default.shard_ids is None  # Discord recommends
    sliced = DiscordTransport(
        router, load_settings(discord_token="x", discord_shard_count=4, discord_shard_ids="1, 3")
    ).client
    assert isinstance(sliced, discord.AutoShardedClient)
    assert sliced.shard_count == 4 and sliced.shard_ids == [1, 3]


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"discord_shard_ids": "1"}, "DISCORD_SHARD_COUNT"),
        ({"discord_shard_count": 2, "discord_shard_ids": "2"}, "between 0 and 1"),
        ({"discord_shard_count": 2, "discord_shard_ids": "1,1"}, "twice"),
        ({"discord_shard_count": 2, "discord_shard_ids": "一"}, "comma-separated"),
        ({"discord_shard_count": 0}, "DISCORD_SHARD_COUNT"),
    ],
)
def test_a_malformed_shard_setting_is_one_clear_line(
    values: dict[str, object], needle: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings(discord_token="x", **values)
    said = str(refused.value)
    assert needle in said and "\n" not in said and "DISCORD_SHARD" in said


@asynccontextmanager
async def two_shards(
    tmp_path: Path, ids: str
) -> AsyncIterator[tuple[DiscordTransport, Server, RecordingScholar]]:
    """A process running shards `ids` of 2, in SimCord."""
    scholar = RecordingScholar()
    router = fake_router(scholar, RecordingNovels(), limiter=RateLimiter(0, 0))
    time = VirtualTime()
    settings = app_settings(tmp_path / "data", discord_shard_count=2, discord_shard_ids=ids)
    transport = DiscordTransport(router, settings, clock=time.clock())
    async with simulated(transport, time) as server:
        yield transport, server, scholar


async def ask_in(server: Server, guild: simcord.GuildHandle, question: str) -> InteractionResult:
    """A member of `guild` asks in a channel of it."""
    channel = guild.create_text_channel("读经")
    member = guild.add_member(server.env.create_user(f"member-{question}"))
    return await member.slash(channel, "ask", question=question)


async def test_one_process_runs_every_shard_it_is_given(tmp_path: Path) -> None:
    async with two_shards(tmp_path, "0,1") as (transport, server, scholar):
        asked = []
        for shard, question in ((0, "经纶"), (1, "分赐")):
            guild = server.env.create_guild(f"第{shard}片", shard_id=shard)
            asked.append(await ask_in(server, guild, question))
            served = transport.client.get_guild(guild.id)
            assert served is not None and served.shard_id == shard
    assert all(a.acknowledged and answer_text(a) == "answer" for a in asked)
    assert scholar.requests == [AskRequest("经纶"), AskRequest("分赐")]


async def test_a_process_answers_only_the_servers_of_its_shards(tmp_path: Path) -> None:
    """Shard 1 of 2: its server is answered; shard 0's server sends this process nothing,
    not even the interaction (another process, running shard 0, answers there)."""
    async with two_shards(tmp_path, "1") as (transport, server, scholar):
        ours = server.env.create_guild("第1片", shard_id=1)
        theirs = server.env.create_guild("第0片", shard_id=0)
        answered = await ask_in(server, ours, "经纶")
        unheard = await ask_in(server, theirs, "分赐")
        assert transport.client.get_guild(ours.id) is not None
        assert transport.client.get_guild(theirs.id) is None  # never told of it
    assert answered.acknowledged and answer_text(answered) == "answer"
    assert not unheard.acknowledged
    assert scholar.requests == [AskRequest("经纶")]


def test_a_second_process_on_one_data_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bot/lock.py`: the holder's PID named; `baibao` exits 3 before opening anything."""
    data = tmp_path / "data"
    with DataDirLock(data):
        with pytest.raises(DataDirBusy, match=f"PID {os.getpid()}"):
            DataDirLock(data).acquire()
        monkeypatch.setenv("DATA_DIR", str(data))
        monkeypatch.setenv("SAMPLE_CORPUS", "false")
        assert main(["chat"]) == 3
    said = capsys.readouterr().err
    assert f"PID {os.getpid()}" in said and "another baibao process" in said
    assert sorted(p.name for p in data.iterdir()) == ["baibao.lock"]  # nothing else opened
