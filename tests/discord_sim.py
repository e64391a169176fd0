"""Discord end to end through SimCord (PyPI `simcord`, MIT): an in-memory Discord that runs
discord.py's own machinery (gateway event parsers, cache, the app-command tree and its sync,
views and dynamic items, the webhook adapter) and keeps Discord's rules: permissions, the
interaction lifecycle (40060 on a second acknowledgement, 10062 after the 3-second window,
tokens that expire after 15 minutes), content, component and custom_id limits, ephemeral
visibility. The bot under test is `DiscordTransport`'s own client, unmodified.

Time is SimCord's virtual clock. `VirtualTime.clock()` is the product's `retrieval.clock.Clock`
for `App` and the transport: the rate limiter, the streaming editor, the ballot editor and the
round deadlines all read it and sleep on it, so a throttled edit or a deadline waits until the
test moves time (`await server.env.advance_time(s)`); no test waits in real time.

What SimCord cannot do (and the loopback stub, `tests/stubs/discord_server.py`, still does) is
listed in the stub's docstring.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import discord
import simcord

from bot.app import App
from bot.settings import Settings, load_settings
from bot.transports.discord import DiscordTransport
from retrieval.clock import Clock
from retrieval.fakes import HashEmbedder
from retrieval.ports import LLM

DIM = 64
TOKEN = "simcord"  # SimCord logs the client in itself; the transport only needs one set
NOVEL_ROLE = "小说管理员"  # NOVEL_ADMIN_ROLE in `app_settings`
SETTLE_S = 60.0  # how long SimCord lets real work (retrieval, the store's child) settle
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # SimCord's clock starts here


class VirtualTime:
    """SimCord's clock as the product reads it. Bound to the environment once it runs; the
    App is built before that and reads the epoch meanwhile."""

    def __init__(self) -> None:
        self.env: simcord.Env | None = None

    def clock(self) -> Clock:
        return Clock(now=self.now, monotonic=self.monotonic, sleep=self.sleep)

    def now(self) -> datetime:
        return self.env.now() if self.env is not None else EPOCH

    def monotonic(self) -> float:
        return (self.now() - EPOCH).total_seconds()

    async def sleep(self, seconds: float) -> None:
        """A declared wait on virtual time: only `env.advance_time` ends it, and SimCord
        settles around it (the action returns; the test decides when time moves)."""
        if self.env is None:
            raise RuntimeError("the virtual clock runs only inside SimCord")
        await self.env.external_wait(asyncio.sleep(seconds), reason="the bot's clock")

    def elapse(self, seconds: float) -> None:
        """Time passes while the bot waits on something outside Discord (a model's answer).
        SimCord's public `advance_time` cannot run while an interaction is being handled, so
        this moves its backend clock, the one its 3-second acknowledgement window reads."""
        assert self.env is not None
        self.env.backend.advance_clock(seconds)


@dataclass
class Server:
    """One Discord server in SimCord: a text channel, a role with Manage Server and one named
    `NOVEL_ROLE`, and people to act as."""

    env: simcord.Env
    time: VirtualTime
    guild: simcord.GuildHandle
    channel: simcord.ChannelHandle
    mods: simcord.RoleHandle
    editors: simcord.RoleHandle

    @classmethod
    def open(cls, env: simcord.Env, time: VirtualTime) -> Server:
        guild = env.create_guild("读经小组")
        channel = guild.create_text_channel("读经")
        mods = guild.create_role("版主", permissions=discord.Permissions(manage_guild=True))
        editors = guild.create_role(NOVEL_ROLE)
        return cls(env, time, guild, channel, mods, editors)

    def member(self, name: str, *roles: simcord.RoleHandle) -> simcord.MemberActor:
        return self.guild.add_member(self.env.create_user(name), roles=list(roles))

    def said(self) -> list[str]:
        """What the channel shows now, oldest first (edits applied)."""
        return [m.content for m in self.channel.history()]

    def requests(self, method: str, fragment: str) -> list[Any]:
        """The REST requests the bot made (`method`, path containing `fragment`), in order."""
        return [r for r in self.env.http_requests if r.method == method and fragment in r.path]


def message_text(messages: Iterable[simcord.ResponseMessage | None]) -> str:
    return "\n".join(m.content for m in messages if m is not None)


def answer_text(result: simcord.InteractionResult) -> str:
    """Everything an interaction got back: the response, then its follow-ups."""
    return message_text([result.response, *result.followups])


def buttons(message: simcord.ResponseMessage | discord.Message) -> list[dict[str, Any]]:
    rows = message.components
    found: list[dict[str, Any]] = []
    for row in rows:
        row_dict = row if isinstance(row, dict) else row.to_dict()
        found.extend(row_dict.get("components", []))
    return found


def app_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "demo_bible_books": "Eph",
        "discord_token": TOKEN,
        "novel_admin_role": NOVEL_ROLE,
        "rate_limit_user_per_min": 0,
        "rate_limit_chat_per_min": 0,
    }
    return load_settings(**{**values, **overrides})


@asynccontextmanager
async def simulated(transport: DiscordTransport, time: VirtualTime) -> AsyncIterator[Server]:
    """`transport`'s client in SimCord, with one server set up."""
    # An AutoShardedClient left to Discord's recommended count runs one shard here.
    shards = None if transport.client.shard_count is not None else 1
    async with simcord.run(transport.client, settle_timeout=SETTLE_S, shard_count=shards) as env:
        time.env = env
        try:
            yield Server.open(env, time)
        finally:
            time.env = None


@asynccontextmanager
async def discord_app(
    settings: Settings, *, llm: LLM | None = None, use_settings_llm: bool = False
) -> AsyncIterator[tuple[App, Server]]:
    """The whole product (`App`: Qdrant Edge, SQLite, BM25, the graph, plot memory; the hash
    embedder) behind `DiscordTransport` in SimCord, on one virtual clock. The model is `llm`,
    or the one the settings name (`use_settings_llm`, e.g. the loopback model server)."""
    time = VirtualTime()
    model: dict[str, Any] = {} if use_settings_llm else {"llm": llm}
    async with App(settings, embedder=HashEmbedder(DIM), clock=time.clock(), **model) as app:
        transport = DiscordTransport(app.router, settings, clock=time.clock())
        async with simulated(transport, time) as server:
            yield app, server
