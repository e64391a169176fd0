"""Round deadlines as apscheduler jobs (AsyncIOScheduler + DateTrigger).

The job store is in memory on purpose: every deadline lives in SQLite, and the service
re-schedules the open rounds on start-up. A deadline already past fires at once. Each job only
spawns a tracked task, so `close()` can cancel work still running and nothing outlives the
service.

Deadlines are kept by the service clock: apscheduler wakes the job after the real delay the
clock gives, and `run_due()` runs every job whose time has come by the clock at once (a test
moves an injected clock forward and calls it; nothing waits on wall time).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Deadlines:
    def __init__(self, clock: Clock = utcnow) -> None:
        self._clock = clock
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._tasks: set[asyncio.Task[None]] = set()
        self._due: dict[str, tuple[datetime, Callable[[], Awaitable[None]]]] = {}

    def start(self) -> None:
        self._scheduler.start()

    def at(self, key: str, when: datetime, fn: Callable[[], Awaitable[None]]) -> None:
        """Run `fn` at `when` (by the service clock); replaces an earlier job with the same key."""
        delay = max((when - self._clock()).total_seconds(), 0.0)
        run_date = datetime.now(UTC) + timedelta(seconds=delay)
        self._due[key] = (when, fn)

        async def job() -> None:
            if self._due.get(key, (None, None))[1] is fn:
                del self._due[key]
                self._spawn(key, fn)

        self._scheduler.add_job(
            job,
            DateTrigger(run_date=run_date, timezone=UTC),
            id=key,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
        )

    def _spawn(self, key: str, fn: Callable[[], Awaitable[None]]) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(key, fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self, key: str) -> None:
        self._due.pop(key, None)
        if self._scheduler.get_job(key) is not None:
            self._scheduler.remove_job(key)

    def run_due(self) -> list[str]:
        """Start every job whose time has come by the clock; returns their keys."""
        now = self._clock()
        due = [key for key, (when, _) in self._due.items() if when <= now]
        for key in due:
            _, fn = self._due.pop(key)
            if self._scheduler.get_job(key) is not None:
                self._scheduler.remove_job(key)
            self._spawn(key, fn)
        return due

    def when(self, key: str) -> datetime | None:
        found = self._due.get(key)
        return found[0] if found else None

    def pending(self) -> list[str]:
        return list(self._due)

    async def idle(self) -> None:
        """Wait until every spawned deadline task has finished (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        self._due.clear()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @staticmethod
    async def _guarded(key: str, fn: Callable[[], Awaitable[None]]) -> None:
        try:
            await fn()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("deadline job %s failed", key)
