"""Scheduled work on APScheduler (`retrieval.schedule`, and the writers' room's deadlines on
it, `novel.schedule`), always on virtual time:

- a job fires when the injected clock reaches it, the scheduler waiting on the clock in
  bounded steps (a wall clock that jumps is noticed at the next step);
- jobs live in APScheduler's SQLite job store: they survive a restart with nothing
  re-scheduled, and one due while the process was down runs as it starts, once;
- a daily job (the budget reset, the trash purge) runs once a day, coalesced after downtime;
- `cancel`, replacing, and `close` (stored jobs stay for the next start);
- with the system clock (the product's default) a time-travel library moves APScheduler's
  own `datetime.now()` and the scheduler is woken explicitly (`run_due`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import time_machine

from novel.schedule import Deadlines
from retrieval.clock import Clock
from retrieval.schedule import STEP_S, Scheduler


class SteppedClock:
    """Wall time that moves only when the code under test sleeps (or `at` is moved)."""

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


class Still:
    """A clock that never moves by itself (the test moves it)."""

    def __init__(self, at: datetime) -> None:
        self.at = at
        self._never = asyncio.Event()

    def now(self) -> datetime:
        return self.at

    async def sleep(self, seconds: float) -> None:
        await self._never.wait()

    def clock(self) -> Clock:
        return Clock(now=self.now, sleep=self.sleep)


async def test_a_deadline_fires_when_the_clock_reaches_it_in_bounded_steps() -> None:
    time = SteppedClock()
    deadlines = Deadlines(clock=time.clock())
    fired: list[datetime] = []
    done = asyncio.Event()

    async def job(key: str) -> None:
        fired.append(time.now())
        done.set()

    deadlines.on("round", job)
    when = time.now() + timedelta(minutes=30, seconds=5)
    deadlines.at("round:1", when)
    await done.wait()
    await deadlines.idle()
    assert fired == [when] and deadlines.pending() == []
    assert max(time.sleeps) <= STEP_S and len(time.sleeps) == 31
    await deadlines.close()


async def test_a_wall_clock_jump_is_noticed_at_the_next_step() -> None:
    time = SteppedClock()
    deadlines = Deadlines(clock=time.clock())
    fired = asyncio.Event()

    async def job(key: str) -> None:
        fired.set()

    deadlines.on("round", job)
    deadlines.at("round:1", time.now() + timedelta(hours=5))
    await asyncio.sleep(0)
    time.at += timedelta(hours=6)  # e.g. the machine was suspended
    await fired.wait()
    assert len(time.sleeps) <= 2
    await deadlines.close()


async def test_cancel_replace_and_close() -> None:
    start = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    deadlines = Deadlines(clock=Still(start).clock())
    ran: list[str] = []
    done = asyncio.Event()

    async def job(name: str) -> None:
        ran.append(name)
        done.set()

    deadlines.on("a", job)
    deadlines.on("b", job)
    deadlines.at("a:1", start + timedelta(minutes=5))
    deadlines.at("a:1", start)  # replaces the first: due at once
    deadlines.at("b:1", start + timedelta(minutes=5))
    deadlines.cancel("b:1")
    await done.wait()
    await deadlines.idle()
    assert ran == ["1"] and deadlines.pending() == []
    deadlines.at("a:2", start + timedelta(minutes=5))
    await deadlines.close()
    assert ran == ["1"]


async def test_jobs_survive_a_restart_and_one_due_meanwhile_runs_once(tmp_path: Path) -> None:
    time = Still(datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    store = tmp_path / "jobs.sqlite3"
    first = Scheduler(store, time.clock())
    ran: list[str] = []

    async def job(key: str) -> None:
        ran.append(key)

    first.on("round", job)
    first.at("round:r1", time.at + timedelta(minutes=30))
    first.at("round:r2", time.at + timedelta(hours=3))
    await first.close()  # the process stops; nothing ran
    time.at += timedelta(hours=1)  # r1's time passes while it is down

    again = Scheduler(store, time.clock())
    again.on("round", job)  # a restart registers its handlers; it schedules nothing
    assert sorted(again.pending()) == ["round:r1", "round:r2"]
    assert again.when("round:r2") == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert again.run_due() == ["round:r1"]
    await again.idle()
    assert ran == ["r1"] and again.pending() == ["round:r2"]
    await again.close()


async def test_a_daily_job_runs_once_a_day_and_once_after_downtime(tmp_path: Path) -> None:
    time = Still(datetime(2026, 11, 1, 21, 0, tzinfo=UTC))
    store = tmp_path / "jobs.sqlite3"
    ran: list[datetime] = []

    async def reset(key: str) -> None:
        ran.append(time.now())

    scheduler = Scheduler(store, time.clock())
    scheduler.on("budget", reset)
    scheduler.daily("budget:reset")
    scheduler.daily("budget:reset")  # kept as it is: one job
    assert scheduler.when("budget:reset") == datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
    time.at = datetime(2026, 11, 2, 0, 0, 30, tzinfo=UTC)
    scheduler.run_due()
    await scheduler.idle()
    assert ran == [time.at]
    assert scheduler.when("budget:reset") == datetime(2026, 11, 3, 0, 0, tzinfo=UTC)
    await scheduler.close()

    time.at = datetime(2026, 11, 6, 8, 0, tzinfo=UTC)  # down for three midnights
    again = Scheduler(store, time.clock())
    again.on("budget", reset)
    again.daily("budget:reset")
    again.run_due()
    await again.idle()
    assert ran[1:] == [time.at]  # once, not three times
    assert again.when("budget:reset") == datetime(2026, 11, 7, 0, 0, tzinfo=UTC)
    await again.close()


async def test_on_the_system_clock_a_time_machine_moves_it(tmp_path: Path) -> None:
    """The product's default clock is the system's: APScheduler's own reading of the time
    follows a time-travel library, and the scheduler is woken at once."""
    with time_machine.travel(datetime(2026, 11, 1, 9, 0, tzinfo=UTC), tick=False) as traveller:
        scheduler = Scheduler(tmp_path / "jobs.sqlite3")
        ran: list[str] = []

        async def job(key: str) -> None:
            ran.append(key)

        scheduler.on("purge", job)
        scheduler.daily("purge:trash", hour=3)
        assert scheduler.run_due() == [] and ran == []
        traveller.shift(timedelta(hours=18, minutes=1))
        assert scheduler.run_due() == ["purge:trash"]
        await scheduler.idle()
        assert ran == ["trash"]
        assert scheduler.when("purge:trash") == datetime(2026, 11, 3, 3, 0, tzinfo=UTC)
        await scheduler.close()
