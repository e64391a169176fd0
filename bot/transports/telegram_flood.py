"""Telegram's flood limits in one place. `FloodControl` paces every Bot API request the bot makes
and retries the ones Telegram refuses with 429. It plugs into python-telegram-bot's
`BaseRateLimiter` seam, so `Application` runs every method except getUpdates through it, and no
caller has a retry loop of its own.

The model: Telegram's published limits (core.telegram.org/bots/faq, "My bot is hitting limits"),
counted over the requests that post or change a message (send*, edit*, copy*, forward*,
stopPoll). Chat actions, callback answers and reads pass without counting.

    per chat             3 in any 3 s     about one a second, short bursts allowed
    per group / channel  20 in any 60 s   a negative chat id
    the whole bot        30 in any 1 s

Pacing: a request waits until every window it falls in has room. It counts from the moment it
is sent: while in flight as "now", once answered at the time the answer came, never earlier
than Telegram received it. So Telegram never counts more requests in a window than we did, and
a bot that keeps to this model is never refused.

Retrying: a 429 (`RetryAfter`) holds that chat for `retry_after` seconds. The request waits
this out and is sent again, up to `max_retries` times, and then the error propagates. Other
chats go on meanwhile.

All waiting is on the injected `Clock`: tests run the whole policy on a virtual clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter

from retrieval.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

_PRUNE_AT = 1024  # windows kept before idle ones are dropped


@dataclass(frozen=True, slots=True)
class Limit:
    count: int
    seconds: float


PER_CHAT = Limit(3, 3.0)
PER_GROUP = Limit(20, 60.0)
WHOLE_BOT = Limit(30, 1.0)

Callback = Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]]


def counts(endpoint: str) -> bool:
    """Whether a Bot API method posts or changes a message (what the limits count)."""
    if endpoint == "sendChatAction":
        return False
    return endpoint.startswith(("send", "edit", "copy", "forward")) or endpoint == "stopPoll"


def seconds(value: float | dt.timedelta) -> float:
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)


class _Window:
    """One sliding window: when the recent requests were answered, and how many are in flight."""

    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self.answered: deque[float] = deque()
        self.in_flight = 0

    def wait(self, now: float) -> float | None:
        """0 when one more request fits now, else the seconds until one does; None when only
        an answer to a request in flight can make room."""
        while self.answered and self.answered[0] <= now - self.limit.seconds:
            self.answered.popleft()
        over = len(self.answered) + self.in_flight - self.limit.count
        if over < 0:
            return 0.0
        if over >= len(self.answered):
            return None
        return self.answered[over] + self.limit.seconds - now

    def idle(self, now: float) -> bool:
        return self.in_flight == 0 and self.wait(now) == 0.0 and not self.answered


class FloodControl(BaseRateLimiter[int]):
    """`rate_limit_args` (an int), when a call passes it, overrides `max_retries`."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, *, max_retries: int = 2) -> None:
        self._clock = clock
        self._max_retries = max_retries
        self._windows: dict[object, _Window] = {}
        self._held: dict[object, float] = {}  # chat (or method) → held until
        self._waiters: list[asyncio.Future[None]] = []

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def process_request(
        self,
        callback: Callback,
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        chat = _chat_key(data.get("chat_id"))
        windows = self._windows_for(chat) if chat is not None and counts(endpoint) else []
        hold_key: object = chat if windows else endpoint
        retries = self._max_retries if rate_limit_args is None else rate_limit_args
        attempt = 0
        while True:
            await self._acquire(hold_key, windows)
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as exc:
                wait = seconds(exc.retry_after)
                until = self._clock.monotonic() + wait
                self._held[hold_key] = max(self._held.get(hold_key, until), until)
                if attempt >= retries:
                    raise
                log.info("telegram flood control: %s waits %.1f s (%s)", endpoint, wait, hold_key)
                attempt += 1
            finally:
                self._release(windows)

    def _windows_for(self, chat: int | str) -> list[_Window]:
        if len(self._windows) > _PRUNE_AT:
            self._prune()
        keys: list[tuple[object, Limit]] = [(("chat", chat), PER_CHAT), ("bot", WHOLE_BOT)]
        if isinstance(chat, str) or chat < 0:
            keys.append((("group", chat), PER_GROUP))
        return [self._windows.setdefault(key, _Window(limit)) for key, limit in keys]

    async def _acquire(self, hold_key: object, windows: list[_Window]) -> None:
        while True:
            now = self._clock.monotonic()
            waits = [w.wait(now) for w in windows]
            if any(w is None for w in waits):
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter
                continue
            delay = max([self._held.get(hold_key, now) - now, *(w or 0.0 for w in waits)])
            if delay <= 0:
                self._held.pop(hold_key, None)
                for window in windows:
                    window.in_flight += 1
                return
            await self._clock.sleep(delay)

    def _release(self, windows: list[_Window]) -> None:
        if not windows:
            return
        now = self._clock.monotonic()
        for window in windows:
            window.in_flight -= 1
            window.answered.append(now)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _prune(self) -> None:
        now = self._clock.monotonic()
        for key in [k for k, w in self._windows.items() if w.idle(now)]:
            del self._windows[key]
        for key in [k for k, until in self._held.items() if until <= now]:
            del self._held[key]


def _chat_key(chat_id: object) -> int | str | None:
    if chat_id is None or chat_id == "":
        return None
    try:
        return int(str(chat_id))
    except ValueError:
        return str(chat_id)  # @username: a group or channel
