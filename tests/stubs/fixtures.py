"""Fixtures for tests on the real wire (a pytest plugin, loaded by `tests/conftest.py`).

- `telegram_wire`: a `TelegramServer` (loopback Bot API). Build the transport with
  `telegram_settings(server)` and `clock=server.clock`: PTB's own `HTTPXRequest` reaches it
  through `TELEGRAM_API_BASE`; updates arrive by `getUpdates` long polling
  (`server.push_command(...)`); flood-control waits and throttles run on the virtual clock.
- `discord_wire`: a `DiscordServer` (loopback REST + gateway websocket). `discord.py` is pointed
  at it (`Route.BASE`, the gateway URL); interactions arrive as gateway `INTERACTION_CREATE`
  dispatches (`await server.interact(slash(...))`).
- `llm_wire`: the loopback model server (`LLMStubServer`, Anthropic + OpenAI wire formats);
  `llm_settings(server, "anthropic" | "openai")` configures the real SDK adapters for it.

After each test the fixtures assert that the client made no request the server refused
(`server.errors()`), unless the test took them with `server.expect_errors()`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.stubs.discord_server import DiscordServer
from tests.stubs.llm_server import LLMStubServer
from tests.stubs.telegram_server import TelegramServer


def telegram_settings(server: TelegramServer, **overrides: Any) -> Any:
    """`Settings` for a Telegram transport talking to `server` (and nothing else)."""
    from bot.settings import load_settings

    values: dict[str, Any] = {
        "telegram_token": server.token,
        "telegram_api_base": server.api_base,
        "rate_limit_user_per_min": 0,
        "rate_limit_chat_per_min": 0,
    }
    return load_settings(**{**values, **overrides})


def discord_settings(server: DiscordServer, **overrides: Any) -> Any:
    """`Settings` for a Discord transport talking to `server`."""
    from bot.settings import load_settings

    values: dict[str, Any] = {
        "discord_token": server.token,
        "rate_limit_user_per_min": 0,
        "rate_limit_chat_per_min": 0,
    }
    return load_settings(**{**values, **overrides})


def llm_settings(server: LLMStubServer, provider: str) -> dict[str, Any]:
    """Settings values that make `App` build the real SDK adapter for `provider` against
    `server` (merge them into the test's other settings)."""
    if provider == "anthropic":
        return {
            "llm_provider": "anthropic",
            "anthropic_api_key": "sk-ant-test",
            "llm_base_url": server.url,
        }
    return {
        "llm_provider": "openai",
        "openai_api_key": "sk-test",
        "llm_base_url": server.openai_url,
    }


@pytest.fixture
async def telegram_wire() -> AsyncIterator[TelegramServer]:
    """A `TelegramServer` on its own virtual clock (`server.clock`: pass it to the transport).
    Fails the test on any request the server refused and the test did not expect, and on any
    exception inside the server."""
    async with TelegramServer() as server:
        yield server
        assert_clean(server)


def assert_clean(server: TelegramServer) -> None:
    """What the `telegram_wire` fixture asserts after each test."""
    refused = [c for c in server.errors() if not c.expected]
    crashes = "".join(c.crash for c in refused)
    assert not refused, f"the Bot API refused requests: {refused}\n{crashes}"


@pytest.fixture
async def discord_wire(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DiscordServer]:
    import discord
    import yarl
    from discord.gateway import DiscordWebSocket

    async with DiscordServer() as server:
        monkeypatch.setattr(discord.http.Route, "BASE", server.api)
        monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(server.gateway))
        yield server
        refused = [c for c in server.errors() if not c.expected]
        assert not refused, (
            f"Discord refused requests: {[(c.method, c.path, c.error) for c in refused]}"
        )


@pytest.fixture
async def llm_wire() -> AsyncIterator[LLMStubServer]:
    async with LLMStubServer() as server:
        yield server


def telegram_transport(router: Any, server: TelegramServer, **overrides: Any) -> Any:
    """The real Telegram transport for `router`, talking to `server` on its clock: edits
    unthrottled and updates handled one at a time, so a test reads them in order."""
    from bot.transports.telegram import TelegramTransport

    return TelegramTransport(
        router,
        telegram_settings(server, **overrides),
        edit_interval_s=0.0,
        concurrent_updates=1,
        clock=server.clock,
    )
