"""Round deadlines as apscheduler jobs (AsyncIOScheduler + DateTrigger).

The job store is in memory on purpose: every deadline lives in SQLite, and the service
re-schedules the open rounds on start-up. A deadline already past fires at once. Each job only
spawns a tracked task, so `close()` can cancel work still running and nothing outlives the
service.
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

    def start(self) -> None:
        self._scheduler.start()

    def at(self, key: str, when: datetime, fn: Callable[[], Awaitable[None]]) -> None:
        """Run `fn` at `when` (by the service clock); replaces an earlier job with the same key."""
        delay = max((when - self._clock()).total_seconds(), 0.0)
        run_date = datetime.now(UTC) + timedelta(seconds=delay)

        async def job() -> None:
            task = asyncio.get_running_loop().create_task(self._guarded(key, fn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self._scheduler.add_job(
            job,
            DateTrigger(run_date=run_date, timezone=UTC),
            id=key,
            replace_existing=True,
            misfire_grace_time=None,
            coalesce=True,
        )

    def cancel(self, key: str) -> None:
        if self._scheduler.get_job(key) is not None:
            self._scheduler.remove_job(key)

    def pending(self) -> list[str]:
        return [job.id for job in self._scheduler.get_jobs()]

    async def idle(self) -> None:
        """Wait until every spawned deadline task has finished (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
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
