"""`baibao run`: both chat transports in one asyncio process, started from settings alone (their
HTTP clients talk to loopback stand-ins for Discord and the Telegram Bot API), and a clean stop
on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.app import App
from bot.cli import _run
from bot.settings import load_settings
from retrieval.fakes import HashEmbedder
from tests.stubs.discord_stub import DiscordStub


class BotApiServer:
    """The few Bot API methods a polling bot calls, over real HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> BotApiServer:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._method)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _method(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        self.methods.append(method)
        result: Any = True
        if method == "getMe":
            result = {
                "id": 99,
                "is_bot": True,
                "first_name": "百宝箱",
                "username": "baibao_bot",
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        elif method == "getUpdates":
            await asyncio.sleep(0.2)  # a short long-poll
            result = []
        return web.Response(
            body=json.dumps({"ok": True, "result": result}), content_type="application/json"
        )


async def test_run_serves_discord_and_telegram_together_and_stops_on_sigterm(
    tmp_path: Path, discord_stub: DiscordStub
) -> None:
    async with BotApiServer() as telegram:
        settings = load_settings(
            data_dir=tmp_path / "data",
            discord_token="stub-token",
            telegram_token="123:TEST",
            telegram_api_base=f"http://127.0.0.1:{telegram.port}/bot",
        )
        async with App(settings, embedder=HashEmbedder(64), llm=None) as app:
            running = asyncio.create_task(_run(app, settings))
            for _ in range(500):  # both connected: commands synced and polling started
                if "getUpdates" in telegram.methods and any(
                    f.get("op") == 2 for f in discord_stub.gateway_frames
                ):
                    break
                await asyncio.sleep(0.02)
            assert "setMyCommands" in telegram.methods and "getUpdates" in telegram.methods
            assert discord_stub.find("PUT", "/commands")
            os.kill(os.getpid(), signal.SIGTERM)
            assert await asyncio.wait_for(running, timeout=30) == 0
            polls = telegram.methods.count("getUpdates")
            await asyncio.sleep(0.5)
            assert telegram.methods.count("getUpdates") == polls  # polling really stopped
