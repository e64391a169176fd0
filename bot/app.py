"""Composition root: settings → stores and models → services → router → transports.

Dependencies are created here and passed in; services never reach for a bot object.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType

from bot.lock import DataDirLock
from bot.ratelimit import RateLimiter
from bot.router import Router
from bot.settings import Settings
from novel.service import NovelService
from retrieval.scholar import Scholar


class App:
    """Everything the process owns, opened and closed together (`async with App(settings)`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stack = AsyncExitStack()
        self.router: Router

    async def __aenter__(self) -> App:
        s = self.settings
        s.data_dir.mkdir(parents=True, exist_ok=True)
        self._stack.enter_context(DataDirLock(s.data_dir))
        limiter = RateLimiter(s.rate_limit_user_per_min, s.rate_limit_chat_per_min)
        self.router = Router(
            Scholar(), NovelService(), limiter=limiter, default_lang=s.default_language
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()
