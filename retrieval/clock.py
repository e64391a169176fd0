"""Time, as the process reads it and waits on it: created once in the composition root and
injected into everything that throttles or keeps a deadline (the rate limiter, the streaming and
ballot editors, the round deadlines).

Production runs on the system clocks. A test harness passes a virtual clock (SimCord's), so every
throttle and deadline follows simulated time and no test waits in real time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Clock:
    # Wall time, aware UTC: round deadlines and timestamps.
    now: Callable[[], datetime] = utcnow
    # Seconds on a clock that never goes back: intervals (edit throttles, rate-limit windows).
    monotonic: Callable[[], float] = time.monotonic
    # Wait this many seconds of this clock's time.
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep


SYSTEM_CLOCK = Clock()
