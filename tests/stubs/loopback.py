"""The lifecycle every loopback stub shares: an aiohttp app on 127.0.0.1, on a free port.

`async with` starts the app (`_app()` builds it) and stops it at the end of the block,
whatever ended it: `close()` first lets the stub end what it holds open (`_stop_serving`:
long polls, a gateway socket), then shuts the server down.
"""

from __future__ import annotations

import abc
import asyncio
from typing import Self

from aiohttp import web

from retrieval.lifecycle import Closing


class LoopbackServer(Closing):
    """An aiohttp app on 127.0.0.1, a free port; an async context manager."""

    _runner: web.AppRunner | None = None
    port = 0

    @abc.abstractmethod
    def _app(self) -> web.Application:
        """The app: its routes and their handlers."""

    def _app_runner(self, app: web.Application) -> web.AppRunner:
        """The runner for `app` (a stub may ask for other runner options)."""
        return web.AppRunner(app, handle_signals=False)

    async def _stop_serving(self) -> None:
        """End what the stub holds open, before the server shuts down."""

    async def __aenter__(self) -> Self:
        self._runner = self._app_runner(self._app())
        try:
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
        except BaseException:
            await self.close()
            raise
        server = site._server
        assert isinstance(server, asyncio.Server)  # what a TCPSite starts
        self.port = server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        await self._stop_serving()
        if self._runner is not None:
            await self._runner.cleanup()
