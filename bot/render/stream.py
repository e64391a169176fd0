"""Helpers shared by the chat transports: throttled streaming edits and short action ids.

No SDK imports here: platform specifics (how to send, how to edit) are passed in as callables.
Flood control is not the editor's job: each platform's HTTP layer waits out its own limits
(discord.py's client; `bot.transports.telegram_flood.FloodControl` for Telegram).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from retrieval.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

SendFirst = Callable[[str], Awaitable[object]]
Edit = Callable[[str], Awaitable[object]]

TELEGRAM_EDIT_INTERVAL_S = 1.5
DISCORD_EDIT_INTERVAL_S = 1.0


class StreamingEditor:
    """Turns a stream of partial texts into one message edited at most every `min_interval_s`.

    `update` is the service's `Progress` callable: the first call sends the message
    (`send_first`), later ones edit it (`edit`) when the interval has passed and the text
    changed; texts arriving too soon are kept and delivered by a later call or by `finish`,
    which always delivers the final text (waiting out the interval).
    """

    def __init__(
        self,
        send_first: SendFirst,
        edit: Edit,
        min_interval_s: float,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._send_first = send_first
        self._edit = edit
        self._interval = min_interval_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._shown: str | None = None  # the text the message shows now
        self._last_at = float("-inf")
        self.edits = 0

    @property
    def started(self) -> bool:
        return self._shown is not None

    async def update(self, text: str) -> None:
        """A partial text. Never raises: streaming is best effort, the final text is not."""
        if not text.strip():
            return
        async with self._lock:
            if text == self._shown:
                return
            if self.started and self._clock.monotonic() - self._last_at < self._interval:
                return  # too soon: a later update or finish() delivers the newer text
            try:
                await self._deliver(text)
            except Exception:
                log.warning("streaming update failed", exc_info=True)

    async def finish(self, text: str) -> None:
        """Deliver the final text (sends it when nothing was streamed yet)."""
        async with self._lock:
            if text == self._shown:
                return
            if self.started:
                wait = self._interval - (self._clock.monotonic() - self._last_at)
                if wait > 0:
                    await self._clock.sleep(wait)
            await self._deliver(text)

    async def _deliver(self, text: str) -> None:
        if self.started:
            await self._edit(text)
            self.edits += 1
        else:
            await self._send_first(text)
        self._shown = text
        self._last_at = self._clock.monotonic()


class ActionTable:
    """Maps long button actions to short ids for platforms with small callback payloads
    (Telegram's 64-byte callback_data, Discord's 100-character custom_id). In memory, bounded:
    after a restart an unknown short id reads as an expired button."""

    PREFIX = "~"

    def __init__(self, limit_bytes: int, capacity: int = 10_000) -> None:
        self._limit = limit_bytes
        self._capacity = capacity
        self._table: OrderedDict[str, str] = OrderedDict()

    def encode(self, action: str) -> str:
        if len(action.encode()) <= self._limit and not action.startswith(self.PREFIX):
            return action
        key = self.PREFIX + hashlib.sha256(action.encode()).hexdigest()[:24]
        self._table[key] = action
        self._table.move_to_end(key)
        while len(self._table) > self._capacity:
            self._table.popitem(last=False)
        return key

    def decode(self, data: str) -> str:
        if data.startswith(self.PREFIX):
            return self._table.get(data, "")
        return data
