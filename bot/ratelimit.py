"""Per-user and per-chat sliding-window rate limits (in memory; one process owns the bot)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class RateLimiter:
    def __init__(
        self,
        per_user: int = 6,
        per_chat: int = 30,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limits = {"user": per_user, "chat": per_chat}
        self._window = window_s
        self._clock = clock
        self._hits: dict[tuple[str, str], deque[float]] = {}

    def check(self, platform: str, chat_id: str, user_id: str) -> float:
        """0 when allowed (and counted); otherwise seconds until the next call is allowed."""
        now = self._clock()
        keys = [("user", f"{platform}:{user_id}"), ("chat", f"{platform}:{chat_id}")]
        waits = []
        for scope, key in keys:
            limit = self._limits[scope]
            if limit <= 0:
                continue
            hits = self._hits.setdefault((scope, key), deque())
            while hits and now - hits[0] >= self._window:
                hits.popleft()
            if len(hits) >= limit:
                waits.append(self._window - (now - hits[0]))
        if waits:
            return max(waits)
        for scope, key in keys:
            if self._limits[scope] > 0:
                self._hits[(scope, key)].append(now)
        return 0.0
