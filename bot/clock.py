"""The clock the transports wait on: monotonic seconds and a way to sleep them.

Production runs on `SYSTEM_CLOCK`. Tests pass a virtual clock (the same object the loopback
servers read), so throttles, flood-control waits and retries run at full speed and no test
waits in real time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` have passed on this clock."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()
