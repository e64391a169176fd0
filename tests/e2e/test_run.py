"""`baibao run`: both chat transports in one asyncio process, started from settings alone (their
HTTP clients talk to the loopback Discord and Telegram Bot API over the real wire), and a clean
stop on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from bot.app import App
from bot.cli import _run
from retrieval.fakes import HashEmbedder
from tests.stubs.discord_server import DiscordServer
from tests.stubs.fixtures import discord_settings, telegram_settings
from tests.stubs.telegram_server import TelegramServer


async def test_run_serves_discord_and_telegram_together_and_stops_on_sigterm(
    tmp_path: Path, discord_wire: DiscordServer, telegram_wire: TelegramServer
) -> None:
    settings = telegram_settings(
        telegram_wire,
        data_dir=tmp_path / "data",
        discord_token=discord_settings(discord_wire).discord_token,
    )
    async with App(settings, embedder=HashEmbedder(64), llm=None) as app:
        running = asyncio.create_task(_run(app, settings))
        # both connected: commands synced, the gateway identified, a long poll held open
        await telegram_wire.wait_until(lambda: telegram_wire.waiting_polls == 1)
        await discord_wire.identified.wait()
        assert telegram_wire.named("setMyCommands") and discord_wire.find("PUT", "/commands")
        telegram_wire.push_command("/help")  # and it answers
        await telegram_wire.wait_for("sendMessage")
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(60):  # a hang guard, not a time limit under test
            assert await running == 0
        assert telegram_wire.waiting_polls == 0  # polling really stopped: no poll held open
