"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import discord
import pytest
import yarl
from discord.gateway import DiscordWebSocket

from tests.stubs.discord_stub import DiscordStub


@pytest.fixture
async def discord_stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DiscordStub]:
    """A loopback Discord (REST + gateway) that discord.py's own HTTP code talks to."""
    stub = DiscordStub()
    await stub.start()
    monkeypatch.setattr(discord.http.Route, "BASE", stub.api)
    monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(stub.gateway))
    try:
        yield stub
    finally:
        await stub.stop()
