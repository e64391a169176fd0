"""Round deadlines wait on the injected clock: they fire when its time has come, notice a wall
clock that jumps, and `cancel` / `close` stop what is waiting."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from novel.schedule import STEP_S, Deadlines
from retrieval.clock import Clock


class SteppedClock:
    """Wall time that moves only when the code under test sleeps (or `jump` is called)."""

    def __init__(self) -> None:
        self.at = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.at += timedelta(seconds=seconds)
        await asyncio.sleep(0)

    def clock(self) -> Clock:
        return Clock(now=self.now, sleep=self.sleep)


async def test_a_deadline_fires_when_the_clock_reaches_it_in_bounded_steps() -> None:
    time = SteppedClock()
    deadlines = Deadlines(time.clock())
    fired: list[datetime] = []
    done = asyncio.Event()

    async def job() -> None:
        fired.append(time.now())
        done.set()

    when = time.now() + timedelta(minutes=30, seconds=5)
    deadlines.at("round:1", when, job)
    await done.wait()
    await deadlines.idle()
    assert fired == [when] and deadlines.pending() == []
    assert max(time.sleeps) <= STEP_S and len(time.sleeps) == 31


async def test_a_wall_clock_jump_is_noticed_at_the_next_step() -> None:
    time = SteppedClock()
    deadlines = Deadlines(time.clock())
    fired = asyncio.Event()

    async def job() -> None:
        fired.set()

    deadlines.at("round:1", time.now() + timedelta(hours=5), job)
    time.at += timedelta(hours=6)  # e.g. the machine was suspended
    await fired.wait()
    assert len(time.sleeps) <= 1


async def test_cancel_replace_and_close() -> None:
    never = asyncio.Event()

    async def wait_forever(seconds: float) -> None:
        await never.wait()

    start = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    deadlines = Deadlines(Clock(now=lambda: start, sleep=wait_forever))
    ran: list[str] = []
    done = asyncio.Event()

    async def job(name: str) -> None:
        ran.append(name)
        done.set()

    deadlines.at("a", start + timedelta(minutes=5), lambda: job("a"))
    deadlines.at("a", start, lambda: job("a2"))  # replaces the first: due at once
    deadlines.at("b", start + timedelta(minutes=5), lambda: job("b"))
    deadlines.cancel("b")
    await done.wait()
    await deadlines.idle()
    assert ran == ["a2"] and deadlines.pending() == []
    deadlines.at("c", start + timedelta(minutes=5), lambda: job("c"))
    await deadlines.close()
    assert deadlines.pending() == [] and ran == ["a2"]
