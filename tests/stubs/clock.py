"""A virtual clock for tests on the wire: the loopback servers read it, and the transport under
test waits on it (its flood-control pacing, `retry_after` waits and edit throttle), so no test
waits in real time."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Protocol

from retrieval.clock import SYSTEM_CLOCK, Clock

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class ServerTime(Protocol):
    """What a loopback server reads (`now`), and the product's `Clock` on the same time."""

    def now(self) -> float: ...

    def as_clock(self) -> Clock: ...


class SystemTime:
    """Real time, for a benchmark (never a test)."""

    def now(self) -> float:
        return time.monotonic()

    def as_clock(self) -> Clock:
        return SYSTEM_CLOCK


class VirtualClock:
    """Seconds that pass only when someone sleeps: `sleep(s)` moves the clock `s` ahead and
    yields once. Concurrent sleeps add up, so time may run further than any one sleeper asked
    for, never less: a throttle or a flood window only sees more time pass. A test moves the
    clock itself with `advance(s)`."""

    def __init__(self, start: float = 1_000.0) -> None:
        self._now = start
        self.slept: list[float] = []  # every sleep asked for, in order

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self._now += max(0.0, seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def as_clock(self) -> Clock:
        """The product's `Clock` on this time (wall time counts from `EPOCH`)."""
        return Clock(
            now=lambda: EPOCH + dt.timedelta(seconds=self._now),
            monotonic=self.now,
            sleep=self.sleep,
        )
