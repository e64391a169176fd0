"""How many embedding requests may be in flight at once, and when the next one may start.

A remote embedder sends several batches at once (`EMBEDDING_CONCURRENCY`): while one answer
travels back the server already works on the next batches. A server that answers 429 is met,
not hammered:

- `throttled(wait)`: nobody starts a request for `wait` seconds (its `retry-after`), and the
  number allowed in flight halves (at least one);
- `succeeded()`: after as many successes in a row as are now allowed, one more is allowed, up
  to the configured ceiling (additive increase, multiplicative decrease, as TCP does).

The window reads and waits on an injected clock, so tests run on virtual time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from retrieval.clock import SYSTEM_CLOCK, Clock


class RequestWindow:
    def __init__(self, ceiling: int, clock: Clock = SYSTEM_CLOCK) -> None:
        if ceiling < 1:
            raise ValueError(f"at least one request must be allowed in flight, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling  # allowed in flight now: 1..ceiling
        self.in_flight = 0
        self.peak = 0  # the most ever in flight at once
        self.resume_at = float("-inf")  # no request starts before this (clock.monotonic)
        self._streak = 0
        self._clock = clock
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the places in flight for the block; starts once a place is free and any
        pause a 429 asked for is over."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            while (wait := self.resume_at - self._clock.monotonic()) > 0:
                await self._clock.sleep(wait)
            yield
        finally:
            async with self._changed:
                self.in_flight -= 1
                self._changed.notify_all()

    def throttled(self, wait: float) -> None:
        """The server said 429 and to wait `wait` seconds."""
        self.resume_at = max(self.resume_at, self._clock.monotonic() + max(0.0, wait))
        self.limit = max(1, self.limit // 2)
        self._streak = 0

    def succeeded(self) -> None:
        if self.limit >= self.ceiling:
            return
        self._streak += 1
        if self._streak >= self.limit:
            self.limit += 1
            self._streak = 0
